# syntax=docker/dockerfile:1
# The servlet's container image: `servlet run` as an unprivileged user on a slim Python base.
#
# Stage one builds the package's wheel with `python -m build`, and wheels of its dependencies
# pinned by constraints.txt; stage two installs them without any build tools or network access,
# so the final image holds only the runtime.
#
#   docker build -t kdp-servlet:0.1.0 .
#
# The Helm chart runs it with a read-only root filesystem as user 65532 and passes the flags of
# `servlet run` as args (the image's default command is plain `run`).

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# Only what the wheel is built from (see .dockerignore): no tests, charts or docs.
COPY pyproject.toml README.md LICENSE constraints.txt ./
COPY core ./core
COPY adapters ./adapters
COPY app ./app
# The wheel `python -m build` makes, as released, and every dependency at the version of
# constraints.txt: the image is reproducible, and runs what CI tested.
RUN pip install "build>=1.2" && python -m build --wheel --outdir /dist . \
 && pip wheel --constraint constraints.txt --wheel-dir /wheels /dist/kdp_servlet-*.whl

FROM ${PYTHON_IMAGE}
# No .pyc files on a read-only filesystem; logs leave the process at once.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN groupadd --system --gid 65532 servlet \
 && useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin servlet
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels kdp-servlet
# Numeric, so Kubernetes can verify runAsNonRoot without reading /etc/passwd.
USER 65532:65532
# metrics, then /healthz and /readyz (the chart's defaults)
EXPOSE 8080 8081
ENTRYPOINT ["servlet"]
CMD ["run"]

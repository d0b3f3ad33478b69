"""The gate every API request passes before it is served: authentication, then authorization.

Authorization is `always-allow` (the default: every authenticated identity may do anything) or
`rbac`, where identities outside `system:masters` are held to the RBAC objects stored in the
cluster they call (rbac.py), with kcp's additions:

- a workspace (`/clusters/...`) first needs the `access` verb on the non-resource URL `/` in
  that workspace (kcp's ClusterRole `system:kcp:workspace:access`); a ServiceAccount has access
  to its own workspace and to no other ("workspace access not permitted" otherwise);
- the APIExport virtual workspace needs the request's verb on `apiexports/content` of the export,
  in the export's workspace; the export's binding and accepted claims are then checked by vw.py.

It also answers what is not stored: the probe paths (`/healthz`, `/livez`, `/readyz`);
`SelfSubjectAccessReview`, what the same chain would decide for the caller (`kubectl auth
can-i`); `SelfSubjectReview`, who the caller is (`kubectl auth whoami`); and TokenRequest
(`serviceaccounts/<name>/token`, `kubectl create token`), whose tokens do not expire (the
expiration it returns is only reported).
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any

import msgspec
from aiohttp import web

from kcpsim import errors
from kcpsim.auth import Authenticator, Identity
from kcpsim.rbac import RequestAttributes, authorize, forbidden_message, request_attributes
from kcpsim.resources import SERVICE_CLUSTER

if TYPE_CHECKING:
    from kcpsim.server import Target
    from kcpsim.world import World

AUTHZ_MODES = ("always-allow", "rbac")
HEALTH_PATHS = frozenset({"/healthz", "/livez", "/readyz"})
_REVIEWS = {("authorization.k8s.io", "selfsubjectaccessreviews"), ("authentication.k8s.io", "selfsubjectreviews")}
_WORKSPACE_DENIED = "workspace access not permitted"


class Access:
    def __init__(self, world: World, authenticator: Authenticator, *, mode: str = "always-allow") -> None:
        if mode not in AUTHZ_MODES:
            raise ValueError(f"unknown authorization mode {mode!r}; one of {', '.join(AUTHZ_MODES)}")
        self.world = world
        self.authenticator = authenticator
        self.mode = mode

    def authenticate(self, request: web.Request) -> Identity:
        certificate = request.transport.get_extra_info("peercert") if request.transport is not None else None
        return self.authenticator.authenticate(
            request.headers, path=request.path, store=self.world.store, certificate=certificate
        )

    async def gate(self, request: web.Request, target: Target, identity: Identity) -> web.Response | None:
        """Raise 403 when `identity` may not make this request; answer it when it is not stored."""
        path = request.path if target.cluster == SERVICE_CLUSTER and target.vw is None else "/" + "/".join(target.rest)
        attrs = request_attributes(request.method, target.rest, request.query, path=path)
        if target.vw is not None:
            target.vw.user = identity.user
        allowed, reason = self.decide(identity, target, attrs)
        if not allowed:
            raise _forbidden(identity, attrs, reason)
        if (
            path in HEALTH_PATHS
            and request.method in ("GET", "HEAD")
            and target.cluster == SERVICE_CLUSTER
            and target.vw is None
        ):
            return web.Response(text="ok", content_type="text/plain", charset="utf-8")
        if attrs.resource_request and (attrs.api_group, attrs.resource) in _REVIEWS and target.vw is None:
            if attrs.verb != "create" or attrs.name:
                raise errors.method_not_allowed()
            if attrs.resource == "selfsubjectreviews":  # `kubectl auth whoami`
                return _json(
                    {
                        "kind": "SelfSubjectReview",
                        "apiVersion": "authentication.k8s.io/v1",
                        "metadata": {"creationTimestamp": None},
                        "status": {"userInfo": identity.as_user_info()},
                    },
                    status=201,
                )
            return self.review(identity, target, await request.read())
        if attrs.combined_resource == "serviceaccounts/token" and attrs.api_group == "" and target.vw is None:
            if attrs.verb != "create":
                raise errors.method_not_allowed()
            assert target.cluster is not None
            return self.token_request(target.cluster, attrs, await request.read())
        return None

    def token_request(self, cluster: str, attrs: RequestAttributes, raw: bytes) -> web.Response:
        """`kubectl create token`: a token for a stored ServiceAccount (TokenRequest)."""
        try:
            body: Any = msgspec.json.decode(raw) if raw.strip() else {}
        except msgspec.DecodeError:
            raise errors.bad_request("couldn't get version/kind; json parse error") from None
        try:
            token = self.authenticator.mint_service_account_token(
                self.world.store, cluster=cluster, namespace=attrs.namespace, name=attrs.name
            )
        except KeyError:
            raise errors.not_found(group="", plural="serviceaccounts", name=attrs.name) from None
        spec = dict((body or {}).get("spec") or {}) if isinstance(body, dict) else {}
        try:
            spec["expirationSeconds"] = int(spec.get("expirationSeconds") or 3600)
        except (TypeError, ValueError):
            raise errors.bad_request(f"invalid expirationSeconds: {spec.get('expirationSeconds')!r}") from None
        expires = _dt.datetime.now(_dt.UTC) + _dt.timedelta(seconds=spec["expirationSeconds"])
        return _json(
            {
                "kind": "TokenRequest",
                "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"name": attrs.name, "namespace": attrs.namespace, "creationTimestamp": None},
                "spec": spec,
                "status": {"token": token, "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ")},
            },
            status=201,
        )

    def decide(self, identity: Identity, target: Target, attrs: RequestAttributes) -> tuple[bool, str]:
        """Allowed or not, and the reason appended to the denial."""
        if self.mode == "always-allow" or identity.superuser:
            return True, ""
        store = self.world.store
        if target.vw is not None:
            export = target.vw.export_name
            content = RequestAttributes(
                verb=attrs.verb,
                resource_request=True,
                api_group="apis.kcp.io",
                api_version="v1alpha1",
                resource="apiexports",
                subresource="content",
                name=export,
            )
            decision = authorize(store, target.vw.export_cluster, identity, content)
            if not decision.allowed:
                return False, (
                    f'API export: "{export}", workspace: "{target.vw.export_cluster}" RBAC decision: {decision.reason}'
                )
            return True, ""
        assert target.cluster is not None
        if self.world.is_kcp(target.cluster) and identity.cluster != target.cluster:
            # A ServiceAccount of another workspace (or of the service cluster) never gets in.
            access = RequestAttributes(verb="access", resource_request=False, path="/")
            if identity.cluster is not None or not authorize(store, target.cluster, identity, access).allowed:
                return False, _WORKSPACE_DENIED
        decision = authorize(store, target.cluster, identity, attrs)
        return decision.allowed, decision.reason

    def review(self, identity: Identity, target: Target, raw: bytes) -> web.Response:
        try:
            body: Any = msgspec.json.decode(raw) if raw.strip() else None
        except msgspec.DecodeError:
            raise errors.bad_request("couldn't get version/kind; json parse error") from None
        spec = (body or {}).get("spec") if isinstance(body, dict) else None
        resource, non_resource = (spec or {}).get("resourceAttributes"), (spec or {}).get("nonResourceAttributes")
        if (resource is None) == (non_resource is None):
            raise errors.invalid(
                group="authorization.k8s.io",
                kind="SelfSubjectAccessReview",
                name="",
                causes=[
                    (
                        "spec.resourceAttributes",
                        'Invalid value: "null": exactly one of nonResourceAttributes or '
                        "resourceAttributes must be specified",
                    )
                ],
            )
        if resource is not None:
            attrs = RequestAttributes(
                verb=resource.get("verb", ""),
                resource_request=True,
                api_group=resource.get("group", ""),
                api_version=resource.get("version", ""),
                resource=resource.get("resource", ""),
                subresource=resource.get("subresource", ""),
                namespace=resource.get("namespace", ""),
                name=resource.get("name", ""),
            )
        else:
            attrs = RequestAttributes(
                verb=(non_resource or {}).get("verb", ""),
                resource_request=False,
                path=(non_resource or {}).get("path", ""),
            )
        allowed, reason = self.decide(identity, target, attrs)
        status: dict[str, Any] = {"allowed": allowed}
        if reason:
            status["reason"] = reason
        answer = {
            "kind": "SelfSubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }
        return _json(answer, status=201)


def _json(body: Any, *, status: int) -> web.Response:
    return web.Response(body=msgspec.json.encode(body), status=status, headers={"Content-Type": "application/json"})


def _forbidden(identity: Identity, attrs: RequestAttributes, reason: str) -> errors.StatusError:
    why = forbidden_message(identity, attrs) + (f": {reason}" if reason else "")
    if not attrs.resource_request:
        return errors.StatusError(403, "Forbidden", f"forbidden: {why}", details={})
    return errors.forbidden(group=attrs.api_group, plural=attrs.resource, name=attrs.name, why=why)

"""Laws of related projection (SPEC 8): between a ConfigMap and a Secret no data is lost.

A ConfigMap's text copied into a Secret and that Secret copied back into a ConfigMap is the text
again; a Secret's values copied into a ConfigMap and back are the same base64 values, whether they
are text (`data`) or not (`binaryData`).
"""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import given, strategies as st

from servlet.core.model import Origin, RelatedKind, RelatedReference, RelatedResource, ValueReference
from servlet.core.parsing_related_types import projected_api
from servlet.core.related_sides import desired_content
from servlet.core.targets import CONFIGMAP_TYPE, SECRET_TYPE

KEYS = st.from_regex(r"[a-z][a-z0-9.-]{0,8}", fullmatch=True)


def _entry(kind: RelatedKind, projection: str) -> RelatedResource:
    api = projected_api(kind=kind, api=None, projection={"resource": projection})
    return RelatedResource(
        identifier="x",
        origin=Origin.SERVICE,
        kind=kind,
        reference=RelatedReference(name=ValueReference(path="spec.x")),
        projection=api,
        resolved_projection=SECRET_TYPE if projection == "secrets" else CONFIGMAP_TYPE,
    )


TO_SECRET = _entry(RelatedKind.CONFIGMAP, "secrets")
TO_CONFIGMAP = _entry(RelatedKind.SECRET, "configmaps")


def _object(kind: str, content: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x", "namespace": "n"}, **content}


@given(st.dictionaries(KEYS, st.text(max_size=20), max_size=4))
def test_a_configmaps_text_survives_the_round_trip_through_a_secret(data: dict[str, str]) -> None:
    secret = desired_content(TO_SECRET, _object("ConfigMap", {"data": data}))
    back = desired_content(TO_CONFIGMAP, _object("Secret", secret))
    assert back.get("data", {}) == data


@given(st.dictionaries(KEYS, st.binary(max_size=20), max_size=4))
def test_a_secrets_values_survive_the_round_trip_through_a_configmap(values: dict[str, bytes]) -> None:
    data = {key: base64.b64encode(value).decode() for key, value in values.items()}
    configmap = desired_content(TO_CONFIGMAP, _object("Secret", {"data": data}))
    back = desired_content(TO_SECRET, _object("ConfigMap", configmap))
    assert back.get("data", {}) == data

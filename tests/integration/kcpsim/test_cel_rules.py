"""`x-kubernetes-validations` CEL rules are evaluated as kube-apiserver evaluates them: at any
level of the schema, transition rules on update only, with the rule's message, reason and field
path, bounded in cost; a CRD whose rule does not compile is refused. Over raw HTTP and kubectl."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import CRDS, Raw, example_io_widget_crd
from tests.integration.kcpsim.kubectl import kubectl

WIDGETS = "/apis/example.io/v1/namespaces/default/widgets"
RULES_PATH = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"


def _rules(*rules: dict[str, Any]) -> list[dict[str, Any]]:
    return list(rules)


def _schema() -> dict[str, Any]:
    return {
        "type": "object",
        "x-kubernetes-validations": _rules(
            {"rule": "self.metadata.name.startsWith('w')", "message": "names start with w"}
        ),
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": _rules(
                    {"rule": "!has(self.min) || !has(self.max) || self.min <= self.max", "message": "min exceeds max"},
                    {
                        "rule": "!has(self.max) || self.max < 100",
                        "messageExpression": "'max ' + string(self.max) + ' is 100 or more'",
                        "reason": "FieldValueForbidden",
                        "fieldPath": ".max",
                    },
                ),
                "properties": {
                    "min": {"type": "integer"},
                    "max": {"type": "integer"},
                    "size": {
                        "type": "integer",
                        "x-kubernetes-validations": _rules(
                            {"rule": "self >= oldSelf", "message": "size may only grow"}
                        ),
                    },
                    "color": {
                        "type": "string",
                        "x-kubernetes-validations": _rules(
                            {"rule": "self.lowerAscii() == self", "message": "color is lower case"},
                            {
                                "rule": "oldSelf.hasValue() || self != 'black'",
                                "optionalOldSelf": True,
                                "message": "no object is created black",
                            },
                        ),
                    },
                    "note": {
                        "type": "object",
                        "properties": {"text": {"type": "string"}},
                        "x-kubernetes-validations": _rules({"rule": "self.text != ''"}),
                    },
                    "labels": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "string",
                            "x-kubernetes-validations": _rules({"rule": "size(self) <= 3"}),
                        },
                    },
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                            "x-kubernetes-validations": _rules(
                                {"rule": "self.port == oldSelf.port", "message": "a port keeps its number"}
                            ),
                        },
                    },
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "x-kubernetes-preserve-unknown-fields": False,
            },
        },
    }


def _widget(name: str, /, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def widgets(raw: Raw) -> Raw:
    response = raw("POST", CRDS, example_io_widget_crd(_schema()))
    assert response.status_code == 201, response.text
    return raw


def _refusal(response: Any) -> tuple[str, list[tuple[str, str, str]]]:
    assert response.status_code == 422, response.text
    status = response.json()
    assert status["reason"] == "Invalid"
    causes = [(c["field"], c["reason"], c["message"]) for c in status["details"]["causes"]]
    return status["message"], causes


@pytest.mark.parametrize(
    ("name", "spec", "field", "reason", "message"),
    [
        ("x", {}, "<nil>", "FieldValueInvalid", 'Invalid value: "object": names start with w'),
        ("w", {"min": 5, "max": 2}, "spec", "FieldValueInvalid", 'Invalid value: "object": min exceeds max'),
        ("w", {"max": 120}, "spec.max", "FieldValueForbidden", "Forbidden: max 120 is 100 or more"),
        ("w", {"color": "Red"}, "spec.color", "FieldValueInvalid", 'Invalid value: "string": color is lower case'),
        (
            "w",
            {"color": "black"},
            "spec.color",
            "FieldValueInvalid",
            'Invalid value: "string": no object is created black',
        ),
        (
            "w",
            {"labels": {"a": "ok", "b": "long"}},
            "spec.labels[b]",
            "FieldValueInvalid",
            'Invalid value: "string": failed rule: size(self) <= 3',
        ),
        (
            "w",
            {"note": {}},
            "spec.note",
            "FieldValueInvalid",
            "Invalid value: \"object\": no such key: text evaluating rule: self.text != ''",
        ),
    ],
    ids=[
        "root",
        "spec",
        "message-expression-reason-field-path",
        "strings-extension",
        "optional-old-self",
        "map-values",
        "runtime-error",
    ],
)
def test_a_broken_rule_refuses_the_create_with_the_apiservers_words(
    widgets: Raw, name: str, spec: dict[str, Any], field: str, reason: str, message: str
) -> None:
    text, causes = _refusal(widgets("POST", WIDGETS, _widget(name, **spec)))
    assert causes == [(field, reason, message)]
    assert text == f'Widget.example.io "{name}" is invalid: {field}: {message}'


def test_objects_that_keep_the_rules_are_stored(widgets: Raw) -> None:
    spec = {"min": 1, "max": 99, "color": "red", "labels": {"a": "abc"}, "ports": [{"name": "http", "port": 80}]}
    created = widgets("POST", WIDGETS, _widget("w", **spec))
    assert created.status_code == 201, created.text
    assert created.json()["spec"] == spec


def test_several_broken_rules_are_listed_together(widgets: Raw) -> None:
    text, causes = _refusal(widgets("POST", WIDGETS, _widget("x", min=300, max=200)))
    assert [field for field, _, _ in causes] == ["<nil>", "spec", "spec.max"]
    assert text.startswith('Widget.example.io "x" is invalid: [<nil>: Invalid value: "object": names start with w, ')


def test_transition_rules_hold_only_on_update(widgets: Raw) -> None:
    assert widgets("POST", WIDGETS, _widget("w", size=5, color="black")).status_code == 422
    assert (
        widgets("POST", WIDGETS, _widget("w", size=5, color="red", ports=[{"name": "http", "port": 80}])).status_code
        == 201
    )
    shrink = widgets("PATCH", f"{WIDGETS}/w", {"spec": {"size": 3}}, content_type="application/merge-patch+json")
    assert _refusal(shrink)[1] == [("spec.size", "FieldValueInvalid", 'Invalid value: "integer": size may only grow')]
    # A list item correlates with its old self through the list's map keys; a new item has none.
    moved = {"spec": {"ports": [{"name": "https", "port": 443}, {"name": "http", "port": 8080}]}}
    refused = widgets("PATCH", f"{WIDGETS}/w", moved, content_type="application/merge-patch+json")
    assert _refusal(refused)[1] == [
        ("spec.ports[1]", "FieldValueInvalid", 'Invalid value: "object": a port keeps its number')
    ]
    grown = {
        "spec": {"size": 6, "color": "black", "ports": [{"name": "https", "port": 443}, {"name": "http", "port": 80}]}
    }
    accepted = widgets("PATCH", f"{WIDGETS}/w", grown, content_type="application/merge-patch+json")
    assert accepted.status_code == 200, accepted.text
    assert accepted.json()["spec"]["size"] == 6 and accepted.json()["spec"]["color"] == "black"


def test_an_unchanged_value_is_not_held_to_a_rule_it_broke_before(widgets: Raw) -> None:
    """Ratcheting (on by default since 1.30): a rule added later does not block other changes."""
    assert widgets("POST", WIDGETS, _widget("w", labels={"a": "abc"}, min=1)).status_code == 201
    crd = widgets("GET", f"{CRDS}/widgets.example.io").json()
    labels = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["labels"]
    labels["additionalProperties"]["x-kubernetes-validations"] = [{"rule": "size(self) <= 2"}]
    assert widgets("PUT", f"{CRDS}/widgets.example.io", crd).status_code == 200
    changed = widgets("PATCH", f"{WIDGETS}/w", {"spec": {"min": 2}}, content_type="application/merge-patch+json")
    assert changed.status_code == 200, changed.text
    touched = widgets(
        "PATCH", f"{WIDGETS}/w", {"spec": {"labels": {"a": "xyz"}}}, content_type="application/merge-patch+json"
    )
    assert _refusal(touched)[1] == [
        ("spec.labels[a]", "FieldValueInvalid", 'Invalid value: "string": failed rule: size(self) <= 2')
    ]


def test_a_rule_too_costly_to_finish_is_refused_not_run_forever(widgets: Raw) -> None:
    crd = widgets("GET", f"{CRDS}/widgets.example.io").json()
    tags = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["tags"]
    tags["x-kubernetes-validations"] = [{"rule": "self.all(a, self.all(b, self.all(c, a != '')))"}]
    assert widgets("PUT", f"{CRDS}/widgets.example.io", crd).status_code == 200
    _, causes = _refusal(widgets("POST", WIDGETS, _widget("w", tags=[f"t{i}" for i in range(40)])))
    ((field, _, message),) = causes
    assert field == "spec.tags" and "call cost exceeds limit for rule" in message
    assert widgets("POST", WIDGETS, _widget("w", tags=["a", "b"])).status_code == 201


@pytest.mark.parametrize(
    ("rule", "detail"),
    [
        ({"rule": "self.min =="}, "compilation failed: ERROR: <input>:1:12: Syntax error: mismatched input '<EOF>'"),
        (
            {"rule": "quantity(self.min) > 1"},
            "compilation failed: ERROR: <input>:1:9: undeclared reference to 'quantity'",
        ),
        ({"rule": "1 + 1"}, "cel expression must evaluate to a bool"),
    ],
    ids=["syntax", "unknown-function", "not-a-bool"],
)
def test_a_crd_whose_rule_does_not_compile_is_refused(raw: Raw, rule: dict[str, Any], detail: str) -> None:
    schema = _schema()
    schema["properties"]["spec"]["x-kubernetes-validations"] = [rule]
    text, causes = _refusal(raw("POST", CRDS, example_io_widget_crd(schema)))
    ((field, reason, message),) = causes
    assert (field, reason) == (RULES_PATH, "FieldValueInvalid")
    assert message.startswith(f"Invalid value: apiextensions.ValidationRule{{Rule:{json.dumps(rule['rule'])}, ")
    assert detail in message
    assert text.startswith('CustomResourceDefinition.apiextensions.k8s.io "widgets.example.io" is invalid: ')
    assert raw("GET", f"{CRDS}/widgets.example.io").status_code == 404
    # An update that breaks a rule is refused the same way, and the stored CRD keeps its rules.
    assert raw("POST", CRDS, example_io_widget_crd(_schema())).status_code == 201
    stored = raw("GET", f"{CRDS}/widgets.example.io").json()
    stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [
        rule
    ]
    assert _refusal(raw("PUT", f"{CRDS}/widgets.example.io", stored))[1][0][0] == RULES_PATH


def test_kubectl_shows_the_broken_rule_and_the_refusedexample_io_widget_crd(
    kcpsim: KcpSim, widgets: Raw, tmp_path: Path
) -> None:
    kubeconfig = kcpsim.write_kubeconfigs(tmp_path)["service"]
    manifest = yaml.safe_dump({**_widget("w", min=5, max=2), "metadata": {"name": "w", "namespace": "default"}})
    created = kubectl(kubeconfig, "create", "-f", "-", cache=tmp_path, stdin=manifest)
    assert created.returncode == 1
    assert 'The Widget "w" is invalid: spec: Invalid value: "object": min exceeds max' in created.stderr, created.stderr
    fine = yaml.safe_dump({**_widget("w", size=5), "metadata": {"name": "w", "namespace": "default"}})
    assert kubectl(kubeconfig, "create", "-f", "-", cache=tmp_path, stdin=fine).returncode == 0
    patched = kubectl(
        kubeconfig, "patch", "widget", "w", "-n", "default", "--type=merge", "-p", '{"spec":{"size":1}}', cache=tmp_path
    )
    assert patched.returncode == 1
    assert 'The Widget "w" is invalid: spec.size: Invalid value: "integer": size may only grow' in patched.stderr
    broken = _schema()
    broken["properties"]["spec"]["x-kubernetes-validations"] = [{"rule": "self.min =="}]
    crd = example_io_widget_crd(broken) | {"metadata": {"name": "gadgets.example.io"}}
    crd["spec"]["names"] = {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"}
    applied = kubectl(kubeconfig, "apply", "-f", "-", cache=tmp_path, stdin=yaml.safe_dump(crd))
    assert applied.returncode == 1
    assert 'The CustomResourceDefinition "gadgets.example.io" is invalid: ' in applied.stderr
    assert f"{RULES_PATH}: Invalid value: " in applied.stderr and "compilation failed" in applied.stderr


def test_an_apiresourceschema_whose_rule_does_not_compile_is_refused(raw: Raw) -> None:
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": "self.spec =="}]}
    body = {
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIResourceSchema",
        "metadata": {"name": "v1.widgets.example.io"},
        "spec": {
            "group": "example.io",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}],
        },
    }
    _, causes = _refusal(raw("POST", "/clusters/root:myorg/apis/apis.kcp.io/v1alpha1/apiresourceschemas", body))
    assert [field for field, _, _ in causes] == ["spec.versions[0].schema.x-kubernetes-validations[0].rule"]

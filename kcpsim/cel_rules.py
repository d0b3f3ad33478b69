"""`x-kubernetes-validations` CEL rules of CRD and APIResourceSchema schemas, as kube-apiserver runs them.

Rules are compiled once per schema (a version's `openAPIV3Schema` object, which the catalog keeps
while the CRD is unchanged) into a tree that holds only the schema nodes with rules beneath them;
a schema without rules compiles to nothing, so writes of its objects cost nothing extra.

Evaluation follows apiextensions-apiserver: a rule sees `self` (the value at its node) and, when
it mentions `oldSelf`, is a transition rule that runs only on update and only where the old value
exists (list items correlate through `x-kubernetes-list-map-keys`), unless `optionalOldSelf` makes
`oldSelf` an optional. Rules without `oldSelf` ratchet as in 1.30+: an unchanged value is not
re-checked. The evaluator is cel-expr-python with the strings (version 2), optional and binding
extensions; its comprehension budget (10,000 iterations per evaluation) stands in for the
apiserver's cost limit. CRD writes whose rules do not compile are refused (`check_definition`).
"""

from __future__ import annotations

import re
from typing import Any

from attrs import frozen
from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

__all__ = ["RuleNode", "check_definition", "compiled_rules", "rule_problems"]

Problem = tuple[str, str]  # (field path, message), as errors.invalid takes them

_PRESENT = "kcpsimOldSelfPresent"  # set when the optional `oldSelf` of `optionalOldSelf` has a value
_ENV = cel.NewEnv(
    variables={"self": cel.Type.DYN, "oldSelf": cel.Type.DYN, _PRESENT: cel.Type.BOOL},
    extensions=[ext_strings.ExtStrings(2), ext_optional.ExtOptional(), ext_bindings.ExtBindings()],
)
_OLD_SELF = re.compile(r"\boldSelf\b")
_ROOT_SKIPPED = ("apiVersion", "kind", "metadata")
_CACHE_SIZE = 512


@frozen(eq=False)
class CompiledRule:
    rule: dict[str, Any]
    program: Any  # the binding's compiled expression (it ships no type hints)
    message_program: Any
    transition: bool
    optional_old: bool


@frozen(eq=False)
class RuleNode:
    """A schema node with rules at or beneath it; `type` is the schema type the errors name."""

    type: str
    number: bool  # `type: number`: integers are doubles to CEL
    rules: tuple[CompiledRule, ...]
    properties: dict[str, RuleNode]
    additional: RuleNode | None
    items: RuleNode | None
    list_keys: tuple[str, ...] | None  # the map keys of an `x-kubernetes-list-type: map` list


class _CompileError(Exception):
    def __init__(self, index: int, field: str, rule: dict[str, Any], detail: str) -> None:
        super().__init__(detail)
        self.index, self.field, self.rule, self.detail = index, field, rule, detail


def _compile_expression(source: str, *, optional_old: bool) -> Any:
    if optional_old:
        # `oldSelf` rebound as an optional: the binding cannot take an optional as a variable.
        source = f"cel.bind(oldSelf, {_PRESENT} ? optional.of(oldSelf) : optional.none(), ({source}))"
    return _ENV.compile(source)


def _compile_rules(schema: dict[str, Any]) -> tuple[CompiledRule, ...]:
    compiled = []
    for index, rule in enumerate(schema.get("x-kubernetes-validations") or []):
        source = str(rule.get("rule") or "")
        optional_old = bool(rule.get("optionalOldSelf"))
        try:
            program = _compile_expression(source, optional_old=optional_old)
        except RuntimeError as error:
            raise _CompileError(index, "rule", rule, f"compilation failed: {_text(error)}") from None
        if program.return_type().name() not in ("BOOL", "DYN"):
            raise _CompileError(index, "rule", rule, "cel expression must evaluate to a bool")
        message_program = None
        if rule.get("messageExpression"):
            try:
                message_program = _ENV.compile(str(rule["messageExpression"]))
            except RuntimeError as error:
                detail = f"messageExpression compilation failed: {_text(error)}"
                raise _CompileError(index, "messageExpression", rule, detail) from None
        transition = bool(_OLD_SELF.search(source))
        compiled.append(CompiledRule(rule, program, message_program, transition, optional_old))
    return tuple(compiled)


def _compile_node(schema: Any, where: str, errors: list[Problem]) -> RuleNode | None:
    if not isinstance(schema, dict):
        return None
    try:
        rules = _compile_rules(schema)
    except _CompileError as error:
        errors.append(
            (
                f"{where}.x-kubernetes-validations[{error.index}].{error.field}",
                f"Invalid value: {_go_rule(error.rule)}: {error.detail}",
            )
        )
        rules = ()
    properties = {}
    for key, sub in (schema.get("properties") or {}).items():
        node = _compile_node(sub, f"{where}.properties[{key}]", errors)
        if node is not None:
            properties[key] = node
    additional = _compile_node(schema.get("additionalProperties"), f"{where}.additionalProperties.schema", errors)
    items = _compile_node(schema.get("items"), f"{where}.items", errors)
    if not (rules or properties or additional or items):
        return None
    list_type = schema.get("x-kubernetes-list-type")
    keys = tuple(schema.get("x-kubernetes-list-map-keys") or ()) if list_type == "map" else None
    kind = str(schema.get("type") or "")
    return RuleNode(kind, kind == "number", rules, properties, additional, items, keys)


_cache: dict[int, tuple[Any, RuleNode | None]] = {}


def compiled_rules(schema: dict[str, Any]) -> RuleNode | None:
    """`schema`'s rules, compiled on first use and cached while the schema object lives on."""
    hit = _cache.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    node = _compile_node(schema, "", [])  # a stored schema's broken rule is skipped, as it was never admitted
    if len(_cache) >= _CACHE_SIZE:
        del _cache[next(iter(_cache))]
    _cache[id(schema)] = (schema, node)  # the reference keeps the id from being reused
    return node


def check_definition(versions: list[Any], *, crd: bool) -> list[Problem]:
    """Why the rules of a CRD's (or an APIResourceSchema's) versions do not compile, as field errors."""
    errors: list[Problem] = []
    for index, version in enumerate(versions):
        schema = (version.get("schema") or {}) if isinstance(version, dict) else {}
        where = f"spec.versions[{index}].schema"
        if crd:
            schema, where = schema.get("openAPIV3Schema"), f"{where}.openAPIV3Schema"
        _compile_node(schema, where, errors)
    return errors


def rule_problems(node: RuleNode, new: Any, old: Any, *, updating: bool) -> list[Problem]:
    """The field errors of `new` (an object of `node`'s schema); `old` is the stored object on update."""
    problems: list[Problem] = []
    _validate(node, new, old, updating, "", problems, root=True)
    return problems


def _validate(node: RuleNode, new: Any, old: Any, has_old: bool, path: str, out: list[Problem], *, root: bool) -> None:
    if node.rules:
        unchanged = has_old and old == new
        for compiled in node.rules:
            if compiled.transition and not compiled.optional_old and not has_old:
                continue
            if unchanged and not compiled.transition:
                continue  # ratcheting: an unchanged value is not held to rules it may have broken before
            problem = _evaluate(node, compiled, new, old, has_old, path)
            if problem is not None:
                out.append(problem)
    if isinstance(new, dict):
        olds = old if has_old and isinstance(old, dict) else {}
        for key, sub in node.properties.items():
            if key in new and not (root and key in _ROOT_SKIPPED):
                _validate(sub, new[key], olds.get(key), key in olds, f"{path}.{key}" if path else key, out, root=False)
        if node.additional is not None:
            for key, value in new.items():
                _validate(node.additional, value, olds.get(key), key in olds, f"{path}[{key}]", out, root=False)
    elif isinstance(new, list) and node.items is not None:
        by_key = _correlate(node.list_keys, old if has_old else None)
        for index, item in enumerate(new):
            found = by_key.get(_map_key(node.list_keys, item)) if node.list_keys else None
            _validate(node.items, item, found, found is not None, f"{path}[{index}]", out, root=False)


def _correlate(keys: tuple[str, ...] | None, old: Any) -> dict[Any, Any]:
    if not keys or not isinstance(old, list):
        return {}
    return {_map_key(keys, item): item for item in old}


def _map_key(keys: tuple[str, ...] | None, item: Any) -> Any:
    return tuple(repr(item.get(k)) for k in keys or ()) if isinstance(item, dict) else None


def _to_cel(node: RuleNode, value: Any) -> Any:
    return float(value) if node.number and isinstance(value, int) and not isinstance(value, bool) else value


def _evaluate(node: RuleNode, compiled: CompiledRule, new: Any, old: Any, has_old: bool, path: str) -> Problem | None:
    field = path or "<nil>"  # a rule at the root names no field, as the apiserver's nil path prints
    rule_text = str(compiled.rule.get("message") or compiled.rule.get("rule") or "").strip()
    data = {"self": _to_cel(node, new), "oldSelf": _to_cel(node, old) if has_old else None, _PRESENT: has_old}
    ok, outcome = _run(compiled.program, data)
    if not ok:
        if "budget exceeded" in outcome.lower():
            detail = "operation cancelled: actual cost limit exceeded"
            text = f"'{detail}': no further validation rules will be run due to call cost exceeds limit for rule: {rule_text}"
        elif "no matching overload" in outcome.lower():
            text = (
                f"'no such overload': call arguments did not match a supported operator, function or macro"
                f" signature for rule: {rule_text}"
            )
        else:
            text = f"{outcome} evaluating rule: {rule_text}"
        return field, f'Invalid value: "{node.type}": {text}'
    if outcome is True:
        return None
    if outcome is not False:
        return field, f'Invalid value: "{node.type}": rule did not evaluate to a bool evaluating rule: {rule_text}'
    message = _message(compiled, data)
    if compiled.rule.get("fieldPath"):
        suffix = str(compiled.rule["fieldPath"])
        field = f"{path}{suffix}" if path else suffix.lstrip(".")
    reason = compiled.rule.get("reason") or "FieldValueInvalid"
    if reason == "FieldValueForbidden":
        return field, f"Forbidden: {message}"
    if reason == "FieldValueRequired":
        return field, f"Required value: {message}"
    if reason == "FieldValueDuplicate":
        return field, f'Duplicate value: "{node.type}"'
    return field, f'Invalid value: "{node.type}": {message}'


def _message(compiled: CompiledRule, data: dict[str, Any]) -> str:
    if compiled.message_program is not None:
        ok, text = _run(compiled.message_program, data)
        # A messageExpression that fails, or gives no usable one-line text, falls back to `message`.
        if ok and isinstance(text, str) and text.strip() and "\n" not in text:
            return text.strip()
    if compiled.rule.get("message"):
        return str(compiled.rule["message"]).strip()
    return f"failed rule: {str(compiled.rule.get('rule') or '').strip()}"


def _run(program: Any, data: dict[str, Any]) -> tuple[bool, Any]:
    """(True, the result's plain value), or (False, the evaluation error's text)."""
    try:
        result = program.eval(data=data)
    except (RuntimeError, TypeError, ValueError, OverflowError) as error:
        return False, _text(error)
    if result.type().name() == "ERROR":
        return False, _text(result.value())
    return True, result.plain_value()


_NOT_FOUND = re.compile(r'Key not found in map : "?([^"]*)"?')


def _text(error: object) -> str:
    """The binding's error text without its status codes, worded as cel-go's where they differ."""
    text = str(error).strip()
    text = re.sub(r"^(INVALID_ARGUMENT|INTERNAL|NOT_FOUND|OUT_OF_RANGE|UNKNOWN): ", "", text)
    text = re.sub(r" \[(INVALID_ARGUMENT|INTERNAL|NOT_FOUND|OUT_OF_RANGE|UNKNOWN)\]$", "", text)
    return _NOT_FOUND.sub(r"no such key: \1", text)


def _go_rule(rule: dict[str, Any]) -> str:
    """The rule as Go's %#v prints apiextensions.ValidationRule, the value of a compile error."""

    def quoted(key: str) -> str:
        return '"' + str(rule.get(key) or "").replace("\\", "\\\\").replace('"', '\\"') + '"'

    reason = (
        f'(*apiextensions.FieldValueErrorReason)("{rule["reason"]}")'
        if rule.get("reason")
        else "(*apiextensions.FieldValueErrorReason)(nil)"
    )
    optional = "(*bool)(true)" if rule.get("optionalOldSelf") else "(*bool)(nil)"
    return (
        f"apiextensions.ValidationRule{{Rule:{quoted('rule')}, Message:{quoted('message')},"
        f" MessageExpression:{quoted('messageExpression')}, Reason:{reason}, FieldPath:{quoted('fieldPath')},"
        f" OptionalOldSelf:{optional}}}"
    )

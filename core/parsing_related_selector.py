"""Reading `object.selector` of a related entry: label requirements and the required `rewrite`.

Called from `parsing_related.py` (once, for the `selector` form of `object`), with the parser's
conventions: never raise, report every problem under the manifest's field path.

The shape is the peer's: `matchLabels` (keys and values may be templates, evaluated on the origin
side's primary when planning), `matchExpressions` as Kubernetes has them, and `rewrite` with
exactly one of `regex` (`pattern`, `replacement`) and `template` (`template`, reading `.Value`,
the found origin name). A selector chooses no namespace: the objects are those of the origin
namespace that `object.namespace` (or the primary's own namespace) gives, so the namespace rules
stay the ones of the other forms.

Deliberately not here: evaluating anything (`related_selector.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from servlet.core import related_selector, related_templates, rewrite
from servlet.core.fields import as_mapping, describe, one_form, read_string, report_unknown
from servlet.core.filtering import is_label_key, is_label_value, parse_label_selector
from servlet.core.model import Problem, RegexRule, RelatedSelector
from servlet.core.templates import TemplateError, is_template


def parse_selector(data: object, *, path: str, problems: list[Problem]) -> RelatedSelector | None:
    """The selector at `path` (`...object.selector`), or None with its problems reported."""
    selector = as_mapping(data, path=path, problems=problems)
    if selector is None:
        return None
    report_unknown(selector, path=path, known=("matchLabels", "matchExpressions", "rewrite"), problems=problems)
    before = len(problems)
    labels = _parse_match_labels(selector.get("matchLabels"), path=f"{path}.matchLabels", problems=problems)
    parsed, expression_problems = parse_label_selector(
        {"matchExpressions": selector.get("matchExpressions")}, path=path
    )
    problems.extend(expression_problems)
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        # An empty selector would find every object of the namespace: never what a service owner means.
        problems.append(Problem(field=path, message="sets neither matchLabels nor matchExpressions"))
    rule = _parse_rewrite(selector.get("rewrite"), path=f"{path}.rewrite", problems=problems)
    if len(problems) > before or parsed is None or rule is None:
        return None
    return RelatedSelector(match_labels=labels, match_expressions=parsed.match_expressions, rewrite=rule)


def _parse_match_labels(data: object, *, path: str, problems: list[Problem]) -> tuple[tuple[str, str], ...]:
    if data is None:
        return ()
    mapping = as_mapping(data, path=path, problems=problems)
    labels: list[tuple[str, str]] = []
    for key, value in (mapping or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            problems.append(
                Problem(field=f"{path}.{key}", message=f"must map a string to a string, not {describe(value)}")
            )
            continue
        checked = [
            _checked_label_text(text, field=f"{path}.{key}", what=what, valid=valid)
            for text, what, valid in ((key, "key", is_label_key), (value, "value", is_label_value))
        ]
        found = [problem for problem in checked if problem is not None]
        if found:
            problems.extend(found)
        else:
            labels.append((key, value))
    return tuple(sorted(labels))


def _checked_label_text(text: str, *, field: str, what: str, valid: Callable[[str], bool]) -> Problem | None:
    """A plain label key or value must be valid as written; a template is checked when rendered."""
    if is_template(text):
        template = related_templates.parsed(text)
        if isinstance(template, TemplateError):
            return Problem(field=field, message=f"the {what} template {describe(text)}: {template}")
        return None
    if not valid(text):
        return Problem(field=field, message=f"{describe(text)} is not a valid label {what}")
    return None


def _parse_rewrite(data: object, *, path: str, problems: list[Problem]) -> RegexRule | str | None:
    if data is None:
        problems.append(
            Problem(field=path, message="is required (regex or template: how a found name becomes the copy's name)")
        )
        return None
    found = as_mapping(data, path=path, problems=problems)
    if found is None:
        return None
    forms = ("regex", "template")
    report_unknown(found, path=path, known=forms, problems=problems)
    form = one_form(found, forms, path=path, problems=problems)
    if form is None:
        return None
    if form == "regex":
        return _parse_regex(found["regex"], path=f"{path}.regex", problems=problems)
    holder = as_mapping(found["template"], path=f"{path}.template", problems=problems)
    if holder is None:
        return None
    report_unknown(holder, path=f"{path}.template", known=("template",), problems=problems)
    source = read_string(holder, "template", path=f"{path}.template", problems=problems, required=True)
    if source is None:
        return None
    template = related_selector.parsed_rewrite(source)
    if isinstance(template, TemplateError):
        problems.append(Problem(field=f"{path}.template.template", message=f"{describe(source)}: {template}"))
        return None
    return source


def _parse_regex(data: object, *, path: str, problems: list[Problem]) -> RegexRule | None:
    regex = as_mapping(data, path=path, problems=problems)
    if regex is None:
        return None
    report_unknown(regex, path=path, known=("pattern", "replacement"), problems=problems)
    texts: Mapping[str, object] = {key: regex.get(key) or "" for key in ("pattern", "replacement")}
    if not all(isinstance(value, str) for value in texts.values()):
        problems.append(Problem(field=path, message="pattern and replacement must be strings"))
        return None
    rule = RegexRule(pattern=str(texts["pattern"]), replacement=str(texts["replacement"]))
    if not rule.pattern:
        # A constant would map every found object to one name: always a collision.
        problems.append(
            Problem(field=f"{path}.pattern", message="is required (an empty pattern gives every copy one name)")
        )
        return None
    compiled = rewrite.compile_rule(rule, field=path)
    if isinstance(compiled, Problem):
        problems.append(compiled)
        return None
    return rule

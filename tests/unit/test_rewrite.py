"""Regex rules on tenant values (issue 13): RE2 in linear time, with the documented `\\1` replacements."""

from __future__ import annotations

import pytest

from servlet.core.model import Problem, RegexRule
from servlet.core.rewrite import MAX_VALUE_LENGTH, compile_rule, parse_replacement, rewrite

FIELD = "spec.related[0].reference.name.regex"


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        # Each needs about 2^n steps on n characters in a backtracking engine such as Python's `re`:
        # these values would not finish before the sun burns out; RE2 answers at once.
        ("^(a+)+$", "a" * 1000 + "!", "a" * 1000 + "!"),
        ("^(a|aa)+$", "a" * 1000 + "!", "a" * 1000 + "!"),
        ("^(a*)*b$", "a" * 1000, "a" * 1000),
        ("^(x+x+)+y$", "x" * 1000, "x" * 1000),
        # ...and when the value does match, it is rewritten as usual.
        ("^(a+)+$", "a" * 1000, "matched"),
    ],
    ids=["nested-plus", "alternation", "nested-star", "overlapping", "nested-plus-matching"],
)
def test_a_catastrophic_pattern_on_a_long_value_gives_its_result(pattern: str, value: str, expected: str) -> None:
    assert rewrite(RegexRule(pattern=pattern, replacement="matched"), value, field=FIELD) == expected


@pytest.mark.parametrize(
    ("pattern", "replacement", "value", "expected"),
    [
        ("^(.*)$", r"\1-tls", "web", "web-tls"),  # the example of docs/publishing-resources.md
        ("^(.*)-tls$", r"\1-cert", "api-tls", "api-cert"),
        ("(?P<base>[a-z]+)-cert", r"\g<base>-tls", "api-cert", "api-tls"),
        ("(a)(b)", r"\2\1", "xaby", "xbay"),
        ("(a)(b)", r"\g<2>0\g<0>", "ab", "b0ab"),  # \g<2>0 is group 2 and a zero, \g<0> the whole match
        ("-", ".", "a-b-c", "a.b.c"),  # every match, as Go's ReplaceAllString
        ("^(x)?(.*)$", r"[\1]\2", "web", "[]web"),  # a group that took no part is empty
        ("^(.*)$", r"\1\\x", "a", "a\\x"),
        ("^(.*)$", r"\1-grüße-世界", "a", "a-grüße-世界"),  # non-ASCII text stays as written
        ("-cert$", "", "api-cert", "api"),
        ("nothing", "x", "api", "api"),
    ],
)
def test_replacements_use_the_documented_backslash_syntax(
    pattern: str, replacement: str, value: str, expected: str
) -> None:
    assert rewrite(RegexRule(pattern=pattern, replacement=replacement), value, field=FIELD) == expected


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ("^x$", "x\n", "x\n"),  # Python's `$` also matches before a final newline; Go's and RE2's do not
        (r"^\d+$", "١٢", "١٢"),  # \d is ASCII digits only, as in Go (Python's `re` takes Arabic-Indic digits)
        ("^.+$", "a\nb", "a\nb"),  # `.` never matches a newline without (?s)
        ("(?s)^.+$", "a\nb", "matched"),
    ],
)
def test_patterns_have_go_semantics(pattern: str, value: str, expected: str) -> None:
    assert rewrite(RegexRule(pattern=pattern, replacement="matched"), value, field=FIELD) == expected


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"(a)\1", r"invalid escape sequence: \1"),
        ("x(?=y)", "invalid perl operator: (?="),
        ("(?<!x)y", "invalid perl operator: (?<!"),
        ("a{1001}", "invalid repetition size: {1001}"),
        ("(a", "missing ): (a"),
    ],
)
def test_a_pattern_re2_rejects_is_a_problem_on_the_pattern_field(pattern: str, reason: str) -> None:
    problem = compile_rule(RegexRule(pattern=pattern, replacement="x"), field=FIELD)
    assert problem == Problem(
        field=f"{FIELD}.pattern", message=f'"{pattern}" is not a valid RE2 regular expression: {reason}'
    )


def test_rewriting_with_a_rejected_pattern_is_the_same_problem() -> None:
    rule = RegexRule(pattern=r"(a)\1", replacement="x")
    assert rewrite(rule, "aa", field=FIELD) == compile_rule(rule, field=FIELD)


@pytest.mark.parametrize(
    ("replacement", "groups", "names", "expected"),
    [
        (r"\1-tls", 1, {}, (1, "-tls")),
        (r"\12", 12, {}, (12,)),  # two digits are one group, as in Python
        (r"\g<1>2", 12, {}, (1, "2")),
        (r"\g<n>", 1, {"n": 1}, (1,)),
        (r"a\\b", 0, {}, ("a\\b",)),
        ("plain", 0, {}, ("plain",)),
        ("", 0, {}, ()),
        (r"\2", 1, {}, "invalid group reference 2 at position 0"),
        (r"x\12", 1, {}, "invalid group reference 12 at position 1"),
        (r"\g<m>", 1, {"n": 1}, "unknown group name 'm' at position 0"),
        (r"\g<>", 1, {}, "unknown group name '' at position 0"),
        (r"\0", 1, {}, r"\0 at position 0 is not a group reference; write \\ for a backslash"),
        (r"\n", 1, {}, r"\n at position 0 is not a group reference; write \\ for a backslash"),
        ("x\\", 1, {}, r"a lone \ at the end at position 1 is not a group reference; write \\ for a backslash"),
    ],
)
def test_replacements_are_parsed_into_text_and_groups_or_say_what_is_wrong(
    replacement: str, groups: int, names: dict[str, int], expected: object
) -> None:
    assert parse_replacement(replacement, groups=groups, names=names) == expected


def test_a_go_style_group_reference_says_what_to_write_instead() -> None:
    problem = compile_rule(RegexRule(pattern="^(.*)$", replacement="$1-ca"), field=FIELD)
    assert problem == Problem(
        field=f"{FIELD}.replacement", message=r'"$1-ca" refers to a group as $1; write \1 instead'
    )


def test_values_up_to_the_length_bound_are_rewritten_and_longer_ones_are_a_problem() -> None:
    rule = RegexRule(pattern="a", replacement="b")
    assert rewrite(rule, "a" * MAX_VALUE_LENGTH, field=FIELD) == "b" * MAX_VALUE_LENGTH
    problem = rewrite(rule, "a" * (MAX_VALUE_LENGTH + 1), field=FIELD)
    assert isinstance(problem, Problem) and problem.field == FIELD
    assert f"{MAX_VALUE_LENGTH + 1} characters long" in problem.message
    assert f"at most {MAX_VALUE_LENGTH} characters" in problem.message


def test_a_value_that_is_not_valid_unicode_is_a_problem_not_a_crash() -> None:
    problem = rewrite(RegexRule(pattern="a", replacement="b"), "a\ud800", field=FIELD)
    assert isinstance(problem, Problem) and problem.field == FIELD and "not valid Unicode" in problem.message

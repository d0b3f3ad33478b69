"""Go-template patterns, as PublishedResources of the peer write them: parsed, checked, evaluated.

`{{ .Object.metadata.name | sha3short 10 }}`: text, and actions holding pipelines of fields,
literals and the functions of `template_functions.py`. Only what computed names need is
accepted; everything else (variables, `if`/`range`, unknown fields or functions, a constant of
the wrong type) is refused when the pattern is parsed, so a PublishedResource that can never work
is invalid before any object meets it.

The sandbox: evaluation reads only the context it is given, under the fields the parser
accepted; it has no I/O, no clock and no randomness; every computed value is bounded
(`VALUE_MAX`), the output by the caller's `limit`, and parentheses nest at most `DEPTH_MAX` deep.
As in the peer, the output is trimmed of leading and trailing white space.

Deliberately not here: what a name must look like (`naming.py`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from attrs import frozen

from servlet.core.template_functions import (
    FUNCTIONS,
    GO_SPACE,
    INT,
    MISSING,
    STR,
    Printed,
    TemplateError,
    bounded,
    describe_value,
    printf_verbs,
)

__all__ = ["Template", "TemplateError", "is_template", "parse_template", "render"]

DEPTH_MAX = 8
INT64_MAX = 2**63 - 1
OPEN, CLOSE = "{{", "}}"
# Keywords and Go built-ins that exist in Go templates but are refused here, with why (a word list:
# a literal would take a line per word).
_UNSUPPORTED = frozenset(
    """if else end range with define template block break continue nil true false and or not len index
    slice print println eq ne lt le gt ge html js urlquery call""".split()  # noqa: SIM905
)
# What `{{- ` and ` -}}` trim (Go's lexer: spaces, tabs and line ends only).
_TRIM_MARKER_SPACE = " \t\r\n"
_TOKEN_RE = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<raw>`[^`]*`)
  | (?P<number>[-+]?[0-9]+(?![0-9A-Za-z_.]))
  | (?P<punct>[|()])
""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


@frozen
class Field:
    path: tuple[str, ...]  # root first: ("Object", "metadata", "name")


@frozen
class Constant:
    value: str | int


@frozen
class Call:
    function: str
    args: tuple[Node, ...]  # as written; a piped value comes after them


@frozen
class Pipeline:
    commands: tuple[Node, ...]  # the first may be an operand; the others are calls


Node = Field | Constant | Call | Pipeline
Segment = str | Pipeline  # literal text, or an action's pipeline


@frozen
class Template:
    source: str
    segments: tuple[Segment, ...]

    def fields(self) -> frozenset[str]:
        """The context roots the template reads (`Object`, `ClusterName`, ...)."""
        return frozenset(node.path[0] for node in _walk(self.segments) if isinstance(node, Field))


def is_template(pattern: str) -> bool:
    """Whether `pattern` is a Go template; as in the peer, only `{{` tells (else `$` placeholders)."""
    return OPEN in pattern


def parse_template(source: str, *, fields: Mapping[str, bool]) -> Template:
    """`source` parsed, or TemplateError saying what is refused and where.

    `fields`: the context's roots, each with whether it has fields of its own (`Object` does,
    `ClusterName` is a string).
    """
    segments: list[Segment] = []
    position, trim_next = 0, False
    while (start := source.find(OPEN, position)) >= 0:
        text = source[position:start]
        trim_before = source.startswith("{{- ", start) or source.startswith("{{-\t", start)
        body_start = start + (3 if trim_before else 2)
        end, trim_next_action = _action_end(source, body_start, start=start)
        text = text.lstrip(_TRIM_MARKER_SPACE) if trim_next else text
        text = text.rstrip(_TRIM_MARKER_SPACE) if trim_before else text
        if text:
            segments.append(text)
        body = source[body_start : end - 2 if trim_next_action else end].strip()
        if not (body.startswith("/*") and body.endswith("*/")):
            segments.append(_Parser(body, fields=fields).pipeline_of_action())
        position, trim_next = end + 2, trim_next_action
    tail = source[position:].lstrip(_TRIM_MARKER_SPACE) if trim_next else source[position:]
    if tail:
        segments.append(tail)
    return Template(source=source, segments=tuple(segments))


def render(template: Template, *, context: Mapping[str, object], limit: int) -> str:
    """The template's output for `context`, trimmed; TemplateError when an action fails or the
    output is longer than `limit` characters."""
    # Linear in the context's size: every printed value is either bounded or read from it.
    parts = [
        segment if isinstance(segment, str) else _printed(_evaluate(segment, context)) for segment in template.segments
    ]
    output = "".join(parts).strip(GO_SPACE)
    if len(output) > limit:
        raise TemplateError(f"the output is longer than {limit} characters")
    return output


def _action_end(source: str, body_start: int, *, start: int) -> tuple[int, bool]:
    """Where the action's `}}` is (skipping quoted text) and whether it is a trimming ` -}}`."""
    index, quote = body_start, ""
    while index < len(source):
        char = source[index]
        if quote:
            if char == "\\" and quote == '"':
                index += 1
            elif char == quote:
                quote = ""
        elif char in '"`':
            quote = char
        elif source.startswith(CLOSE, index):
            trims = index - 2 >= body_start and source[index - 1] == "-" and source[index - 2] in " \t\n\r"
            return index, trims
        index += 1
    raise TemplateError(f"unclosed action: '{{{{' at character {start + 1} has no '}}}}'")


class _Parser:
    """Recursive descent over one action's tokens: pipeline := command ('|' command)*."""

    def __init__(self, body: str, *, fields: Mapping[str, bool]) -> None:
        self._tokens = _tokens(body)
        self._index = 0
        self._fields = fields
        self._body = body

    def pipeline_of_action(self) -> Pipeline:
        if not self._tokens:
            raise TemplateError("empty action '{{ }}'")
        pipeline = self._pipeline(depth=0)
        if self._index < len(self._tokens):
            raise TemplateError(f"unexpected {self._tokens[self._index][1]!r} in '{{{{ {self._body} }}}}'")
        return pipeline

    def _peek(self) -> tuple[str, str] | None:
        return self._tokens[self._index] if self._index < len(self._tokens) else None

    def _pipeline(self, *, depth: int) -> Pipeline:
        commands = [self._command(depth=depth, piped=False)]
        while (token := self._peek()) is not None and token == ("punct", "|"):
            self._index += 1
            commands.append(self._command(depth=depth, piped=True))
        return Pipeline(tuple(commands))

    def _command(self, *, depth: int, piped: bool) -> Node:
        token = self._peek()
        if token is None or (token[0] == "punct" and token[1] != "("):
            raise TemplateError(f"missing command in '{{{{ {self._body} }}}}'")
        if token[0] == "ident":
            self._index += 1
            args: list[Node] = []
            while (following := self._peek()) is not None and following[1] not in ("|", ")"):
                args.append(self._operand(depth=depth))
            return _checked_call(token[1], tuple(args), piped=piped)
        if piped:
            raise TemplateError(f"only a function can take a piped value, not {token[1]!r}")
        operand = self._operand(depth=depth)
        if (following := self._peek()) is not None and following[1] not in ("|", ")"):
            raise TemplateError(f"{following[1]!r} cannot be an argument: only a function takes arguments")
        return operand

    def _operand(self, *, depth: int) -> Node:
        token = self._peek()
        assert token is not None  # the callers peeked
        kind, text = token
        self._index += 1
        if kind == "field":
            return self._field(text)
        if kind == "string":
            return Constant(_unquote(text))
        if kind == "raw":
            return Constant(text[1:-1])
        if kind == "number":
            return Constant(_integer(text))
        if kind == "ident":
            raise TemplateError(f"function {text!r} used as an argument; put it in parentheses with its arguments")
        if text == "(":
            if depth >= DEPTH_MAX:
                raise TemplateError(f"parentheses nest deeper than {DEPTH_MAX}")
            inner = self._pipeline(depth=depth + 1)
            if self._peek() != ("punct", ")"):
                raise TemplateError(f"unclosed '(' in '{{{{ {self._body} }}}}'")
            self._index += 1
            return inner
        raise TemplateError(f"unexpected {text!r} in '{{{{ {self._body} }}}}'")

    def _field(self, text: str) -> Field:
        path = tuple(text[1:].split("."))
        if path[0] not in self._fields:
            known = ", ".join(f".{name}" for name in self._fields)
            raise TemplateError(f"unknown field .{path[0]} (known: {known})")
        if len(path) > 1 and not self._fields[path[0]]:
            raise TemplateError(f"{text}: .{path[0]} is a string and has no fields")
        return Field(path)


def _tokens(body: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(body):
        match = _TOKEN_RE.match(body, position)
        if match is None:
            char = body[position]
            why = "variables are not supported" if char == "$" else f"unexpected {char!r}"
            raise TemplateError(f"{why} in '{{{{ {body} }}}}'")
        kind = match.lastgroup
        assert kind is not None
        if kind != "space":
            tokens.append((kind, match.group()))
        position = match.end()
    return tokens


def _integer(text: str) -> int:
    # Go's constants here are ints of 64 bits; a longer literal is refused, never converted.
    value = int(text) if len(text.lstrip("+-")) <= 19 else INT64_MAX + 1
    if not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise TemplateError(f"number {text} is out of range")
    return value


def _unquote(text: str) -> str:
    def escape(match: re.Match[str]) -> str:
        letter = match.group(1)
        if letter not in _ESCAPES:
            raise TemplateError(f"unsupported escape \\{letter} in {text}")
        return _ESCAPES[letter]

    return re.sub(r"\\(.)", escape, text[1:-1])


def _checked_call(name: str, args: tuple[Node, ...], *, piped: bool) -> Call:
    """A call whose arity and constant arguments fit the function (checked before any object)."""
    if name in _UNSUPPORTED:
        raise TemplateError(f"{name!r} is not supported in the servlet's templates")
    function = FUNCTIONS.get(name)
    if function is None:
        raise TemplateError(f"unknown function {name!r} (known: {', '.join(sorted(FUNCTIONS))})")
    count = len(args) + piped
    fixed, variadic = function.params, function.variadic
    most = function.at_most if function.at_most is not None else (len(fixed) if variadic is None else None)
    if count < len(fixed) or (most is not None and count > most):
        wanted = (
            f"{len(fixed)}"
            if most == len(fixed)
            else f"at least {len(fixed)}"
            if most is None
            else f"{len(fixed)} to {most}"
        )
        raise TemplateError(f"{name} takes {wanted} argument(s), got {count}{' (with the piped value)' * piped}")
    for index, arg in enumerate(args):
        kind = fixed[index] if index < len(fixed) else variadic
        if isinstance(arg, Constant) and (
            (kind == STR and not isinstance(arg.value, str)) or (kind == INT and not isinstance(arg.value, int))
        ):
            hint = (
                " (a piped value comes last: write `sha3short .X 8` or `.X | sha3short`)"
                if name == "sha3short" and piped
                else ""
            )
            wanted_kind = "a string" if kind == STR else "a number"
            raise TemplateError(f"{name}: argument {index + 1} must be {wanted_kind}, not {arg.value!r}{hint}")
    if name == "printf":
        _check_printf(args, piped=piped)
    return Call(name, args)


def _check_printf(args: tuple[Node, ...], *, piped: bool) -> None:
    if not args or not isinstance(args[0], Constant) or not isinstance(args[0].value, str):
        raise TemplateError("printf needs its format as a string constant first")
    verbs = printf_verbs(args[0].value)
    given = len(args) - 1 + piped
    if len(verbs) != given:
        raise TemplateError(f"printf format {args[0].value!r} has {len(verbs)} verb(s) for {given} value(s)")


def _evaluate(node: Node, context: Mapping[str, object], final: object = None, *, piped: bool = False) -> object:
    if isinstance(node, Constant):
        return node.value
    if isinstance(node, Field):
        return _lookup(node.path, context)
    if isinstance(node, Pipeline):
        value = _evaluate(node.commands[0], context)
        for command in node.commands[1:]:
            value = _evaluate(command, context, value, piped=True)
        return value
    values = [_evaluate(arg, context) for arg in node.args] + ([final] if piped else [])
    return bounded(node.function, FUNCTIONS[node.function].call(values))


def _lookup(path: tuple[str, ...], context: Mapping[str, object]) -> object:
    """A field's value; a missing key gives MISSING (Go's "no value"), which later keys keep."""
    value: object = context.get(path[0], MISSING)
    for index, key in enumerate(path[1:], start=1):
        if value is MISSING:
            return MISSING
        if not isinstance(value, Mapping):
            where = "." + ".".join(path[:index])
            raise TemplateError(f"cannot read .{key} of {where}, which is {describe_value(value)}")
        value = value.get(key, MISSING)
    return value


def _printed(value: object) -> str:
    if isinstance(value, Printed):
        return value.text
    if value is MISSING:
        return "<no value>"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int)):
        return str(value)
    raise TemplateError(f"cannot print {describe_value(value)}; pick a field that holds text or a number")


def _walk(nodes: tuple[Segment, ...] | tuple[Node, ...]) -> list[Node]:
    found: list[Node] = []
    for node in nodes:
        if isinstance(node, str):
            continue
        found.append(node)
        if isinstance(node, Pipeline):
            found.extend(_walk(node.commands))
        elif isinstance(node, Call):
            found.extend(_walk(node.args))
    return found

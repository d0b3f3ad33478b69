"""Related objects found by a label selector (`object.selector`): the query, and the expansion.

An entry with a selector names no object itself. The caller lists the origin namespace with the
selector's labels (`selector_queries`; what it found goes into `RelatedSnapshot.matched`), and
`expand` turns the entry into one entry per found object, with fixed coordinates on both sides:
the origin name as found, the destination name as the `rewrite` gives it. Everything else (reads,
the three-way sync, records, deleting only what is provably the servlet's) is the planning of any
related object (`related.py`): there is one planning path.

An expanded entry's identifier is the entry's, a dot (never part of an identifier) and a digest
of the origin name, so its record on the local primary outlives the object leaving the selector.
A recorded object not found any more is expanded from its record (origin and copy) and read again:
its copy goes once the origin is confirmed gone, or read and no longer matching. Losing sight of
it (a list or a read that failed) deletes nothing.

Refused as an Error on the primary, for the entry, never settled by a silent choice: two found
objects whose rewrite gives one destination name, or one another entry writes (nothing of the
entry is written), more related objects than `RELATED_OBJECTS_PER_PRIMARY_MAX`, an origin that
could not be listed, labels whose templates give an invalid key or value. While a field the
labels read is not set, the entry is pending: nothing is listed, written or deleted.

Deliberately not here: reading (the caller answers the queries) and planning the objects.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
from attrs import frozen

from servlet.core import metadata, naming, related_templates, rewrite
from servlet.core.actions import Side
from servlet.core.filtering import is_label_key, is_label_value, selector_matches
from servlet.core.model import LabelSelector, Problem, RegexRule, RelatedReference, RelatedResource, ResourceType
from servlet.core.related_objects import (
    Coordinates,
    RelatedKey,
    RelatedSnapshot,
    metadata_of,
    read_platform_state,
    read_service_state,
    resolve_namespace,
    resolve_side,
)
from servlet.core.related_sides import origin_side, type_on, type_problem
from servlet.core.related_types import RELATED_OBJECTS_PER_PRIMARY_MAX
from servlet.core.templates import Template, TemplateError, parse_template, render

VALUE = "Value"
_REWRITE_FIELDS: Mapping[str, bool] = {related_templates.OBJECT: True, related_templates.SIDE: False, VALUE: False}
_DIGEST_LENGTH = 8  # an identifier of 40 characters, a dot and this fit an annotation key's 63

Fixed = tuple[tuple[str, str], tuple[str, str]]


@functools.lru_cache(maxsize=256)
def parsed_rewrite(source: str) -> Template | TemplateError:
    """A rewrite template: `.Value` (the found name), `.Object` (the destination side's primary), `.Side`."""
    try:
        return parse_template(source, fields=_REWRITE_FIELDS)
    except TemplateError as error:
        return error


@frozen
class SelectorQuery:
    """One list the caller answers: the objects of `resource` on `side`, in `namespace`, matching `selector`."""

    identifier: str
    side: Side
    resource: ResourceType
    namespace: str
    selector: LabelSelector


def derived_identifier(identifier: str, origin_name: str) -> str:
    digest = hashlib.sha256(origin_name.encode()).hexdigest()[:_DIGEST_LENGTH]
    return f"{identifier}.{digest}"


def selector_queries(
    related: Iterable[RelatedResource], *, remote: Mapping[str, Any], local: Mapping[str, Any] | None
) -> list[SelectorQuery]:
    """The lists to answer for this primary pair: one per selector entry that can be evaluated now."""
    queries = []
    for index, item in enumerate(related):
        if item.reference.selector is None or local is None or type_problem(item, index=index) is not None:
            continue
        query = selector_query(item, index=index, remote=remote, local=local)
        if isinstance(query, SelectorQuery):
            queries.append(query)
    return queries


def selector_query(
    item: RelatedResource, *, index: int, remote: Mapping[str, Any], local: Mapping[str, Any]
) -> SelectorQuery | Problem | None:
    """The list of one selector entry, evaluated on its origin side's primary; None while pending."""
    selector = item.reference.selector
    assert selector is not None
    side = origin_side(item)
    primary = local if side is Side.LOCAL else remote
    namespace = resolve_namespace(item, index=index, primary=primary, side=side)
    if not isinstance(namespace, str):
        return namespace
    field = f"spec.related[{index}].object.selector.matchLabels"
    labels: dict[str, str] = {}
    for key_source, value_source in selector.match_labels:
        texts = []
        for source, what, valid in ((key_source, "key", is_label_key), (value_source, "value", is_label_value)):
            output = related_templates.rendered(source, primary=primary, side=side)
            if isinstance(output, TemplateError):
                return Problem(
                    field=f"{field}.{key_source}", message=f"cannot be evaluated on the {side.value} side: {output}"
                )
            if "<no value>" in output:
                return None  # a field the template reads is not set yet: pending, as a path is
            if not valid(output):
                return Problem(
                    field=f"{field}.{key_source}",
                    message=f"yields the label {what} {output!r} on the {side.value} side, which is not valid",
                )
            texts.append(output)
        labels[texts[0]] = texts[1]
    return SelectorQuery(
        identifier=item.identifier,
        side=side,
        resource=type_on(item, side),
        namespace=namespace,
        selector=LabelSelector(match_labels=labels, match_expressions=selector.match_expressions),
    )


def matching_names(query: SelectorQuery, objects: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The sorted names of `objects` (any of the origin type) in the query's namespace that match.

    A copy the servlet made (it carries link labels) is never an origin: found, it would be
    copied back to where it came from."""
    return tuple(
        sorted(
            str(metadata_of(obj).get("name"))
            for obj in objects
            if metadata_of(obj).get("namespace") == query.namespace
            and _matches(query, obj)
            and not metadata.link_labels_of(obj)
        )
    )


@frozen
class Expansion:
    """The entries to plan (those given, then one per object found or recorded), the entries'
    errors, and the snapshot with the origins read again but no longer matching taken out."""

    related: tuple[RelatedResource, ...]
    errors: tuple[tuple[RelatedResource, Problem], ...]
    snapshot: RelatedSnapshot


def expand(
    related: Sequence[RelatedResource],
    *,
    remote: Mapping[str, Any],
    local: Mapping[str, Any] | None,
    snapshot: RelatedSnapshot,
    recorded_only: bool = False,
) -> Expansion:
    """Each selector entry's objects as entries of their own (see the module docstring).

    `recorded_only`: only the objects recorded on the local primary (its deletion needs no more).
    """
    if local is None or all(item.reference.selector is None for item in related):
        return Expansion(tuple(related), (), snapshot)
    found_total = sum(len(snapshot.matched.get(item.identifier) or ()) for item in related)
    plain = sum(1 for item in related if item.reference.selector is None)
    expanded: list[RelatedResource] = []
    errors: list[tuple[RelatedResource, Problem]] = []
    not_matching: set[RelatedKey] = set()
    taken = _taken_by_plain_entries(related, remote=remote, local=local)
    for index, item in enumerate(related):
        if item.reference.selector is None or type_problem(item, index=index) is not None:
            continue  # a type problem is reported by the planning of the entry itself
        field = f"spec.related[{index}].object.selector"
        query = selector_query(item, index=index, remote=remote, local=local)
        if not recorded_only and not isinstance(query, SelectorQuery):
            # Labels that cannot be evaluated select nothing and deselect nothing: the copies stay.
            if query is not None:
                errors.append((item, query))
            continue  # None: a field the labels read is not set yet, pending as a path is
        names = () if recorded_only else snapshot.matched.get(item.identifier, ())
        if names is None:
            errors.append((item, Problem(field=field, message=_unlisted(item, query))))
            continue
        if plain + found_total > RELATED_OBJECTS_PER_PRIMARY_MAX and names:
            message = (
                f"finds {len(names)} objects, so this primary would have {plain + found_total} related objects; "
                f"at most {RELATED_OBJECTS_PER_PRIMARY_MAX} are synced per primary, so none of this entry is"
            )
            errors.append((item, Problem(field=field, message=message)))
            continue
        found = (
            _found_entries(item, query, index=index, names=names, remote=remote, local=local)
            if isinstance(query, SelectorQuery)
            else []  # deleting the primary: only what was recorded
        )
        if isinstance(found, Problem):
            errors.append((item, found))
            continue
        clash = next((entry for entry in found if _destination_key(entry) in taken), None)
        if clash is not None:
            namespace, name = _destination(clash)
            message = (
                f"maps an object to {namespace}/{name}, which {taken[_destination_key(clash)]!r} writes too; two "
                "entries cannot share one copy, so none of this entry is synced until the rewrite tells them apart"
            )
            errors.append((item, Problem(field=f"{field}.rewrite", message=message)))
            continue
        taken.update((_destination_key(entry), item.identifier) for entry in found)
        recorded = _recorded_entries(item, local=local, found={entry.identifier for entry in found})
        # A copy that is still another (departed) origin's is deleted first; its new origin takes
        # the name in the next plan, so one plan never both deletes and writes one object.
        leaving = {_destination(entry) for entry in recorded}
        expanded.extend(entry for entry in found if _destination(entry) not in leaving)
        expanded.extend(recorded)
        for entry in recorded:
            key = _origin_key(entry)
            origin = snapshot.objects.get(key)
            if origin is not None and not (isinstance(query, SelectorQuery) and matching_names(query, [origin])):
                not_matching.add(key)
    if not_matching:
        # Read, and no longer selected: for these entries the origin is gone.
        snapshot = attrs.evolve(
            snapshot, objects={key: obj for key, obj in snapshot.objects.items() if key not in not_matching}
        )
    return Expansion((*related, *expanded), tuple(errors), snapshot)


def _unlisted(item: RelatedResource, query: SelectorQuery | Problem | None) -> str:
    where = f" in namespace {query.namespace!r}" if isinstance(query, SelectorQuery) else ""
    return (
        f"could not list the {item.identifier!r} objects on the {origin_side(item).value} side{where}; "
        "their copies are kept and nothing of them is written until they can be"
    )


def _found_entries(
    item: RelatedResource,
    query: SelectorQuery,
    *,
    index: int,
    names: Sequence[str],
    remote: Mapping[str, Any],
    local: Mapping[str, Any],
) -> list[RelatedResource] | Problem:
    if not names:
        return []
    destination_side = Side.REMOTE if query.side is Side.LOCAL else Side.LOCAL
    destination_primary = remote if destination_side is Side.REMOTE else local
    destination_namespace = resolve_namespace(item, index=index, primary=destination_primary, side=destination_side)
    if not isinstance(destination_namespace, str):
        return destination_namespace or Problem(
            field=f"spec.related[{index}].object.namespace", message="is not resolvable yet"
        )
    field = f"spec.related[{index}].object.selector.rewrite"
    by_destination: dict[str, str] = {}
    by_identifier: dict[str, str] = {}
    entries: list[RelatedResource] = []
    for name in names:
        renamed = _rewritten(item, name, primary=destination_primary, side=destination_side, field=field)
        if isinstance(renamed, Problem):
            return renamed
        if renamed in by_destination:
            return Problem(
                field=field,
                message=f"maps both {by_destination[renamed]!r} and {name!r} to {renamed!r}; two objects cannot share "
                "one copy, so none of this entry is synced until the rewrite tells them apart",
            )
        identifier = derived_identifier(item.identifier, name)
        if identifier in by_identifier:
            return Problem(
                field=field,
                message=f"the names {by_identifier[identifier]!r} and {name!r} share a record digest; rename one",
            )
        by_destination[renamed] = by_identifier[identifier] = name
        origin = (query.namespace, name)
        destination = (destination_namespace, renamed)
        fixed = (destination, origin) if query.side is Side.LOCAL else (origin, destination)
        entries.append(_entry(item, identifier, fixed))
    return entries


def _rewritten(
    item: RelatedResource, name: str, *, primary: Mapping[str, Any], side: Side, field: str
) -> str | Problem:
    selector = item.reference.selector
    assert selector is not None
    rule = selector.rewrite
    if isinstance(rule, RegexRule):
        output = rewrite.rewrite(rule, name, field=f"{field}.regex")
        if isinstance(output, Problem):
            return output
    else:
        template = parsed_rewrite(rule)
        if isinstance(template, TemplateError):
            return Problem(field=f"{field}.template", message=str(template))
        try:
            output = render(
                template,
                context={
                    related_templates.OBJECT: primary,
                    related_templates.SIDE: "service" if side is Side.LOCAL else "platform",
                    VALUE: name,
                },
                limit=related_templates.OUTPUT_LIMIT,
            )
        except TemplateError as error:
            return Problem(field=f"{field}.template", message=f"cannot be evaluated for {name!r}: {error}")
    if not naming.is_dns1123_subdomain(output):
        return Problem(field=field, message=f"maps {name!r} to {output!r}, which is not a DNS-1123 subdomain")
    return output


def _recorded_entries(item: RelatedResource, *, local: Mapping[str, Any], found: set[str]) -> list[RelatedResource]:
    """The objects of the entry recorded on the local primary but not found now, from their records."""
    annotations = metadata_of(local).get("annotations")
    prefix = metadata.related_state_annotation(f"{item.identifier}.")
    entries = []
    for key in sorted(annotations if isinstance(annotations, Mapping) else ()):
        identifier = key[len(metadata.related_state_annotation("")) :]
        if not key.startswith(prefix) or identifier in found:
            continue
        fixed: Fixed
        if origin_side(item) is Side.LOCAL:
            service = read_service_state(local, identifier)
            if service is None or service.origin is None:
                continue
            fixed = (_pair(service.coordinates), _pair(service.origin))
        else:
            platform = read_platform_state(local, identifier)
            if platform is None:
                continue
            fixed = (_pair(platform.origin), _pair(platform.copy))
        entries.append(_entry(item, identifier, fixed))
    return entries


def _pair(coordinates: Coordinates) -> tuple[str, str]:
    return (coordinates.namespace, coordinates.name)


def _entry(item: RelatedResource, identifier: str, fixed: Fixed) -> RelatedResource:
    return attrs.evolve(item, identifier=identifier, reference=RelatedReference(name="", object_form=True, fixed=fixed))


def _destination(entry: RelatedResource) -> tuple[str, str]:
    fixed = entry.reference.fixed
    assert fixed is not None
    return fixed[1] if origin_side(entry) is Side.REMOTE else fixed[0]


def _destination_key(entry: RelatedResource) -> tuple[ResourceType, str, str]:
    side = Side.REMOTE if origin_side(entry) is Side.LOCAL else Side.LOCAL
    return (type_on(entry, side), *_destination(entry))


def _taken_by_plain_entries(
    related: Sequence[RelatedResource], *, remote: Mapping[str, Any], local: Mapping[str, Any]
) -> dict[tuple[ResourceType, str, str], str]:
    """Where the entries without a selector write, by destination type and coordinates."""
    taken: dict[tuple[ResourceType, str, str], str] = {}
    for index, item in enumerate(related):
        if item.reference.selector is not None or type_problem(item, index=index) is not None:
            continue
        side = Side.REMOTE if origin_side(item) is Side.LOCAL else Side.LOCAL
        coordinates = resolve_side(item, index=index, primary=remote if side is Side.REMOTE else local, side=side)
        if isinstance(coordinates, Coordinates):
            taken[(type_on(item, side), coordinates.namespace, coordinates.name)] = item.identifier
    return taken


def _origin_key(entry: RelatedResource) -> RelatedKey:
    fixed = entry.reference.fixed
    assert fixed is not None
    side = origin_side(entry)
    namespace, name = fixed[1] if side is Side.LOCAL else fixed[0]
    return RelatedKey(side, type_on(entry, side), namespace, name)


def _matches(query: SelectorQuery, obj: Mapping[str, Any]) -> bool:
    labels = metadata_of(obj).get("labels")
    return selector_matches(query.selector, labels if isinstance(labels, Mapping) else {})

"""The cache diagnostic of every request on every route, in one pass that costs each request only
what it adds: the fast path of `app.report.model.iter_reports` for the sums of `app.report.cost`.

A request whose messages are the previous request's plus more, in the same sequence and with the
same settings, usually gets, on each route, the previous body's messages plus the wire form of
what it adds: its new conversation messages and, where the route carries tool changes in the
history, its new update groups. Each reaches the chat and Anthropic wires converted on its own,
so the new body's rendering for the cache is the previous one's plus theirs, and only the head —
the up-front tools, Anthropic's system text — may differ (a tool change on a route that declares
the current tools). The scan works the diagnostic out from lengths: the previous rendering's, the
added messages' and, when the head changed, the two heads' (their common start is the cached
part; they are a few tools long). Appended user, assistant and tool-result messages under the
same header and tool history need no projection at all. Routes whose bodies are the same for the
cache (a class: the same wire family, reasoning field and tool-update mode) are worked out once,
and what the routes of one request work out alike is shared (`_Shared`).

Any other request (the first, a compaction, a new sequence, other settings, a body the previous
one could not be extended into) is worked out by the reference, `app.report.model`. A property
test holds the two to the same answer on generated logs (`tests/unit/report/test_cache_scan.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from operator import is_
from typing import Any

from app.llm.anthropic.body import WirePlacementError
from app.llm.deepseek.body import WireRequest
from app.llm.dispatch import build_wire, check_wire_placement, conversation_wire
from app.llm.prefix import KEPT, PrefixResult, cache_head_chunks, common_prefix_length, message_length, prefix_kept, rendered_length
from app.llm.projection import ProjectedRequest, project_split, split_messages
from app.llm.routes import Route
from app.report.cache import CacheDiagnostic, diagnose, diagnose_broken, diagnose_kept, gap_ms, outlived
from app.report.model import RouteReport, route_report
from app.session.view import ModelRequest
from app.session.view_items import AssistantItem, Message, ToolResultItem, UserItem

_APPENDED = (UserItem, AssistantItem, ToolResultItem)
"""The messages a request may add to the previous one's and still extend every body unprojected."""


class _Shared:
    """What the routes of one request share, worked out once: the added messages' wire form and
    rendered length, new heads, and the diagnostics of kept prefixes, each by what decides it."""

    __slots__ = ("converted", "heads", "kept", "gap")

    def __init__(self, gap: int | None) -> None:
        self.gap = gap
        """Since the previous request's answer (`gap_ms`)."""
        self.converted: dict[tuple[Any, ...], tuple[list[dict[str, Any]], int]] = {}
        self.heads: list[tuple[tuple[Any, ...], dict[str, Any], list[str]]] = []
        """(what decides it, the head's body parts, its rendering): looked up by equality (a
        projection's declarations are new objects on every route)."""
        self.kept: dict[tuple[bool, bool, int, int], CacheDiagnostic] = {}


@dataclass(slots=True)
class _RouteState:
    """What the next request on a route is compared with."""

    body: dict[str, Any] | None
    """The previous request's body on the route, as far as the cache sees it (its up-front tools,
    Anthropic's system text and its messages, a list the scan owns and appends to); None: it could
    not be sent."""
    rendered: int
    """The length of that body's rendering for the cache."""
    head: int
    """The length of its head's rendering (`cache_head_chunks`)."""
    projected: ProjectedRequest | None
    """The last projection worked out in full on the route."""
    conversation: int
    """How many conversation messages the body carries (those of `projected`, and appended ones)."""


def scan_caches(
    requests: Iterable[ModelRequest], routes: Sequence[Route]
) -> Iterator[tuple[ModelRequest, tuple[CacheDiagnostic | None, ...]]]:
    """Each request with its diagnostic on each route (in `routes` order; None for a body that
    could not be sent), as `iter_reports` would give them; the requests are read once, in order.

    Routes whose bodies are the same (`_body_class`) share one state: their diagnostics differ
    only by which of them ran the request and by their TTLs, applied per route at the end."""
    classes = _body_classes(routes)
    states: list[_RouteState | None] = [None] * len(classes)
    previous: ModelRequest | None = None
    for request in requests:
        appended = _appended(previous, request)
        grown = appended is None and _grown(previous, request)
        split = split_messages(request.messages) if grown else None
        shared = _Shared(gap_ms(previous, request))
        diagnostics: list[CacheDiagnostic | None] = [None] * len(routes)
        for number, members in enumerate(classes):
            state = states[number]
            route = routes[members[0]]
            measured = None
            if state is not None and state.body is not None:
                if appended is not None:
                    measured = _extended(state, route, appended, shared)
                elif split is not None:
                    measured = _regrown(state, request, route, split, shared)
            if measured is not None:
                assert previous is not None
                for index in members:
                    diagnostics[index] = _diagnosed(measured, shared, request, previous, routes[index])
                continue
            previous_wire = WireRequest(state.body, {}, ()) if state is not None and state.body is not None else None
            characters = state.rendered if previous_wire is not None and state is not None else None
            report = route_report(request, route, previous_wire, previous, first=state is None, previous_characters=characters)
            states[number] = _taken(report.wire, report.projected, report.cache, route)
            for index in members:
                diagnostics[index] = _alike(report, routes[index], request, previous, previous_wire, characters)
        yield request, tuple(diagnostics)
        previous = request


def _body_classes(routes: Sequence[Route]) -> list[list[int]]:
    """The indexes of `routes`, grouped by `_body_class`, each group in order."""
    classes: dict[tuple[object, ...], list[int]] = {}
    for index, route in enumerate(routes):
        classes.setdefault(_body_class(route), []).append(index)
    return list(classes.values())


def _body_class(route: Route) -> tuple[object, ...]:
    """What decides the part of a route's bodies the cache sees: the projection (the tool-update
    mode, whether the route sends updates and keeps its system text in the history) and the wire
    (its family, the field past reasoning goes back in). The model, the id and the settings are
    the body's other fields."""
    return (_wire_family(route), route.reasoning_history, route.tool_update, route.sends_tool_updates, route.system_in_history)


def _alike(
    report: RouteReport,
    route: Route,
    request: ModelRequest,
    previous: ModelRequest | None,
    previous_wire: WireRequest | None,
    characters: int | None,
) -> CacheDiagnostic | None:
    """The diagnostic on `route` of a request whose body the reference built for another route of
    its class (`report`): the same, unless the two differ in having run it or in their TTLs."""
    if report.wire is None or report.cache is None:
        return None
    ran_here = request.route == route.id
    if route is report.route or (ran_here == (request.route == report.route.id) and route.cache_ttl == report.route.cache_ttl):
        return report.cache
    return diagnose(
        body=report.wire.body,
        previous_body=previous_wire.body if previous_wire is not None else None,
        prefix=report.prefix,
        dialect=route.dialect,
        request=request,
        previous=previous,
        ran_here=ran_here,
        ttl_seconds=route.cache_ttl,
        previous_characters=characters,
    )


def _taken(
    wire: WireRequest | None, projected: ProjectedRequest, cache: CacheDiagnostic | None, route: Route
) -> _RouteState:
    """The state after a request the reference worked out: its body's parts the cache sees, the
    messages copied once (the scan appends to them)."""
    if wire is None:
        return _RouteState(None, 0, 0, projected, 0)
    body = _cache_part(wire.body, list(wire.body.get("messages") or ()))
    head = rendered_length(cache_head_chunks(body, route.dialect))
    rendered = cache.characters if cache is not None else 0
    return _RouteState(body, rendered, head, projected, len(projected.conversation))


def _appended(previous: ModelRequest | None, request: ModelRequest) -> tuple[Any, ...] | None:
    """The messages `request` adds to `previous`'s, when it only adds user, assistant and tool-result
    messages under the same header; else None."""
    if previous is None or request.header is None or request.header_seq != previous.header_seq:
        return None
    before, after = previous.messages, request.messages
    count = len(before)
    if len(after) < count or (count and after[count - 1] != before[count - 1]):
        return None
    added = tuple(after[index] for index in range(count, len(after)))
    if not all(isinstance(item, _APPENDED) for item in added):
        return None
    if replace(request.history, last_seq=previous.history.last_seq) != previous.history:
        return None  # (`last_seq` only says up to where the snapshot was folded)
    return added


def _grown(previous: ModelRequest | None, request: ModelRequest) -> bool:
    """Whether `request`'s messages are `previous`'s (the same objects) and more, in the same
    sequence with the same settings: its bodies may extend the previous ones."""
    if previous is None or request.header is None or previous.header is None:
        return False
    if request.header.sequence != previous.header.sequence or request.header.config != previous.header.config:
        return False
    before, after = previous.messages, request.messages
    return len(after) >= len(before) and all(map(is_, before, after))


def _extended(state: _RouteState, route: Route, added: tuple[Message, ...], shared: _Shared) -> _Measured | None:
    """A request whose body is the previous one plus `added`'s wire form; None when the wire would
    not simply append them (the reference decides then)."""
    key = (_wire_family(route), route.reasoning_history)
    converted = shared.converted
    if key not in converted:
        converted[key] = _converted(ProjectedRequest(route.id, "", (), added, (), None, None), route)
    wire, length = converted[key]
    appended = _appending(state, wire, length)
    if appended is None:
        return None
    state.conversation += len(added)
    return _Measured(KEPT, *appended)


def _regrown(
    state: _RouteState,
    request: ModelRequest,
    route: Route,
    split: tuple[tuple[Message, ...], dict[str, int]],
    shared: _Shared,
) -> _Measured | None:
    """A request whose messages extend the previous one's (`_grown`) on a route
    whose new projection keeps the previous one's messages and update groups: the body is the
    previous messages plus the new ones' wire form, under a head that may have changed. None when
    the projection does not keep them, or the wire would not simply append (the reference
    decides then)."""
    before = state.projected
    assert before is not None and state.body is not None and request.header is not None
    after = project_split(split, request.history, route, header=request.header)
    anthropic = route.dialect == "anthropic-messages"
    if after.fallback != before.fallback or (not anthropic and after.system != before.system):
        return None
    count, kept_groups = state.conversation, len(before.groups)
    if after.groups[:kept_groups] != before.groups or any(group.position < count for group in after.groups[kept_groups:]):
        return None
    new_groups = tuple(replace(group, position=group.position - count) for group in after.groups[kept_groups:])
    key = (_wire_family(route), route.reasoning_history, count, new_groups)
    converted = shared.converted
    if key not in converted:
        part = ProjectedRequest(route.id, "", (), after.conversation[count:], new_groups, None, None)
        converted[key] = _converted(part, route)
    wire, length = converted[key]
    messages: list[dict[str, Any]] = state.body["messages"]
    if new_groups:
        try:
            check_wire_placement([*messages, *wire], route)
        except WirePlacementError:
            return None
    head_body, head_chunks = state.body, None
    if after.declarations != before.declarations or (anthropic and after.system != before.system):
        head, head_chunks = _head(shared, route, after, request.header.config)
        head_body = {**head, "messages": messages}
    prefix = KEPT if head_chunks is None else prefix_kept({**state.body, "messages": []}, head, route.dialect)
    head_length = rendered_length(head_chunks) if head_chunks is not None else state.head
    if prefix.kept and head_length != state.head:
        return None
    previous_head = state.head
    previous_body = state.body
    appended = _appending(state, wire, length)
    if appended is None:
        return None
    rendered, cached = appended
    rendered += head_length - previous_head
    state.rendered = rendered
    state.head = head_length
    state.projected = after
    state.conversation = len(after.conversation)
    state.body = head_body
    if prefix.kept:
        return _Measured(prefix, rendered, cached)
    assert head_chunks is not None
    common = common_prefix_length(cache_head_chunks(previous_body, route.dialect), head_chunks)
    return _Measured(prefix, rendered, common, (head_body, previous_body))


@dataclass(frozen=True, slots=True)
class _Measured:
    """What a body class's new body is to the cache: the prefix checker's answer, the rendering's
    length and the part the previous rendering covers; for a broken prefix, the new and previous
    bodies (the cause reads their heads)."""

    prefix: PrefixResult
    rendered: int
    cached: int
    bodies: tuple[dict[str, Any], dict[str, Any]] | None = None


def _diagnosed(measured: _Measured, shared: _Shared, request: ModelRequest, previous: ModelRequest, route: Route) -> CacheDiagnostic:
    """The diagnostic on `route` of a request its class measured."""
    if measured.bodies is None:
        return _kept(shared, request, previous, route, measured.rendered, measured.cached)
    body, previous_body = measured.bodies
    return diagnose_broken(
        prefix=measured.prefix,
        body=body,
        previous_body=previous_body,
        request=request,
        previous=previous,
        ran_here=request.route == route.id,
        rendered=measured.rendered,
        cached=measured.cached,
    )


def _kept(shared: _Shared, request: ModelRequest, previous: ModelRequest, route: Route, rendered: int, cached: int) -> CacheDiagnostic:
    """`diagnose_kept` on `route`, shared by the routes of the request it would give the same (the
    TTL counts only by whether the gap outlived it)."""
    key = (request.route == route.id, outlived(shared.gap, route.cache_ttl or 0), rendered, cached)
    diagnostic = shared.kept.get(key)
    if diagnostic is None:
        diagnostic = shared.kept[key] = diagnose_kept(
            prefix=KEPT,
            request=request,
            previous=previous,
            ran_here=key[0],
            ttl_seconds=route.cache_ttl or 0,
            rendered=rendered,
            cached=cached,
        )
    return diagnostic


def _head(shared: _Shared, route: Route, projected: ProjectedRequest, config: Any) -> tuple[dict[str, Any], list[str]]:
    """The up-front tools and top system text `route` sends for `projected` (no messages), and
    their rendering for the cache; shared by the routes of the request whose wire makes the same."""
    anthropic = route.dialect == "anthropic-messages"
    decided = (anthropic, projected.system if anthropic else None, projected.declarations)
    for key, head, chunks in shared.heads:
        if key == decided:
            return head, chunks
    part = ProjectedRequest(route.id, projected.system, projected.declarations, (), (), None, None)
    head = _cache_part(build_wire(part, route, config).body, [])
    chunks = cache_head_chunks(head, route.dialect)
    shared.heads.append((decided, head, chunks))
    return head, chunks


def _wire_family(route: Route) -> str:
    """Routes of one family convert a message alike (the offline and openai-sdk routes speak the
    chat wire)."""
    return "anthropic-messages" if route.dialect == "anthropic-messages" else "chat"


def _cache_part(body: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
    """What the cache sees of a body (its up-front tools, Anthropic's system text), with `messages`."""
    return {**{key: body[key] for key in ("tools", "system") if key in body}, "messages": messages}


def _converted(part: ProjectedRequest, route: Route) -> tuple[list[dict[str, Any]], int]:
    messages = conversation_wire(part, route)
    return messages, sum(map(message_length, messages))


def _appending(state: _RouteState, wire: list[dict[str, Any]], length: int) -> tuple[int, int] | None:
    """Append `wire` (rendered `length` long) to the state's messages: the new rendering's length
    and how much of it the previous rendering covers; None (nothing changed) when the wire would
    merge its first message into the last one."""
    assert state.body is not None
    messages: list[dict[str, Any]] = state.body["messages"]
    if messages and wire and messages[-1].get("role") == wire[0].get("role"):
        return None  # the Anthropic wire would merge the two into one message
    rendered = state.rendered + length + (2 * (len(wire) - (0 if messages else 1)) if wire else 0)
    # The new rendering differs from the previous one where the latter closes its lists ("]]"),
    # unless nothing was added (a retried request).
    cached = state.rendered - 2 if wire else state.rendered
    messages.extend(wire)
    state.rendered = rendered
    return rendered, cached

"""The cache diagnostic of every request on every route, in one pass that costs each request only
what it adds: the fast path of `app.report.model.iter_reports` for the sums of `app.report.cost`.

Between two requests made under the same header, whose messages are the previous ones plus user,
assistant and tool-result messages, every route's projection is the same but for those messages,
and each of them reaches the chat and Anthropic wires converted on its own. So the body is the
previous body plus the new messages' wire form, its prefix is kept, its rendering for the cache
grows by theirs, and the cache can serve all of the previous rendering. Any other request (the
first, a header change, a compaction, a developer message, a body the previous one could not be
extended into) is worked out by the reference, `app.report.model`. A property test holds the two
to the same answer on generated logs (`tests/unit/report/test_cache_scan.py`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.llm.deepseek.body import WireRequest
from app.llm.dispatch import build_wire
from app.llm.prefix import KEPT
from app.llm.projection import ProjectedRequest
from app.llm.routes import Route
from app.report.cache import CacheDiagnostic, diagnose_kept
from app.report.model import route_report
from app.session.view import ModelRequest
from app.session.view_items import AssistantItem, ToolResultItem, UserItem

_APPENDED = (UserItem, AssistantItem, ToolResultItem)
"""The messages a request may add to the previous one's and still extend every body."""


@dataclass(slots=True)
class _RouteState:
    """What the next request on a route is compared with."""

    wire: WireRequest | None
    """The previous request's body on the route (None: it could not be sent)."""
    rendered: int
    """The length of that body's rendering for the cache."""


def scan_caches(
    requests: Sequence[ModelRequest], routes: Sequence[Route]
) -> Iterator[tuple[ModelRequest, tuple[CacheDiagnostic | None, ...]]]:
    """Each request with its diagnostic on each route (in `routes` order; None for a body that
    could not be sent), as `iter_reports` would give them."""
    states: list[_RouteState | None] = [None] * len(routes)
    previous: ModelRequest | None = None
    for position in range(len(requests)):
        request = requests[position]
        appended = _appended(previous, request)
        converted: dict[tuple[str, str], tuple[list[dict[str, Any]], int]] = {}
        """The appended messages' wire form and rendered length, once per wire (routes share it)."""
        diagnostics: list[CacheDiagnostic | None] = []
        for index, route in enumerate(routes):
            state = states[index]
            if appended is not None and state is not None and state.wire is not None:
                diagnostic = _extended(state, request, previous, route, appended, converted)  # type: ignore[arg-type]
                if diagnostic is not None:
                    diagnostics.append(diagnostic)
                    continue
            report = route_report(
                request,
                route,
                state.wire if state is not None else None,
                previous,
                first=state is None,
                previous_characters=state.rendered if state is not None and state.wire is not None else None,
            )
            states[index] = _RouteState(report.wire, report.cache.characters if report.cache is not None else 0)
            diagnostics.append(report.cache)
        yield request, tuple(diagnostics)
        previous = request


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


def _extended(
    state: _RouteState,
    request: ModelRequest,
    previous: ModelRequest,
    route: Route,
    added: tuple[Any, ...],
    converted: dict[tuple[str, str], tuple[list[dict[str, Any]], int]],
) -> CacheDiagnostic | None:
    """The diagnostic of a request whose body is the previous one plus `added`'s wire form; None
    when the wire would not simply append them (the reference decides then)."""
    assert state.wire is not None and request.header is not None
    key = ("deepseek-chat" if route.dialect == "offline" else route.dialect, route.reasoning_history)
    if key not in converted:
        alone = ProjectedRequest(route.id, "", (), added, (), None, None)
        messages_alone = build_wire(alone, route, request.header.config).body["messages"]
        converted[key] = (messages_alone, sum(len(json.dumps(message, sort_keys=True)) for message in messages_alone))
    wire, length = converted[key]
    body = state.wire.body
    messages = body.get("messages") or []
    if messages and wire and messages[-1].get("role") == wire[0].get("role"):
        return None  # the Anthropic wire would merge the two into one message
    rendered = state.rendered + length + (2 * (len(wire) - (0 if messages else 1)) if wire else 0)
    # The new rendering differs from the previous one where the latter closes its lists ("]]"),
    # unless nothing was added (a retried request).
    cached = state.rendered - 2 if wire else state.rendered
    state.wire = WireRequest({**body, "messages": [*messages, *wire]}, state.wire.headers, state.wire.group_indexes)
    state.rendered = rendered
    return diagnose_kept(
        prefix=KEPT,
        request=request,
        previous=previous,
        ran_here=request.route == route.id,
        ttl_seconds=route.cache_ttl or 0,
        rendered=rendered,
        cached=cached,
    )

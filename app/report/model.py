"""What each route receives for each model request: the one report model every view renders.

For every logged model request (or just request N) and every route of the catalog (or the ones
named), the request is projected for the route, rendered as that route's wire body, and compared
with the previous request's body on the same route. Bodies are built exactly as the agent builds
them (`app.llm.dispatch.build_wire`): `openai-sdk` routes show the chat-completions body the openai
client sends, `offline` routes the deepseek-chat body the offline model reads.

Textual-free and text-free: the renderers (`app.report.text`, `.json`, `.markdown`, `.html`, the
TUI inspector) word and lay it out; none of them recomputes it.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from app.llm.anthropic.body import WirePlacementError
from app.llm.deepseek.body import WireRequest
from app.llm.dispatch import build_wire
from app.llm.prefix import PrefixResult, prefix_kept
from app.llm.projection import ProjectedRequest, project_request
from app.llm.routes import Route
from app.report.cache import CacheDiagnostic, diagnose
from app.session.events import ToolDefinition
from app.session.view import ModelRequest


@dataclass(frozen=True, slots=True)
class RouteReport:
    route: Route
    projected: ProjectedRequest
    wire: WireRequest | None
    """None when the body broke a placement rule (`error` says which): it would never be sent."""
    error: str | None
    prefix: PrefixResult
    previous_body: dict[str, Any] | None = None
    """The previous request's body on this route (None: first request, or it was not sendable)."""
    cache: CacheDiagnostic | None = None
    """Whether the route's prompt cache serves the request, and why not (None: never sendable)."""

    @property
    def blocks(self) -> list[tuple[Any, int | None]]:
        """Each block with the index in `messages` of the system message carrying it (None: no
        body)."""
        indexes = self.wire.group_indexes if self.wire is not None else (None,) * len(
            self.projected.groups
        )
        return [
            (block, index)
            for group, index in zip(self.projected.groups, indexes, strict=True)
            for block in group.blocks
        ]

    @property
    def beta(self) -> str | None:
        """The header line as sent (`name: value`): a route may configure the header's name too."""
        if self.wire is None or not self.wire.headers:
            return None
        return ", ".join(f"{name}: {value}" for name, value in self.wire.headers.items())

    def carries(self, change: ToolChange | None) -> ChangeOnRoute | None:
        """What this route made of the request's tool change (None: the first request, no change,
        a fallback or an unsendable body, where the change is not what shaped the route)."""
        if change is None or change.first or not change.changed:
            return None
        if self.projected.fallback is not None or self.error is not None:
            return None
        declared = {declaration.tool.name: declaration for declaration in self.projected.declarations}
        added_by_block = {
            block.name for block, _position in self.blocks if block.kind == "tool_addition"
        }

        def added(*, deferred: bool, block: bool) -> tuple[str, ...]:
            return tuple(
                name
                for name in change.added
                if name in declared
                and declared[name].defer_loading is deferred
                and (name in added_by_block) is block
            )

        return ChangeOnRoute(
            added_deferred=added(deferred=True, block=True),
            added_again=added(deferred=False, block=True),
            added_up_front=added(deferred=False, block=False),
            removed_retained=tuple(name for name in change.removed if name in declared),
            removed_undeclared=tuple(name for name in change.removed if name not in declared),
            redefined=change.redefined,
        )

    def same_summary_as(self, other: RouteReport) -> bool:
        """Whether the summary (prefix, beta header, fallback, declarations, blocks and where they
        sit in the body) is the same as `other`'s: only the model, endpoint and name differ."""
        return self._summary() == other._summary()

    def _summary(self) -> tuple[object, ...]:
        projected = self.projected
        positions = self.wire.group_indexes if self.wire is not None else None
        return (
            projected.declarations,
            projected.groups,
            projected.fallback,
            positions,
            self.beta,
            self.prefix,
            self.error,
        )

    def body_diff(self) -> list[str]:
        """A unified diff of this body against the previous request's body on the same route
        (pretty-printed JSON, 3 lines of context); empty when either is missing or they are equal.
        Computed on demand: most views never show it."""
        if self.wire is None or self.previous_body is None:
            return []
        return list(
            difflib.unified_diff(
                _pretty(self.previous_body),
                _pretty(self.wire.body),
                "previous",
                "this",
                lineterm="",
            )
        )


@dataclass(frozen=True, slots=True)
class ToolChange:
    """How the tools in force changed since the previous request (by the request headers).

    `first` is set on the first request (nothing to compare with); `redefined` names tools kept
    under the same name with another definition."""

    first: bool
    tools: tuple[str, ...]
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    redefined: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed or self.redefined)


@dataclass(frozen=True, slots=True)
class ChangeOnRoute:
    """Where each tool of a request's change ended up on one route (`RouteReport.carries`)."""

    added_deferred: tuple[str, ...] = ()
    """Declared with `defer_loading`; an addition block makes each available."""
    added_again: tuple[str, ...] = ()
    """Declared up front, with an addition block (a removed tool that was kept declared)."""
    added_up_front: tuple[str, ...] = ()
    """Declared up front, no block: the route sends no updates, or the tool left the
    declarations with its removal and comes back among them."""
    removed_retained: tuple[str, ...] = ()
    """Still declared; a removal block takes each away (in-history)."""
    removed_undeclared: tuple[str, ...] = ()
    """No longer declared; no removal block says so."""
    redefined: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RequestReport:
    request: ModelRequest
    routes: tuple[RouteReport, ...]
    tool_change: ToolChange | None = None


def inspect_requests(
    requests: Sequence[ModelRequest], routes: Sequence[Route], *, only: int | None = None
) -> list[RequestReport]:
    return list(iter_reports(requests, routes, only=only))


def iter_reports(
    requests: Sequence[ModelRequest], routes: Sequence[Route], *, only: int | None = None
) -> Iterator[RequestReport]:
    """Reports for every request (or request number `only`) on every route, one at a time, so a
    long session's report can be written as it is built.

    The prefix of a request is compared with the previous request's body on the same route, so
    that one is rendered too even when only one request is reported.
    """
    first = 0 if only is None else max(only - 2, 0)
    last = len(requests) if only is None else only
    previous: dict[str, WireRequest | None] = {}
    characters: dict[str, int | None] = {}  # each previous body's rendering length, from its diagnostic
    earlier: ModelRequest | None = requests[first - 1] if first > 0 else None
    for request in _requests_between(requests, first, last):
        route_reports = []
        for route in routes:
            if route.id in previous:
                report = route_report(request, route, previous[route.id], earlier, previous_characters=characters[route.id])
            else:
                report = route_report(request, route, None, None, first=True)
            previous[route.id] = report.wire
            characters[route.id] = report.cache.characters if report.cache is not None else None
            route_reports.append(report)
        if only is None or request.index == only:
            yield RequestReport(request, tuple(route_reports), tool_change(earlier, request))
        earlier = request


def report_after(
    request: ModelRequest, route: Route, earlier: ModelRequest | None, previous: RouteReport | None
) -> RouteReport:
    """`request`'s report on `route` after `earlier` (the previous request, None for the first),
    whose report on `route` was `previous`: one step of `iter_reports`, for a view that takes
    requests one at a time (the trajectory's marks, the status line's totals)."""
    if earlier is None:
        return route_report(request, route, None, None, first=True)
    if previous is None or previous.wire is None:
        return route_report(request, route, None, earlier)
    characters = previous.cache.characters if previous.cache is not None else None
    return route_report(request, route, previous.wire, earlier, previous_characters=characters)


def _requests_between(
    requests: Sequence[ModelRequest], first: int, last: int
) -> Iterator[ModelRequest]:
    """`requests[first:last]` one at a time: a lazy sequence builds each request only when asked."""
    for position in range(first, last):
        yield requests[position]


def tool_change(previous: ModelRequest | None, request: ModelRequest) -> ToolChange:
    """The answer to "what changed in the tools since the previous request"."""
    now = _tools(request)
    if previous is None:
        return ToolChange(first=True, tools=tuple(now))
    before = _tools(previous)
    return ToolChange(
        first=False,
        tools=tuple(now),
        added=tuple(name for name in now if name not in before),
        removed=tuple(name for name in before if name not in now),
        redefined=tuple(name for name in now if name in before and before[name] != now[name]),
    )


def _tools(request: ModelRequest) -> dict[str, ToolDefinition]:
    tools = request.header.tools if request.header is not None else ()
    return {definition.name: definition for definition in tools}


def route_report(
    request: ModelRequest,
    route: Route,
    previous: WireRequest | None,
    earlier: ModelRequest | None,
    *,
    first: bool = False,
    previous_characters: int | None = None,
) -> RouteReport:
    """`previous` is the previous request's body on `route` (None when it could not be built),
    `earlier` the previous request; `previous_characters` the length of `previous`'s rendering for
    the cache, when its diagnostic gave it."""
    projected = project_request(request, route)
    config = request.header.config if request.header is not None else {}
    try:
        wire = build_wire(projected, route, config)
    except WirePlacementError as error:
        return RouteReport(route, projected, None, str(error), PrefixResult(False, None))
    if first:
        prefix = PrefixResult(True, None)
    elif previous is None:
        # The previous body was never sendable, so nothing of it was cached.
        prefix = PrefixResult(False, None)
    else:
        prefix = prefix_kept(previous.body, wire.body, route.dialect)
    previous_body = previous.body if previous is not None else None
    cache = diagnose(
        body=wire.body,
        previous_body=previous_body,
        prefix=prefix,
        dialect=route.dialect,
        request=request,
        previous=earlier,
        ran_here=request.route == route.id,
        ttl_seconds=route.cache_ttl,
        previous_characters=previous_characters,
    )
    return RouteReport(route, projected, wire, None, prefix, previous_body, cache)


def _pretty(body: dict[str, Any]) -> list[str]:
    return json.dumps(body, ensure_ascii=False, indent=2).splitlines()

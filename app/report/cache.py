"""Would a route's prompt cache serve a request, and if not, why: the cache diagnostic of the
report model (DESIGN §14). Computed once per request and route, from the bodies the report already
built; every view words it (`app.report.wording`).

`kept` is the prefix checker's answer (`app.llm.prefix`): the request's body extends the previous
one on the route. A request is served from cache when its prefix is kept, the route's cache was
used last on this very route and model, and no longer ago than the route's TTL. Otherwise `cause`
names the first reason, in this order:

1. `initial` — nothing was sent on the route before (the first request, or the previous body
   could not be sent): the cache is written, not read.
2. `route-switched` — the route that ran this request is not the one that ran the previous one:
   its cache holds nothing of the previous request.
3. When the prefix is broken: `history-rewritten` for a compaction (a new sequence that starts with
   a summary), `new-sequence` for an explicit one (`/new-sequence`); `system-changed` when the
   bodies first differ at the top system text; `deferred-tool-loaded` when a tool the previous body
   deferred is now declared up front; `tools-changed` when the declarations differ (added, removed,
   redefined, or only reordered up front, with the tools named) — also when the break is in the
   messages, where an addition-only route drops the addition block of a tool removed since; else
   `history-rewritten` (a message edited or dropped).
4. `cache-expired` — the prefix is kept, but the gap since the previous request's answer is longer
   than the route's cache TTL.

Tokens are estimated from the body as the provider renders it for its cache — the up-front tools,
the top system text, the messages, as compact JSON — at 4 characters a token (calibrated per
session against the usage the route that ran recorded; see docs/cost.md). The part served from
cache is the common start of that rendering with the previous request's, when the cache was there
to serve it; the rest is sent uncached.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from app.llm.prefix import (
    PrefixResult,
    cache_chunks,
    cache_head_chunks,
    common_prefix_length,
    message_length,
    message_text,
    rendered_length,
)
from app.llm.routes import Dialect
from app.session.view import ModelRequest
from app.session.view_items import AssistantItem, SummaryItem

CHARS_PER_TOKEN = 4


class CacheCause(StrEnum):
    """Why a request is not served from a route's cache: stable ids for scripts (`--json`)."""

    INITIAL = "initial"
    ROUTE_SWITCHED = "route-switched"
    NEW_SEQUENCE = "new-sequence"
    TOOLS_CHANGED = "tools-changed"
    DEFERRED_TOOL_LOADED = "deferred-tool-loaded"
    SYSTEM_CHANGED = "system-changed"
    HISTORY_REWRITTEN = "history-rewritten"
    CACHE_EXPIRED = "cache-expired"


@dataclass(frozen=True, slots=True)
class ToolsDifference:
    """How the tools rendered up front differ from the previous body's, by name."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    redefined: tuple[str, ...] = ()
    reordered: bool = False
    """The same tools, defined the same, in another order."""
    loaded: tuple[str, ...] = ()
    """Deferred in the previous body, up front now."""


@dataclass(frozen=True, slots=True)
class InputTokens:
    """A request's input tokens and the part of them a prompt cache serves."""

    input: int
    cached: int

    @property
    def uncached(self) -> int:
        return self.input - self.cached


@dataclass(frozen=True, slots=True)
class CacheDiagnostic:
    kept: bool
    """The prefix checker's answer (the body extends the previous one on the route)."""
    cause: CacheCause | None
    """None: served from the route's cache."""
    pointer: str | None
    """Where the bodies first differ (a JSON pointer), when the prefix is broken."""
    tools: ToolsDifference | None
    """For `tools-changed` and `deferred-tool-loaded`: which tools."""
    compaction: bool
    """For `history-rewritten`: a compaction rewrote it (else a message was edited or dropped)."""
    gap_ms: int | None
    """Since the previous request's answer (None for the first request)."""
    tokens: InputTokens
    """Estimated from the body's rendering (not calibrated)."""
    recorded: InputTokens | None
    """On the route that ran the request, the provider's record of it (`input`, `cacheRead`), to
    show beside the estimate; None on the other routes, or when the answer recorded no usage."""
    characters: int
    """The length of the body's rendering for the cache, which `tokens` estimates from: the next
    request on the route is measured against it without rendering this body again."""

    @property
    def hit(self) -> bool:
        return self.cause is None


def diagnose(
    *,
    body: dict[str, Any],
    previous_body: dict[str, Any] | None,
    prefix: PrefixResult,
    dialect: Dialect,
    request: ModelRequest,
    previous: ModelRequest | None,
    ran_here: bool,
    ttl_seconds: float,
    previous_characters: int | None = None,
) -> CacheDiagnostic:
    """The diagnostic of `request` on one route (see the module doc). `previous_body` is the
    previous request's body on the route (None: none was sendable), `previous_characters` its
    diagnostic's `characters` if known; `ran_here` says whether this route is the one that ran
    `request`."""
    gap = gap_ms(previous, request)
    if previous_body is None or previous is None or (ran_here and _switched(previous, request)):
        cause = CacheCause.INITIAL if previous_body is None or previous is None else CacheCause.ROUTE_SWITCHED
        return _diagnostic(prefix, cause, gap, rendered_length(cache_chunks(body, dialect)), 0, _recorded(request, ran_here))
    if not prefix.kept:
        rendered = cache_chunks(body, dialect)
        return diagnose_broken(
            prefix=prefix,
            body=body,
            previous_body=previous_body,
            request=request,
            previous=previous,
            ran_here=ran_here,
            rendered=rendered_length(rendered),
            cached=_common_start(previous_body, body, rendered, dialect, prefix.first_difference),
        )
    # A kept prefix: the previous rendering is this one's start but for its closing "]]", unless
    # the two are the same. Only lengths are needed, and one rendering is held at a time (a body
    # may hold a tool result of many megabytes).
    if previous_characters is None:
        previous_characters = rendered_length(cache_chunks(previous_body, dialect))
    before = previous_characters
    length = rendered_length(cache_chunks(body, dialect))
    return diagnose_kept(
        prefix=prefix,
        request=request,
        previous=previous,
        ran_here=ran_here,
        ttl_seconds=ttl_seconds,
        rendered=length,
        cached=before if length == before else before - 2,
    )


def diagnose_kept(
    *,
    prefix: PrefixResult,
    request: ModelRequest,
    previous: ModelRequest,
    ran_here: bool,
    ttl_seconds: float,
    rendered: int,
    cached: int,
) -> CacheDiagnostic:
    """The diagnostic of a request whose prefix the previous one on the route keeps: `rendered`
    is the length of its rendering for the cache, `cached` how much of it the previous rendering
    covers (what the cache serves, if it is there)."""
    gap = gap_ms(previous, request)
    if ran_here and _switched(previous, request):
        return _diagnostic(prefix, CacheCause.ROUTE_SWITCHED, gap, rendered, 0, _recorded(request, ran_here))
    if outlived(gap, ttl_seconds):
        return _diagnostic(prefix, CacheCause.CACHE_EXPIRED, gap, rendered, 0, _recorded(request, ran_here))
    return _diagnostic(prefix, None, gap, rendered, cached, _recorded(request, ran_here))


def diagnose_broken(
    *,
    prefix: PrefixResult,
    body: dict[str, Any],
    previous_body: dict[str, Any],
    request: ModelRequest,
    previous: ModelRequest,
    ran_here: bool,
    rendered: int,
    cached: int,
) -> CacheDiagnostic:
    """The diagnostic of a request whose prefix the previous one on the route breaks: `rendered`
    is the length of its rendering for the cache, `cached` the common start of it with the
    previous one's. The cause reads the bodies' up-front tools and top system text only."""
    gap = gap_ms(previous, request)
    if ran_here and _switched(previous, request):
        return _diagnostic(prefix, CacheCause.ROUTE_SWITCHED, gap, rendered, 0, _recorded(request, ran_here))
    cause, tools, compaction = _break_cause(body, previous_body, prefix, request, previous)
    return _diagnostic(prefix, cause, gap, rendered, cached, _recorded(request, ran_here), tools=tools, compaction=compaction)


def _common_start(
    previous_body: dict[str, Any], body: dict[str, Any], rendered: list[str], dialect: Dialect, pointer: str | None
) -> int:
    """How much of `body`'s rendering (`rendered`) starts as `previous_body`'s does. Where their
    heads differ (a tool changed, the system text), the heads' common start, without rendering
    the previous body's messages (the bulk of a long history); where they agree and the prefix
    checker found the first message that differs (`pointer`), the messages before it are the
    same and are measured, not compared."""
    before, after = cache_head_chunks(previous_body, dialect), cache_head_chunks(body, dialect)
    common = common_prefix_length(before, after)
    head = rendered_length(after)
    if common < min(rendered_length(before), head):
        return common
    index = _message_index(pointer)
    old, new = previous_body.get("messages") or [], body.get("messages") or []
    if index is None or index >= len(old) or index > len(new):
        return common_prefix_length(cache_chunks(previous_body, dialect), rendered)
    # "[head…, [m0, m1, …]]": message k starts after the head, ", [" and the earlier ones.
    start = head + 2 + sum(message_length(message) + 2 for message in new[:index])
    if index == len(new):
        return start if index == 0 else start - 2  # the newer list closes where the older goes on
    return start + common_prefix_length([message_text(old[index])], [message_text(new[index])])


def _message_index(pointer: str | None) -> int | None:
    """N of a "/messages/N" pointer."""
    if pointer is None or not pointer.startswith("/messages/"):
        return None
    number = pointer[len("/messages/") :]
    return int(number) if number.isdigit() else None


def estimated_tokens(characters: int) -> int:
    return characters // CHARS_PER_TOKEN


# --- the parts -------------------------------------------------------------------------------------


def _diagnostic(
    prefix: PrefixResult,
    cause: CacheCause | None,
    gap: int | None,
    rendered: int,
    cached: int,
    recorded: InputTokens | None,
    *,
    tools: ToolsDifference | None = None,
    compaction: bool = False,
) -> CacheDiagnostic:
    """`rendered`, `cached`: characters of the rendering, and of it the cache serves."""
    return CacheDiagnostic(
        kept=prefix.kept,
        cause=cause,
        pointer=prefix.first_difference,
        tools=tools,
        compaction=compaction,
        gap_ms=gap,
        tokens=InputTokens(estimated_tokens(rendered), estimated_tokens(cached)),
        recorded=recorded,
        characters=rendered,
    )


def _recorded(request: ModelRequest, ran_here: bool) -> InputTokens | None:
    """The usage the provider recorded for `request`, on the route that ran it."""
    outcome = request.outcome
    usage = outcome.usage if ran_here and isinstance(outcome, AssistantItem) else None
    return InputTokens(usage.input, usage.cache_read) if usage is not None else None


def _break_cause(
    body: dict[str, Any],
    previous_body: dict[str, Any],
    prefix: PrefixResult,
    request: ModelRequest,
    previous: ModelRequest,
) -> tuple[CacheCause, ToolsDifference | None, bool]:
    if _sequence(request) != _sequence(previous):
        if _starts_with_summary(request.messages):
            return CacheCause.HISTORY_REWRITTEN, None, True
        return CacheCause.NEW_SEQUENCE, None, False
    pointer = prefix.first_difference or ""
    if pointer == "/system" or (pointer == "/messages/0" and _is_top_system(body)):
        return CacheCause.SYSTEM_CHANGED, None, False
    difference = _tools_difference(previous_body, body)
    if difference.loaded:
        return CacheCause.DEFERRED_TOOL_LOADED, difference, False
    # A break in the messages with the tools changed is the tools' doing: an addition-only route
    # drops the addition block of a tool removed since.
    if difference != ToolsDifference() or pointer.startswith("/tools/"):
        return CacheCause.TOOLS_CHANGED, difference, False
    return CacheCause.HISTORY_REWRITTEN, None, False


def _tools_difference(previous_body: dict[str, Any], body: dict[str, Any]) -> ToolsDifference:
    """Every declaration by name, deferred or not, compared without the deferral flag."""
    before, after = _declared(previous_body), _declared(body)
    up_front_before = [name for name, (_, deferred) in before.items() if not deferred]
    up_front_after = [name for name, (_, deferred) in after.items() if not deferred]
    redefined = tuple(name for name in after if name in before and before[name][0] != after[name][0])
    return ToolsDifference(
        added=tuple(name for name in after if name not in before),
        removed=tuple(name for name in before if name not in after),
        redefined=redefined,
        reordered=up_front_before != up_front_after and set(up_front_before) == set(up_front_after) and not redefined,
        loaded=tuple(name for name in up_front_after if name in before and before[name][1]),
    )


def _declared(body: dict[str, Any]) -> dict[str, tuple[Any, bool]]:
    """Each declaration by name: its definition without `defer_loading`, and whether it is deferred."""
    return {
        _name(entry): ({key: value for key, value in entry.items() if key != "defer_loading"}, bool(entry.get("defer_loading")))
        for entry in body.get("tools") or ()
    }


def _name(entry: dict[str, Any]) -> str:
    function = entry.get("function")
    return str((function if isinstance(function, dict) else entry).get("name"))


def _is_top_system(body: dict[str, Any]) -> bool:
    """Whether the chat wire's first message is its top system text (a plain string)."""
    messages = body.get("messages") or []
    return bool(messages) and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str)


def _sequence(request: ModelRequest) -> int:
    return request.header.sequence if request.header is not None else 0


def _switched(previous: ModelRequest, request: ModelRequest) -> bool:
    return (previous.route, _model(previous)) != (request.route, _model(request))


def _model(request: ModelRequest) -> str:
    return request.header.model if request.header is not None else ""


def _starts_with_summary(messages: Sequence[object]) -> bool:
    return bool(messages) and isinstance(messages[0], SummaryItem)


def outlived(gap: int | None, ttl_seconds: float) -> bool:
    """Whether a gap (ms, `gap_ms`) is longer than a cache's TTL: the prefix has expired."""
    return gap is not None and gap > ttl_seconds * 1000


def gap_ms(previous: ModelRequest | None, request: ModelRequest) -> int | None:
    """Milliseconds from the previous request's answer to this request's start (None: the first)."""
    if previous is None:
        return None
    sent = request.started_at if request.started_at is not None else request.answered_at
    return max(sent - previous.answered_at, 0)

"""The words every view of the report model shares (CLI text, Markdown, HTML, the TUI), so a
state or a prefix reads the same everywhere. Looked up at call time: the language may change."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal

from app.display import money, token_count
from app.i18n import _, ngettext
from app.llm.routes import DEFAULT_BETA_HEADER, Route
from app.report.cache import CacheCause, CacheDiagnostic
from app.report.model import RouteReport, ToolChange


def section_labels() -> dict[str, str]:
    return {
        "why": _("Why"),
        "prefix": _("Prefix"),
        "beta": _("Beta header"),
        "fallback": _("Fallback"),
        "error": _("Not sendable"),
        "declarations": _("Declarations"),
        "blocks": _("Blocks"),
        "body": _("Wire body"),
        "diff": _("Body diff"),
        "cache": _("Cache"),
    }


def state_label(state: str) -> str:
    return {
        "initial": _("initial"),
        "added": _("added"),
        "retained-removed": _("retained after removal"),
        "explicit-deferred": _("deferred at the tool's request"),
    }[state]


def block_label(kind: str) -> str:
    return {
        "tool_addition": _("tool addition"),
        "tool_removal": _("tool removal"),
        "text": _("instructions"),
    }[kind]


def block_source(seq: int) -> str:
    return _("from developer message seq {seq}").format(seq=seq)


def route_about(route: Route) -> str:
    return _("{label} · {dialect} · tool updates: {mode}").format(
        label=route.display_label, dialect=route.dialect, mode=route.tool_update
    )


def prefix_text(report: RouteReport) -> str:
    """Kept, or where it breaks (for a sendable body; an unsendable one shows its error)."""
    if report.prefix.kept:
        return _("kept")
    if report.prefix.first_difference is not None:
        return _("broken at {pointer}").format(pointer=report.prefix.first_difference)
    return _("broken (the previous body was not sendable)")


def tool_change_line(change: ToolChange, quote: Callable[[str], str] = str) -> str:
    """"What changed in the tools since the previous request", in one line; `quote` formats each
    tool name (a code span in Markdown, escaped in HTML)."""

    def names(items: tuple[str, ...]) -> str:
        return ", ".join(quote(name) for name in items)

    if change.first and not change.tools:
        return _("First request: no tools")
    if change.first:
        return ngettext(
            "First request: {count} tool ({names})",
            "First request: {count} tools ({names})",
            len(change.tools),
        ).format(count=len(change.tools), names=names(change.tools))
    if not change.changed:
        return _("No tool change since the previous request")
    parts = []
    if change.added:
        parts.append(_("added {names}").format(names=names(change.added)))
    if change.removed:
        parts.append(_("removed {names}").format(names=names(change.removed)))
    if change.redefined:
        parts.append(_("redefined {names}").format(names=names(change.redefined)))
    return _("Tools since the previous request: {changes}").format(changes="; ".join(parts))


def route_reason(
    report: RouteReport, change: ToolChange | None, quote: Callable[[str], str] = str
) -> str | None:
    """Why the route's declarations and blocks are what they are, in one line: its tool-update mode,
    what that mode made of the request's tool change, and what that did to the prefix
    ("addition-only: grep is no longer declared; its removal is not sent; the prefix breaks at
    /tools/2"). None for an unsendable body: its error says why."""
    if report.error is not None:
        return None
    route = report.route
    mode = route.tool_update if route.sends_tool_updates else "none"
    clauses = _change_clauses(report, change, quote)
    if change is not None and not change.first:
        clauses.append(_prefix_clause(report))
    # TRANSLATORS: between the clauses of the line that says why a route got what it got.
    separator = _("; ")
    return _("{mode}: {reasons}").format(mode=mode, reasons=separator.join(clauses))


def _change_clauses(
    report: RouteReport, change: ToolChange | None, quote: Callable[[str], str]
) -> list[str]:
    if report.projected.fallback is not None:
        return [_("fell back to the tools in force, with no update blocks")]
    if change is None or change.first:
        return [_("the first request declares the tools in force")]
    carried = report.carries(change)
    if carried is None:
        return [_("no tool change since the previous request")]

    def said(names: tuple[str, ...], text: Callable[[int], str]) -> list[str]:
        """`text(count)` is the ngettext call (literal, for the extractor), filled with the names."""
        if not names:
            return []
        return [text(len(names)).format(names=", ".join(quote(name) for name in names))]

    clauses = [
        *said(
            carried.added_deferred,
            lambda n: ngettext(
                "{names} is declared deferred; an addition block makes it available",
                "{names} are declared deferred; addition blocks make them available",
                n,
            ),
        ),
        *said(
            carried.added_again,
            lambda n: ngettext(
                "{names} is declared up front again; an addition block makes it available",
                "{names} are declared up front again; addition blocks make them available",
                n,
            ),
        ),
        *said(
            carried.added_up_front,
            lambda n: ngettext(
                "{names} is declared up front, with no block",
                "{names} are declared up front, with no block",
                n,
            ),
        ),
        *said(
            carried.removed_retained,
            lambda n: ngettext(
                "{names} stays declared; a removal block takes it away",
                "{names} stay declared; removal blocks take them away",
                n,
            ),
        ),
    ]
    if report.route.sends_tool_updates:
        clauses += said(
            carried.removed_undeclared,
            lambda n: ngettext(
                "{names} is no longer declared; its removal is not sent",
                "{names} are no longer declared; their removal is not sent",
                n,
            ),
        )
        clauses += said(
            carried.redefined,
            lambda n: ngettext(
                "{names} is redefined: a new sequence starts with the tools in force",
                "{names} are redefined: a new sequence starts with the tools in force",
                n,
            ),
        )
    else:
        clauses += said(
            carried.removed_undeclared,
            lambda n: ngettext(
                "{names} is no longer declared",
                "{names} are no longer declared",
                n,
            ),
        )
        clauses += said(
            carried.redefined,
            lambda n: ngettext(
                "{names} is declared with its new definition",
                "{names} are declared with their new definitions",
                n,
            ),
        )
        clauses.append(_("this route sends no update blocks"))
    return clauses


def _prefix_clause(report: RouteReport) -> str:
    if report.prefix.kept:
        return _("the prefix is kept")
    if report.prefix.first_difference is not None:
        return _("the prefix breaks at {pointer}").format(pointer=report.prefix.first_difference)
    return _("the prefix breaks: the previous body was not sendable")


def beta_note(report: RouteReport) -> str | None:
    """What the beta header is, and why it is sent: the same header name goes to DeepSeek as to
    Anthropic, which reads oddly on a DeepSeek route without a word."""
    if report.beta is None:
        return None
    route = report.route
    if route.beta_header.lower() != DEFAULT_BETA_HEADER:
        what = _("the route's tool-change beta")
    elif route.dialect == "anthropic-messages":
        what = _("Anthropic's beta for tool changes in the history")
    elif route.dialect == "offline":
        what = _("the tool-change beta, checked by the offline model as DeepSeek checks it")
    else:
        what = _("the header DeepSeek's tool-change beta uses (Anthropic's name for it)")
    return _("{what}; sent because this body carries update blocks").format(what=what)


def cause_label(cause: CacheCause) -> str:
    """A cache miss's cause in a few words (tables, the trajectory's marks)."""
    return {
        CacheCause.INITIAL: _("initial write"),
        CacheCause.ROUTE_SWITCHED: _("route switched"),
        CacheCause.NEW_SEQUENCE: _("new sequence"),
        CacheCause.TOOLS_CHANGED: _("tools changed"),
        CacheCause.DEFERRED_TOOL_LOADED: _("deferred tool loaded"),
        CacheCause.SYSTEM_CHANGED: _("system text changed"),
        CacheCause.HISTORY_REWRITTEN: _("history rewritten"),
        CacheCause.CACHE_EXPIRED: _("cache expired"),
    }[cause]


def cache_text(diagnostic: CacheDiagnostic, quote: Callable[[str], str] = str) -> str:
    """The diagnostic in a sentence: served from cache, or the cause with what it names."""
    if diagnostic.hit:
        return _("served from cache")
    assert diagnostic.cause is not None
    words = cause_label(diagnostic.cause)
    tools = diagnostic.tools
    if diagnostic.cause is CacheCause.TOOLS_CHANGED and tools is not None:
        names = [f"+{quote(name)}" for name in tools.added] + [f"−{quote(name)}" for name in tools.removed]
        names += [f"~{quote(name)}" for name in tools.redefined]
        if tools.reordered:
            names.append(_("reordered"))
        words = f"{words} ({' '.join(names)})"
    elif diagnostic.cause is CacheCause.DEFERRED_TOOL_LOADED and tools is not None:
        words = f"{words} ({' '.join(quote(name) for name in tools.loaded)})"
    elif diagnostic.cause is CacheCause.HISTORY_REWRITTEN:
        words = _("history rewritten by a compaction") if diagnostic.compaction else _(
            "history rewritten (a message edited or dropped)"
        )
    elif diagnostic.cause is CacheCause.CACHE_EXPIRED and diagnostic.gap_ms is not None:
        # TRANSLATORS: {minutes} is a number of minutes with one decimal, e.g. 6.2.
        words = _("cache expired ({minutes:.1f} min idle)").format(minutes=diagnostic.gap_ms / 60_000)
    if diagnostic.pointer is not None and diagnostic.cause is not CacheCause.CACHE_EXPIRED:
        words = _("{cause} at {pointer}").format(cause=words, pointer=diagnostic.pointer)
    return words


SMALLEST_COST = Decimal("0.0001")
"""The smallest cost `money` shows (a hundredth of a cent); a smaller one is said to be below it."""


def cost_words(cost: Decimal | None) -> str:
    """An estimated cost, or that the route has no price (its tokens are still shown)."""
    if cost is None:
        return _("no price")
    if 0 < cost < SMALLEST_COST:
        # TRANSLATORS: a cost too small to show in cents, e.g. "< $0.0001".
        return _("< {cost}").format(cost=money(SMALLEST_COST))
    # TRANSLATORS: an estimated cost in US dollars, e.g. "≈ $0.0061".
    return _("≈ {cost}").format(cost=money(cost))


def cache_row(diagnostic: CacheDiagnostic, cost: Decimal | None, quote: Callable[[str], str] = str) -> str:
    """One request on one route: the diagnostic in words, its tokens cached and sent uncached (and,
    on the route that ran it, the provider's record of them), and what its input costs by the
    estimate ("tools changed (+time) at /tools/2 · 1.2k cached, 340 uncached · recorded 1.1k cached,
    390 uncached · ≈ $0.0012")."""
    tokens = diagnostic.tokens
    # TRANSLATORS: estimated input tokens of one request on one route: the part its prompt cache
    # serves, and the rest.
    counts = _("{cached} cached, {uncached} uncached").format(
        cached=token_count(tokens.cached), uncached=token_count(tokens.uncached)
    )
    parts = [cache_text(diagnostic, quote), counts]
    recorded = diagnostic.recorded
    if recorded is not None:
        # TRANSLATORS: beside the estimate, what the provider recorded for the request on the route
        # that ran it: the input tokens its cache served, and the rest.
        record = _("recorded {cached} cached, {uncached} uncached")
        parts.append(record.format(cached=token_count(recorded.cached), uncached=token_count(recorded.uncached)))
    # TRANSLATORS: between the parts of a route's cache row.
    separator = _(" · ")
    return separator.join([*parts, cost_words(cost)])


def change_words(change: ToolChange | None, quote: Callable[[str], str] = str) -> str:
    """A request's tool change in a few words: "tools changed (+time −grep)"."""
    if change is None or change.first:
        return _("first request")
    if not change.changed:
        return _("no tool change")
    names = [f"+{quote(name)}" for name in change.added] + [f"−{quote(name)}" for name in change.removed]
    names += [f"~{quote(name)}" for name in change.redefined]
    return _("tools changed ({names})").format(names=" ".join(names))


def cost_top_line(
    number: int,
    change: ToolChange | None,
    routes: Sequence[tuple[str, CacheDiagnostic | None, Decimal | None]],
    quote: Callable[[str], str] = str,
) -> str:
    """What request `number` costs on each route, in a line: its tool change, then what each route
    that misses its cache re-sends uncached and what that costs, then the routes that keep their
    prefix together ("request 7: tools changed (+a) — deepseek-flash re-sends 41.2k tokens ≈ $0.006;
    claude-sonnet keeps its prefix"). `routes`: (route id, its diagnostic, what its uncached part
    costs); routes that read the same are said together."""
    said: dict[tuple[str, bool, str], list[str]] = {}
    kept: list[str] = []
    unsendable: list[str] = []
    for route_id, diagnostic, cost in routes:
        if diagnostic is None:
            unsendable.append(route_id)
        elif diagnostic.hit:
            kept.append(route_id)
        else:
            priced = cost_words(cost) if cost is not None else _("(no price)")
            tail = (token_count(diagnostic.tokens.uncached), diagnostic.cause is CacheCause.INITIAL, priced)
            said.setdefault(tail, []).append(route_id)
    clauses = []
    for (tokens, initial, priced), ids in said.items():
        if initial:
            text = ngettext(
                "{routes} sends {tokens} tokens uncached {cost}",
                "{routes} send {tokens} tokens uncached {cost}",
                len(ids),
            )
        else:
            text = ngettext(
                "{routes} re-sends {tokens} tokens {cost}", "{routes} re-send {tokens} tokens {cost}", len(ids)
            )
        clauses.append(text.format(routes=", ".join(ids), tokens=tokens, cost=priced))
    if kept:
        clauses.append(
            ngettext("{routes} keeps its prefix", "{routes} keep their prefix", len(kept)).format(routes=", ".join(kept))
        )
    if unsendable:
        clauses.append(_("{routes} cannot send it").format(routes=", ".join(unsendable)))
    # TRANSLATORS: between the routes of the inspector's cost line.
    separator = _("; ")
    return _("Request {n}: {change} — {routes}").format(
        n=number, change=change_words(change, quote), routes=separator.join(clauses)
    )

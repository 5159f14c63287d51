"""The words every view of the report model shares (CLI text, Markdown, HTML, the TUI), so a
state or a prefix reads the same everywhere. Looked up at call time: the language may change."""

from __future__ import annotations

from collections.abc import Callable

from app.i18n import _, ngettext
from app.llm.routes import Route
from app.report.model import RouteReport, ToolChange


def section_labels() -> dict[str, str]:
    return {
        "prefix": _("Prefix"),
        "beta": _("Beta header"),
        "fallback": _("Fallback"),
        "error": _("Not sendable"),
        "declarations": _("Declarations"),
        "blocks": _("Blocks"),
        "body": _("Wire body"),
        "diff": _("Body diff"),
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

"""`toolscope inspect`'s text report: the report model laid out for a terminal (`docs/inspect.md`).

Every text from the session or a tool definition is shown literally (`printable_line`); widths
count wide (CJK) characters as two cells so localized labels line up.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence

from app.i18n import _, ngettext
from app.llm.projection import describe_fallback
from app.report.cost import request_cost
from app.report.model import RequestReport, RouteReport, ToolChange
from app.report.prices import PriceBook
from app.report.wording import (
    block_label,
    block_source,
    cache_row,
    prefix_text,
    route_about,
    route_reason,
    section_labels,
    state_label,
    tool_change_line,
)
from app.terminal import paint, printable, printable_line

BODY_INDENT = "    "
TEXT_WIDTH = 100


def render_text(
    session_id: str,
    total: int,
    reports: Sequence[RequestReport],
    *,
    color: bool,
    prices: PriceBook,
    bodies: bool = False,
    diffs: bool = False,
    full: bool = False,
) -> str:
    """The report; a route whose summary is the one it had at an earlier request takes one line
    saying since which (unless `full`): most routes stay the same across most requests. Each route
    also has its cache row (the diagnostic, its tokens, its cost by `prices`), which changes with
    every request and so is not part of the summary compared."""
    paint = _Painter(color)
    shown_at: dict[str, tuple[int, list[str]]] = {}
    lines = [
        paint.bold(
            ngettext(
                "Session {id} · {count} request", "Session {id} · {count} requests", total
            ).format(id=session_id, count=total)
        )
    ]
    if total == 0:
        lines.append(_("This session has no model requests yet."))
    for report in reports:
        request = report.request
        lines += [
            "",
            paint.bold(
                "━━ "
                + _("Request {n} · turn {turn}, step {step} · sent on {route}").format(
                    n=request.index, turn=request.turn, step=request.step, route=request.route
                )
            ),
        ]
        change = report.tool_change
        if change is not None:
            line = tool_change_line(change, printable_line)
            lines.append(paint.yellow(line) if change.changed else line)
        one_line_before = False
        for route_report in report.routes:
            route_id = route_report.route.id
            heading, body = _heading_lines(route_report, paint), _body_lines(route_report, paint)
            summary = heading + body
            cache = _cache_lines(route_report, prices)
            wire = _wire_lines(route_report, paint, bodies=bodies, diffs=diffs)
            since, earlier = shown_at.get(route_id, (0, None))
            if summary == earlier and not full:
                unchanged = _("unchanged since request {n}").format(n=since)
                # One-line routes in a row are not set apart by blank lines.
                lines += [*([] if one_line_before else [""]), paint.bold(route_id) + "  " + paint.dim(unchanged), *cache]
                one_line_before = not wire
            else:
                shown_at[route_id] = (request.index, summary)
                # The cache row under the prefix: the route's status first.
                lines += ["", *heading, *_reason_lines(route_report, change), *body[:1], *cache, *body[1:]]
                one_line_before = False
            lines += wire
    return "\n".join(lines) + "\n"


def _heading_lines(report: RouteReport, paint: _Painter) -> list[str]:
    route = report.route
    about = route_about(route)
    if cell_width(route.id) + 2 + cell_width(about) <= TEXT_WIDTH:
        return [paint.bold(route.id) + "  " + paint.dim(about)]
    return [paint.bold(route.id), "  " + paint.dim(about)]


def _reason_lines(report: RouteReport, change: ToolChange | None) -> list[str]:
    """Why the route got what it got for this request's change (not part of what is compared: it
    follows from the rest)."""
    reason = route_reason(report, change, printable_line)
    return section("why", wrap_cells(reason, TEXT_WIDTH - _value_column())) if reason is not None else []


def _cache_lines(report: RouteReport, prices: PriceBook) -> list[str]:
    """The cache diagnostic, its tokens and its cost (none for a body never sendable)."""
    if report.cache is None:
        return []
    row = cache_row(report.cache, request_cost(report.route, report.cache, prices), printable_line)
    return section("cache", wrap_cells(row, TEXT_WIDTH - _value_column()))


def _body_lines(report: RouteReport, paint: _Painter) -> list[str]:
    """The route's prefix, beta header, fallback, declarations and blocks."""
    lines: list[str] = []
    if report.error is not None:
        lines += section("error", [paint.red(report.error)])
    elif report.prefix.kept:
        lines += section("prefix", [paint.green(prefix_text(report))])
    else:
        lines += section("prefix", [paint.red(prefix_text(report))])
    lines += section("beta", [printable_line(report.beta or _("none"))])
    fallback = report.projected.fallback
    explained = (
        wrap_cells(describe_fallback(fallback), TEXT_WIDTH - _value_column()) if fallback else []
    )
    lines += section("fallback", [paint.yellow(text) for text in explained])
    lines += section("declarations", _declaration_rows(report))
    lines += section("blocks", _block_rows(report))
    return lines


def _wire_lines(report: RouteReport, paint: _Painter, *, bodies: bool, diffs: bool) -> list[str]:
    """The body and the body diff, when asked for."""
    lines: list[str] = []
    if bodies and report.wire is not None:
        lines += section("body", [""])
        body = json.dumps(report.wire.body, ensure_ascii=False, indent=2)
        lines += [paint.dim(BODY_INDENT + printable(line)) for line in body.splitlines()]
    if diffs and report.wire is not None:
        diff = report.body_diff()
        if report.previous_body is None:
            lines += section("diff", [_("none (no previous body on this route)")])
        else:
            lines += section("diff", [""] if diff else [_("none (the same body)")])
            lines += [BODY_INDENT + paint.diff(printable(line)) for line in diff]
    return lines


def section(key: str, texts: Sequence[str]) -> list[str]:
    """The label on the first line, the other lines under its value; "none" when empty."""
    first, *rest = texts or [_("none")]
    column = _value_column()
    label = "  " + pad_cells(section_labels()[key], column - 2)
    return [(label + first).rstrip(), *(" " * column + text for text in rest)]


def _value_column() -> int:
    """Where the values start: after the widest label (in the language of the moment) and two spaces."""
    return 2 + max(cell_width(label) for label in section_labels().values()) + 2


def _declaration_rows(report: RouteReport) -> list[str]:
    rows = [
        [
            printable_line(declaration.tool.name),
            state_label(declaration.state),
            "defer_loading" if declaration.defer_loading else "",
        ]
        for declaration in report.projected.declarations
    ]
    return _columns(rows)


def _block_rows(report: RouteReport) -> list[str]:
    rows = []
    for block, position in report.blocks:
        where = f"/messages/{position}" if position is not None else "-"
        what = json.dumps(block.text, ensure_ascii=False) if block.kind == "text" else block.name
        what = printable_line(what or "")
        rows.append([where, block_label(block.kind), what, block_source(block.seq)])
    return _columns(rows)


def _columns(rows: list[list[str]]) -> list[str]:
    if not rows:
        return []
    widths = [max(cell_width(row[column]) for row in rows) for column in range(len(rows[0]))]
    return ["  ".join(pad_cells(cell, widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]


def wrap_cells(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` cells, broken at a space where the line has one (Chinese
    has none: then between any two characters). `textwrap` counts characters, and a Chinese line
    of 84 characters takes 168 cells."""
    lines: list[str] = []
    line = ""
    for char in text:
        if cell_width(line + char) > width:
            head, space, tail = line.rpartition(" ")
            lines.append(head if space and head else line)
            line = tail if space and head else ""
        if char != " " or line:
            line += char
    return [*lines, line] if line else lines


def cell_width(text: str) -> int:
    """Terminal cells: wide (CJK) characters take two, so localized labels still line up."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def pad_cells(text: str, width: int) -> str:
    return text + " " * (width - cell_width(text))


class _Painter:
    """Paints a line's parts; what it paints is shown literally (a route or a reason may come from
    someone else's session file)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _sgr(self, code: str, text: str) -> str:
        return paint(printable_line(text), code, self.enabled)

    def bold(self, text: str) -> str:
        return self._sgr("1", text)

    def dim(self, text: str) -> str:
        return self._sgr("2", text)

    def red(self, text: str) -> str:
        return self._sgr("31", text)

    def green(self, text: str) -> str:
        return self._sgr("32", text)

    def yellow(self, text: str) -> str:
        return self._sgr("33", text)

    def diff(self, line: str) -> str:
        """A unified diff's line: additions green, removals red, hunk headers cyan."""
        if line.startswith(("+++", "---")):
            return self.bold(line)
        if line.startswith("+"):
            return self.green(line)
        if line.startswith("-"):
            return self.red(line)
        if line.startswith("@@"):
            return self._sgr("36", line)
        return line

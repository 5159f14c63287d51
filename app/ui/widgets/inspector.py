"""The inspector's content (docs/architecture.md §10): what every route received for one request, side by side.

It lays out one `RequestReport` of the report model (`app.report.model`), the one `toolscope
inspect` prints, and computes nothing of its own: the one-line tool change, the cost line (what the
request costs on the routes chosen, priced by `app.report.cost`), and per route the line that says
why, its cache row, then the prefix, beta header, fallback, declarations and blocks (the summary),
the wire body, or the body's diff against the previous request on the same route. Everything from
the session (tool names, texts, bodies) is shown literally and with every API key of the catalog
redacted (`Scrubber`).

The routes are paged: as many columns as fit at `MIN_COLUMN_WIDTH` share the width, and the pager
beside the mode line counts them ("Routes 1–2 of 6") with an arrow to click on either side.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from enum import StrEnum

from rich.cells import cell_len, set_cell_size
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.highlight import highlight
from textual.widgets import Static

from app.export.scrub import Scrubber
from app.i18n import _, ngettext
from app.llm.projection import describe_fallback
from app.llm.routes import Route
from app.report.cache import CacheDiagnostic
from app.report.cost import request_cost, resent_cost
from app.report.model import RequestReport, RouteReport, ToolChange
from app.report.prices import PriceBook
from app.report.text import cell_width, pad_cells, wrap_cells
from app.report.wording import (
    beta_note,
    block_label,
    block_source,
    cache_row,
    cost_top_line,
    prefix_text,
    route_about,
    route_reason,
    section_labels,
    state_label,
    tool_change_line,
)
from app.terminal import json_text
from app.ui.text import literal, styled

MIN_COLUMN_WIDTH = 48
"""A route's column is never narrower: the columns that fit share the width, the others are on the
next pages (one route a page below twice this width)."""

Part = str | tuple[str, str]
"""A piece of `Content.assemble`: our own text, or (text, style)."""


class InspectorMode(StrEnum):
    SUMMARY = "summary"
    BODY = "body"
    DIFF = "diff"


def mode_label(mode: InspectorMode) -> str:
    return {
        InspectorMode.SUMMARY: _("Summary"),
        InspectorMode.BODY: _("Wire body"),
        InspectorMode.DIFF: _("Diff against the previous request"),
    }[mode]


class RouteColumn(VerticalScroll):
    """One route of the catalog: its name, why it got what it got, and what it got, in the
    inspector's mode."""

    def __init__(self, route: Route, index: int) -> None:
        super().__init__(id=f"route-{index}", classes="route-column")
        self.route = route

    def compose(self) -> ComposeResult:
        yield Static(classes="route-title")
        yield Static(classes="route-about")
        yield Static(classes="route-why")
        yield Static(classes="route-cost")
        yield Static(classes="route-content")

    def show(
        self,
        report: RouteReport,
        change: ToolChange | None,
        mode: InspectorMode,
        scrub: Scrubber,
        same_as: Route | None,
        prices: PriceBook,
    ) -> None:
        """`same_as`: an earlier route shown whose summary is this one's (said instead of it)."""
        self.query_one(".route-title", Static).update(literal(scrub.line(self.route.id)))
        self.query_one(".route-about", Static).update(literal(scrub.line(route_about(self.route))))
        why = self.query_one(".route-why", Static)
        reason = route_reason(report, change)
        why.display = reason is not None
        why.update(literal(scrub.line(reason or "")))
        cost = self.query_one(".route-cost", Static)
        cost.display = report.cache is not None
        if report.cache is not None:
            cost.update(_cache_row(report.cache, request_cost(self.route, report.cache, prices), scrub))
        self.query_one(".route-content", Static).update(_content(report, mode, scrub, same_as))


def _cache_row(cache: CacheDiagnostic, cost: Decimal | None, scrub: Scrubber) -> Content:
    """"Cache: " and the diagnostic, its tokens and its cost, green on a hit."""
    row = cache_row(cache, cost, scrub.line)
    return Content.assemble(
        (labelled(section_labels()["cache"]), "bold"), (row, "$text-success" if cache.hit else "$text-warning")
    )


def _content(report: RouteReport, mode: InspectorMode, scrub: Scrubber, same_as: Route | None) -> Content:
    if mode is InspectorMode.SUMMARY and same_as is not None:
        return styled(
            _("Same as {route}: the same prefix, beta header, declarations and blocks.").format(
                route=scrub.line(same_as.id)
            ),
            "italic",
        )
    return {
        InspectorMode.SUMMARY: _summary,
        InspectorMode.BODY: _body,
        InspectorMode.DIFF: _diff,
    }[mode](report, scrub)


def _summary(report: RouteReport, scrub: Scrubber) -> Content:
    labels = section_labels()

    def line(label: str, value: str, style: str = "") -> list[Part]:
        return [(labelled(label), "bold"), (scrub.line(value), style), "\n"]

    parts: list[Part] = []
    if report.error is not None:
        parts += line(labels["error"], report.error, "$text-error")
    else:
        parts += line(labels["prefix"], prefix_text(report), "$text-success" if report.prefix.kept else "$text-error")
    parts += line(labels["beta"], report.beta or _("none"))
    note = beta_note(report)
    if note is not None:
        parts += [(note, "$text-muted italic"), "\n"]
    fallback = report.projected.fallback
    parts += line(labels["fallback"], describe_fallback(fallback) if fallback else _("none"), "$text-warning" if fallback else "")
    declarations = [
        (
            scrub.line(declaration.tool.name),
            state_label(declaration.state) + ("  defer_loading" if declaration.defer_loading else ""),
        )
        for declaration in report.projected.declarations
    ]
    parts += _table(labels["declarations"], declarations)
    blocks = [
        (
            f"/messages/{position}" if position is not None else "-",
            f"{block_label(block.kind)}  "
            + scrub.line(block.text if block.kind == "text" else block.name or "")
            + "\n    "
            + block_source(block.seq),
        )
        for block, position in report.blocks
    ]
    parts += _table(labels["blocks"], blocks)
    return Content.assemble(*parts).rstrip()


def labelled(label: str) -> str:
    """A label before its value on the same line ("Prefix: "; "缓存前缀：")."""
    return _("{label}: ").format(label=label)


def _table(label: str, rows: Sequence[tuple[str, str]]) -> list[Part]:
    """A section: its label, then one indented row per entry with the first cells aligned."""
    if not rows:
        return [(labelled(label), "bold"), _("none"), "\n"]
    width = max(cell_width(first) for first, _rest in rows)
    parts: list[Part] = [(label, "bold"), "\n"]
    for first, rest in rows:
        parts += ["  ", (pad_cells(first, width), "$text-accent"), "  ", rest.replace("\n", "\n  "), "\n"]
    return parts


def _body(report: RouteReport, scrub: Scrubber) -> Content:
    if report.wire is None:
        return Content.styled(scrub.text(report.error or ""), "$text-error")
    return highlight(scrub.redact(json_text(report.wire.body, indent=2)), language="json")


def _diff(report: RouteReport, scrub: Scrubber) -> Content:
    if report.wire is None:
        return Content.styled(scrub.text(report.error or ""), "$text-error")
    if report.previous_body is None:
        return Content.styled(_("No previous body on this route to compare with."), "italic")
    lines = report.body_diff()
    if not lines:
        return Content.styled(_("The same body as the previous request."), "italic")
    return Content("\n").join(Content.styled(scrub.text(line), _diff_style(line)) for line in lines)


def _diff_style(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("+"):
        return "$text-success"
    if line.startswith("-"):
        return "$text-error"
    if line.startswith("@@"):
        return "$text-accent"
    return ""


class RoutePager(Horizontal):
    """"◂ Routes 1–2 of 6 ▸": which routes of those chosen are on the screen; an arrow is clicked
    to page (it is dimmed where there is nothing more that way)."""

    def compose(self) -> ComposeResult:
        yield Static(literal(" ◂ "), id="routes-earlier")
        yield Static(id="routes-count")
        yield Static(literal(" ▸ "), id="routes-later")

    def show(self, first: int, last: int, total: int) -> None:
        """Routes `first`..`last` (1-based) of `total` are on the screen."""
        if total == 0:
            count = _("No route chosen")
        elif first == last:
            count = ngettext("Route {n} of {total}", "Route {n} of {total}", total).format(
                n=first, total=total
            )
        else:
            count = ngettext(
                "Routes {first}–{last} of {total}", "Routes {first}–{last} of {total}", total
            ).format(first=first, last=last, total=total)
        self.query_one("#routes-count", Static).update(literal(count))
        self.query_one("#routes-earlier").set_class(first <= 1, "-off")
        self.query_one("#routes-later").set_class(last >= total, "-off")


class Inspector(Vertical):
    """The request's heading, tool-change line and cost line, the mode and the pager, and one column
    per route on the page."""

    def __init__(self, routes: Sequence[Route], prices: PriceBook, *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.routes = tuple(routes)
        self.prices = prices
        self._cost_line = ""
        """The request's cost line, whole: it is cut to the width on every resize."""
        self.scrub = Scrubber.for_routes(self.routes)
        self._chosen: list[str] = [route.id for route in self.routes]
        self._first = 0
        """The index in `_chosen` of the first route on the screen."""
        self._shown: tuple[RequestReport | None, InspectorMode] = (None, InspectorMode.SUMMARY)

    def compose(self) -> ComposeResult:
        yield Static(id="inspector-request")
        yield Static(id="inspector-change")
        yield Static(id="inspector-cost")
        with Horizontal(id="inspector-bar"):
            yield Static(id="inspector-mode")
            yield RoutePager(id="route-pager")
        with Horizontal(id="inspector-routes"):
            for index, route in enumerate(self.routes):
                yield RouteColumn(route, index)

    @property
    def columns(self) -> list[RouteColumn]:
        return list(self.query(RouteColumn))

    def show_routes(self, route_ids: Iterable[str]) -> None:
        """Only these routes (in catalog order) are paged through."""
        chosen = set(route_ids)
        self._chosen = [route.id for route in self.routes if route.id in chosen]
        self._lay_out()
        self._fill()  # "same as" points only at routes chosen

    def page(self, step: int) -> None:
        """The next (`step` 1) or previous (-1) page of routes; the last page is always full."""
        self._first += step * self._per_page()
        self._lay_out()

    def on_resize(self) -> None:
        self._lay_out()
        self._show_cost_line()

    def _per_page(self) -> int:
        return max(1, self.size.width // MIN_COLUMN_WIDTH)

    def _lay_out(self) -> None:
        """Show the page's columns (they share the width) and count them in the pager."""
        total = len(self._chosen)
        per_page = min(self._per_page(), total)
        self._first = max(0, min(self._first, total - per_page))
        on_page = set(self._chosen[self._first : self._first + per_page])
        for column in self.columns:
            column.display = column.route.id in on_page
        self.query_one(RoutePager).show(self._first + 1, self._first + per_page, total)

    @on(events.Click, "#routes-earlier")
    def _earlier(self) -> None:
        self.page(-1)

    @on(events.Click, "#routes-later")
    def _later(self) -> None:
        self.page(1)

    def show(
        self, report: RequestReport | None, total: int, mode: InspectorMode, *, following: bool
    ) -> None:
        heading = self.query_one("#inspector-request", Static)
        change = self.query_one("#inspector-change", Static)
        self._shown = (report, mode)
        if report is None:
            heading.update(styled(_("This session has no model requests yet."), "bold"))
            change.update("")
            self._cost_line = ""
            self._show_cost_line()
            self.query_one("#inspector-bar").display = False
            self.query_one("#inspector-routes").display = False
            return
        heading.update(self._heading(report, total, following=following))
        if report.tool_change is not None:
            line = tool_change_line(report.tool_change, lambda name: self.scrub.line(name))
            change.update(styled(line, "$text-warning" if report.tool_change.changed else ""))
        self.query_one("#inspector-mode", Static).update(_mode_line(mode))
        self.query_one("#inspector-bar").display = True
        self.query_one("#inspector-routes").display = True
        self._fill()

    def _fill(self) -> None:
        """Every column from the report shown, each route chosen that repeats an earlier one's
        summary pointing to it."""
        report, mode = self._shown
        if report is None:
            return
        by_id = {route_report.route.id: route_report for route_report in report.routes}
        chosen = [by_id[route_id] for route_id in self._chosen]
        same_as: dict[str, Route] = {}
        for position, route_report in enumerate(chosen):
            # The first equal one: equality is transitive, so each points to its group's first.
            first = next((earlier for earlier in chosen[:position] if earlier.same_summary_as(route_report)), None)
            if first is not None:
                same_as[route_report.route.id] = first.route
        for column in self.columns:
            route_report = by_id[column.route.id]
            column.show(route_report, report.tool_change, mode, self.scrub, same_as.get(column.route.id), self.prices)
        self._cost_line = cost_top_line(
            report.request.index,
            report.tool_change,
            [(route_report.route.id, route_report.cache, self._resent(route_report)) for route_report in chosen],
            self.scrub.line,
        )
        self._show_cost_line()

    def _resent(self, report: RouteReport) -> Decimal | None:
        """What the part the route sends uncached costs (only a miss is said with its cost)."""
        if report.cache is None or report.cache.hit:
            return None
        return resent_cost(report.route, report.cache, self.prices)

    def _show_cost_line(self) -> None:
        """The cost line in at most two lines of the width, cut at the end with "…"."""
        width = max(self.size.width - 2, 20) if self.size.width else 78
        lines = wrap_cells(self._cost_line, width)
        if len(lines) > 2:
            second = lines[1] if cell_len(lines[1]) < width else set_cell_size(lines[1], width - 1).rstrip()
            lines = [lines[0], second + "…"]
        self.query_one("#inspector-cost", Static).update(literal("\n".join(lines)))

    def _heading(self, report: RequestReport, total: int, *, following: bool) -> Content:
        request = report.request
        title = _("Request {n} of {total} · turn {turn}, step {step} · sent on {route}").format(
            n=request.index, total=total, turn=request.turn, step=request.step, route=request.route
        )
        parts: list[Part] = [(self.scrub.line(title), "bold")]
        if following:
            parts += ["  ", (_("following the latest request"), "$text-accent italic")]
        return Content.assemble(*parts)


def _mode_line(current: InspectorMode) -> Content:
    parts: list[Part] = []
    for mode in InspectorMode:
        if parts:
            parts.append("  ")
        parts.append((f" {mode_label(mode)} ", "reverse bold" if mode is current else "$text-muted"))
    return Content.assemble(*parts)

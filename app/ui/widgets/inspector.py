"""The inspector's content (DESIGN §5, §9): what every route received for one request, side by side.

It lays out one `RequestReport` of the report model (`app.report.model`), the one `toolscope
inspect` prints, and computes nothing of its own: the one-line tool change, and per route the
prefix, beta header, fallback, declarations and blocks (the summary), the wire body, or the body's
diff against the previous request on the same route. Everything from the session (tool names,
texts, bodies) is shown literally and with every API key of the catalog redacted (`Scrubber`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum

from textual.app import ComposeResult
from textual.containers import HorizontalScroll, Vertical, VerticalScroll
from textual.content import Content
from textual.highlight import highlight
from textual.widgets import Static

from app.export.scrub import Scrubber
from app.i18n import _
from app.llm.projection import describe_fallback
from app.llm.routes import Route
from app.report.model import RequestReport, RouteReport
from app.report.text import cell_width, pad_cells
from app.report.wording import (
    block_label,
    block_source,
    prefix_text,
    route_about,
    section_labels,
    state_label,
    tool_change_line,
)
from app.terminal import json_text
from app.ui.text import literal, styled

MIN_COLUMN_WIDTH = 48
"""A route's column is never narrower: wider than the screen, the columns scroll sideways."""

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
    """One route of the catalog: its name and what it received, in the inspector's mode."""

    def __init__(self, route: Route, index: int) -> None:
        super().__init__(id=f"route-{index}", classes="route-column")
        self.route = route

    def compose(self) -> ComposeResult:
        yield Static(classes="route-title")
        yield Static(classes="route-about")
        yield Static(classes="route-content")

    def show(self, report: RouteReport, mode: InspectorMode, scrub: Scrubber) -> None:
        self.query_one(".route-title", Static).update(literal(scrub.line(self.route.id)))
        self.query_one(".route-about", Static).update(literal(scrub.line(route_about(self.route))))
        content: Content = {
            InspectorMode.SUMMARY: _summary,
            InspectorMode.BODY: _body,
            InspectorMode.DIFF: _diff,
        }[mode](report, scrub)
        self.query_one(".route-content", Static).update(content)


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


class Inspector(Vertical):
    """The request's heading and tool-change line, the mode, and one column per route shown."""

    def __init__(self, routes: Sequence[Route], *, id: str | None = None) -> None:  # noqa: A002 (Textual's name)
        super().__init__(id=id)
        self.routes = tuple(routes)
        self.scrub = Scrubber.for_routes(self.routes)

    def compose(self) -> ComposeResult:
        yield Static(id="inspector-request")
        yield Static(id="inspector-change")
        yield Static(id="inspector-mode")
        with HorizontalScroll(id="inspector-routes"):
            for index, route in enumerate(self.routes):
                yield RouteColumn(route, index)

    @property
    def columns(self) -> list[RouteColumn]:
        return list(self.query(RouteColumn))

    def show_routes(self, route_ids: Iterable[str]) -> None:
        shown = set(route_ids)
        for column in self.columns:
            column.display = column.route.id in shown
        self._fit_columns()

    def on_resize(self) -> None:
        self._fit_columns()

    def _fit_columns(self) -> None:
        """The routes shown share the width equally, each at least `MIN_COLUMN_WIDTH` wide."""
        shown = [column for column in self.columns if column.display]
        if shown and self.size.width:
            width = max(MIN_COLUMN_WIDTH, self.size.width // len(shown))
            for column in shown:
                column.styles.width = width

    def show(
        self, report: RequestReport | None, total: int, mode: InspectorMode, *, following: bool
    ) -> None:
        heading = self.query_one("#inspector-request", Static)
        change = self.query_one("#inspector-change", Static)
        if report is None:
            heading.update(styled(_("This session has no model requests yet."), "bold"))
            change.update("")
            self.query_one("#inspector-mode", Static).update("")
            self.query_one("#inspector-routes").display = False
            return
        heading.update(self._heading(report, total, following=following))
        if report.tool_change is not None:
            line = tool_change_line(report.tool_change, lambda name: self.scrub.line(name))
            change.update(styled(line, "$text-warning" if report.tool_change.changed else ""))
        self.query_one("#inspector-mode", Static).update(_mode_line(mode))
        self.query_one("#inspector-routes").display = True
        by_id = {route_report.route.id: route_report for route_report in report.routes}
        for column in self.columns:
            column.show(by_id[column.route.id], mode, self.scrub)

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

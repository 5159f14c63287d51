"""The trajectory's detail pane: the selected event as syntax-highlighted JSON, under a line saying
why its request missed its route's prompt cache when it did (`cache_text`).

The JSON is the session view's (`item_json`), with anything a terminal would act on escaped; it is
highlighted into Textual `Content`, which never reads markup: text from the session shows exactly
as written. The pane draws with the line API, so showing another event repaints the pane alone
(a widget that changes height would lay the whole screen out again on every cursor move).
"""

from __future__ import annotations

from textual.content import Content
from textual.geometry import Size
from textual.highlight import highlight
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.visual import Visual

from app.i18n import _
from app.report.cache import CacheDiagnostic
from app.report.wording import cache_text
from app.trajectory.entries import Entry, detail_json
from app.ui.text import styled


class TrajectoryDetail(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    TrajectoryDetail {
        border-left: solid $panel-lighten-2;
        padding: 0 1;
        scrollbar-gutter: stable;
        overflow-x: hidden;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.content = Content("")
        self._lines: list[Strip] = []
        self._wrapped_at = -1

    def show(self, entry: Entry | None, broken: CacheDiagnostic | None = None) -> None:
        """`broken`: the diagnostic of `entry`'s request when its route missed its cache."""
        self.content = highlight(detail_json(entry), language="json") if entry is not None else Content("")
        if entry is not None and entry.request is not None and broken is not None:
            line = _("Prompt cache on {route}: {diagnostic}").format(
                route=entry.request.route, diagnostic=cache_text(broken)
            )
            self.content = Content("\n").join([styled(line, "bold $text-warning"), self.content])
        self._wrapped_at = -1
        self.scroll_to(0, 0, animate=False, immediate=True)
        self._wrap()
        self.refresh()

    def _wrap(self) -> None:
        width = self.scrollable_content_region.width
        if width == self._wrapped_at or width <= 0:
            return
        self._wrapped_at = width
        self._lines = Visual.to_strips(self, self.content, width, None, self.visual_style)
        self.virtual_size = Size(width, len(self._lines))

    def on_resize(self) -> None:
        self._wrap()

    def render_line(self, y: int) -> Strip:
        self._wrap()
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        if index >= len(self._lines):
            return Strip.blank(width, self.rich_style)
        return self._lines[index].crop_extend(0, width, self.rich_style)

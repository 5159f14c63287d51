"""The trajectory's detail pane: the selected event as syntax-highlighted JSON.

The JSON is the session view's (`item_json`), with anything a terminal would act on escaped; it is
highlighted into Textual `Content`, which never reads markup: text from the session shows exactly
as written.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.highlight import highlight
from textual.widgets import Static

from app.ui.widgets.trajectory_model import Entry, detail_json


class TrajectoryDetail(VerticalScroll, can_focus=True):
    DEFAULT_CSS = """
    TrajectoryDetail { border-left: solid $panel-lighten-2; padding: 0 1; }
    TrajectoryDetail > Static { width: 100%; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="detail-json")

    def show(self, entry: Entry | None) -> None:
        body = self.query_one("#detail-json", Static)
        body.update(highlight(detail_json(entry), language="json") if entry is not None else "")
        self.scroll_home(animate=False)

"""The trajectory as a flat list: one row per event, virtualized with the line API.

Only the rows on screen are ever rendered (`render_line`, as Textual's `Log` does), and the rows
come from the model (`rows(kinds)`): a file's are found in its line index and built as they are
drawn, so a session of any length costs the same few rows of work per key.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.cache import LRUCache
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from app.session.view import Step, Turn
from app.trajectory.entries import Entry, EntryRows
from app.trajectory.indexed import IndexedRows, Trajectory
from app.ui.trajectory.labels import entry_label, highlighted


class TrajectoryList(ScrollView, can_focus=True):
    COMPONENT_CLASSES: ClassVar[set[str]] = {"trajectory-list--cursor", "trajectory-list--seq"}
    DEFAULT_CSS = """
    TrajectoryList { background: $surface; }
    TrajectoryList > .trajectory-list--cursor { background: $block-cursor-blurred-background; }
    TrajectoryList:focus > .trajectory-list--cursor {
        background: $block-cursor-background; color: $block-cursor-foreground;
    }
    TrajectoryList > .trajectory-list--seq { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", show=False),
        Binding("down", "move(1)", show=False),
        Binding("pageup", "page(-1)", show=False),
        Binding("pagedown", "page(1)", show=False),
        Binding("home", "move_to(0)", show=False),
        Binding("end", "move_to(-1)", show=False),
    ]

    cursor: reactive[int] = reactive(0, always_update=True, layout=False, repaint=False)

    @dataclass
    class Highlighted(Message):
        entry: Entry

    def __init__(self, model: Trajectory, kinds: frozenset[str], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = model
        self.kinds = kinds
        self.rows: EntryRows | IndexedRows = EntryRows([])
        self._seq_width = 1
        self._strips: LRUCache[tuple[int, int, bool, bool, int], Strip] = LRUCache(1024)
        self._base: Style | None = None
        self.words: tuple[str, ...] = ()  # the search's, marked in the rows

    # --- rows --------------------------------------------------------------------------------------

    def rebuild(self, kinds: frozenset[str] | None = None) -> None:
        if kinds is not None:
            self.kinds = kinds
        self.rows = self.model.rows(self.kinds)
        self._resized()
        self.set_reactive(TrajectoryList.cursor, min(self.cursor, max(len(self.rows) - 1, 0)))
        self.refresh()

    def add_entries(self, entries: list[Entry]) -> None:
        shown = [entry for entry in entries if entry.shown(self.kinds)]
        if shown and isinstance(self.rows, EntryRows):
            at_end = self.is_vertical_scroll_end
            self.rows.extend(shown)
            self._resized()
            if at_end:
                self.scroll_end(animate=False, immediate=True)
            self.refresh()

    def _resized(self) -> None:
        last = max(self.model.last_seq, 0)
        if len(str(last)) != self._seq_width:
            self._seq_width = len(str(last))
            self._strips.clear()
        # No horizontal scrolling: a row is cut at the right edge; the detail pane has everything.
        self.virtual_size = Size(0, len(self.rows))

    @property
    def cursor_entry(self) -> Entry | None:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    def index_of(self, entry: Entry) -> int | None:
        return self.rows.position(entry.seq)

    def move_to(self, entry: Entry) -> bool:
        index = self.index_of(entry)
        if index is None:
            return False
        self.cursor = index
        return True

    # --- drawing -----------------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        base = self._base_style
        if index >= len(self.rows):
            return Strip.blank(width, base)
        entry = self.rows[index]
        # Kept as drawn, at its row: a scroll by one row draws one new row, not a screenful.
        key = (entry.seq, index, index == self.cursor, self.has_focus, width)
        strip = self._strips.get(key)
        if strip is None:
            strip = self._render_row(entry, index == self.cursor, width).apply_offsets(0, index)
            self._strips[key] = strip
        return strip

    @property
    def _base_style(self) -> Style:
        """The widget's own style, looked up once per style change (it walks the ancestors)."""
        if self._base is None:
            self._base = self.rich_style
        return self._base

    def show_model(self, model: Trajectory) -> None:
        """Another session (or the chat's replaced one): nothing drawn for the last one is kept."""
        self.model = model
        self.words = ()
        self._strips.clear()

    def redraw(self) -> None:
        """Draw the rows again (their requests' cache marks are known now)."""
        self._strips.clear()
        self.refresh()

    def highlight(self, words: tuple[str, ...]) -> None:
        """Mark the search's words in the rows."""
        if words != self.words:
            self.words = words
            self._strips.clear()
            self.refresh()

    def _render_row(self, entry: Entry, at_cursor: bool, width: int) -> Strip:
        """The row's segments put together directly (a `Text` of the whole row would be built,
        styled and rendered once more): the seq, the indent, the label, in the widget's style and,
        at the cursor, the cursor's, padded to the width."""
        base = self._base_style
        console = self.app.console
        label = highlighted(entry_label(entry, self.model.cache_marks), self.words)
        segments = [
            Segment(f"{entry.seq:>{self._seq_width}} ", self.get_component_rich_style("trajectory-list--seq")),
            Segment("  " * _depth(entry)),
            *_segments(label, console),
        ]
        cursor = self.get_component_rich_style("trajectory-list--cursor") if at_cursor else None
        strip = Strip(Segment.apply_style(segments, base, cursor))
        return strip.crop_extend(0, width, base + cursor if cursor is not None else base)

    def watch_cursor(self, previous: int, cursor: int) -> None:
        self._refresh_row(previous)
        self._refresh_row(cursor)
        self.scroll_to_region(Region(0, cursor, 1, 1), animate=False, force=True, immediate=True)
        entry = self.cursor_entry
        if entry is not None:
            self.post_message(self.Highlighted(entry))

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        """The scrollbar is repainted only when its thumb moves: in a long list it moves one
        eighth of a cell per many rows, and repainting it costs as much as the rows. A scroll
        repaints this widget alone (the list has no children to move, and its lines are drawn from
        the offset), not the screen reflowed, once per row of a held arrow key."""
        height = self.scrollable_content_region.height * 8
        rows = max(self.virtual_size.height, 1)
        if int(old_value * height / rows) != int(new_value * height / rows):
            self.vertical_scrollbar.position = new_value
        if round(old_value) != round(new_value):
            self.refresh()

    def _refresh_row(self, index: int) -> None:
        self.refresh(Region(0, index - self.scroll_offset.y, self.size.width, 1))

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()
        self._base = None
        self.refresh()

    # --- keys and mouse ----------------------------------------------------------------------------

    def validate_cursor(self, cursor: int) -> int:
        return max(0, min(cursor, len(self.rows) - 1))

    def action_move(self, rows: int) -> None:
        self.cursor += rows

    def action_page(self, pages: int) -> None:
        self.cursor += pages * max(self.scrollable_content_region.height - 1, 1)

    def action_move_to(self, index: int) -> None:
        self.cursor = index if index >= 0 else len(self.rows) - 1

    def on_click(self, event: events.Click) -> None:
        self.cursor = self.scroll_offset.y + event.y

    def on_focus(self) -> None:
        self._refresh_row(self.cursor)

    def on_blur(self) -> None:
        self._refresh_row(self.cursor)


def _segments(label: Text, console: Console) -> Iterable[Segment]:
    """`label` as segments in its own style too: `Text.render` leaves the style of a text without
    spans out (a `Text` printed whole applies it elsewhere)."""
    if label.spans:
        return label.render(console)
    return [Segment(label.plain, console.get_style(label.style) if label.style else None)]


def _depth(entry: Entry) -> int:
    if isinstance(entry.subject, Turn):
        return 0
    if isinstance(entry.subject, Step):
        return 1
    return (entry.turn is not None) + (entry.step is not None)

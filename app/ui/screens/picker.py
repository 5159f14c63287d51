"""A modal list to choose one row from: a filter input above a table, a detail line below.

Typing filters the rows (every word must occur in the row's search text, case-insensitive); Up and
Down move the highlight while the input has focus; Enter chooses the highlighted row, as does a
click on the highlighted row (the first click highlights, as in every Textual table); Escape
closes with None. Subclasses give the title, the columns and the rows; choosing a row dismisses
the screen with that row's `key`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import zip_longest
from typing import Any, ClassVar

from rich.cells import cell_len
from rich.console import JustifyMethod
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from app.i18n import _, ngettext
from app.ui.screens.modal import ClosableModal
from app.ui.text import literal, literal_text


MAX_SHOWN = 200
"""Rows in the table at once: a Textual table measures every row it holds, so thousands of sessions
would take seconds to show; the filter still searches them all."""


@dataclass(frozen=True)
class PickerRow:
    """One choice: its result, its cells (plain, printable text, shown literally), the text the
    filter searches, how to make its detail line, and optional per-cell styles. Cells and details
    become `Text` only when shown: thousands of rows cost nothing until then."""

    key: str
    cells: tuple[str, ...]
    search_text: str
    detail: Callable[[], Text]
    styles: tuple[str, ...] = ()


@dataclass(frozen=True)
class PickerColumn:
    """A column as wide as its widest cell, or, when `flexible`, as wide as the room left (one
    column per picker, e.g. the session title, takes what the terminal's width allows)."""

    label: str
    flexible: bool = False
    min_width: int = 12
    justify: JustifyMethod = "left"


class PickerTable(DataTable[Text]):
    """The picker's table; says when its width changes, so the flexible column can follow."""

    class Resized(Message):
        pass

    def on_resize(self) -> None:
        self.post_message(self.Resized())


class PickerScreen(ClosableModal[str]):
    """The shared behaviour of the route and session pickers (see the module doc)."""

    CSS_PATH: ClassVar[str | list[str]] = "picker.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("down", "move(1)", show=False),
        Binding("up", "move(-1)", show=False),
        Binding("pagedown", "move(10)", show=False),
        Binding("pageup", "move(-10)", show=False),
    ]

    def __init__(self, rows: Sequence[PickerRow], selected: str | None = None) -> None:
        super().__init__()
        self._rows: tuple[PickerRow, ...] = ()
        self._rows_by_key: dict[str, PickerRow] = {}
        self._take_rows(rows)
        self._selected = selected

    def _take_rows(self, rows: Sequence[PickerRow]) -> None:
        self._rows = tuple(rows)
        self._rows_by_key = {row.key: row for row in self._rows}
        self.__dict__.pop("_natural_widths", None)  # measured again for the new rows

    def replace_rows(self, rows: Sequence[PickerRow]) -> None:
        """Show these rows instead (ones loaded after the screen opened), filtered as typed so far."""
        self._take_rows(rows)
        self._show_matching()

    # --- what subclasses provide

    def heading(self) -> str:
        raise NotImplementedError

    def columns(self) -> Sequence[PickerColumn]:
        raise NotImplementedError

    def empty_text(self) -> str:
        """What the table area says when there is nothing to choose at all."""
        return _("Nothing to choose from.")

    # --- layout

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-dialog"):
            yield Static(literal(self.heading()), id="picker-title")
            yield Input(placeholder=_("Type to filter"), id="picker-filter")
            yield PickerTable(id="picker-table", cursor_type="row", zebra_stripes=True)
            yield Static(id="picker-empty")
            yield Static(id="picker-more")
            yield Static(id="picker-detail")
            yield Static(literal(_("Type to filter · ↑↓ move · Enter choose · Esc close")), id="picker-hint")

    def on_mount(self) -> None:
        self._show_matching()
        self.query_one("#picker-filter", Input).focus()

    @cached_property
    def _natural_widths(self) -> list[int]:
        """Each column's widest cell over every row, so the columns do not jump as rows filter."""
        return [
            max([cell_len(column.label), *(cell_len(row.cells[index]) for row in self._rows)])
            for index, column in enumerate(self.columns())
        ]

    def _column_widths(self, table: DataTable[Any]) -> list[int]:
        widths = list(self._natural_widths)
        columns = self.columns()
        for index, column in enumerate(columns):
            if column.flexible:
                others = sum(widths) - widths[index]
                # Each column has its padding on both sides; keep room for a vertical scrollbar.
                room = table.scrollable_content_region.width
                spare = room - others - 2 * table.cell_padding * len(columns) - 2
                widths[index] = max(column.min_width, spare)
        return widths

    # --- filtering

    @on(Input.Changed, "#picker-filter")
    @on(PickerTable.Resized)
    def _show_matching(self) -> None:
        words = self.query_one("#picker-filter", Input).value.lower().split()
        self._show([row for row in self._rows if all(word in row.search_text for word in words)])

    def _show(self, matching: Sequence[PickerRow]) -> None:
        rows = matching[:MAX_SHOWN]
        more = self.query_one("#picker-more", Static)
        more.display = len(matching) > len(rows)
        more.update(
            literal(
                ngettext(
                    "Showing the first {shown} of {count} match; type to narrow the list.",
                    "Showing the first {shown} of {count} matches; type to narrow the list.",
                    len(matching),
                ).format(shown=len(rows), count=len(matching))
            )
        )
        table = self.query_one("#picker-table", DataTable)
        highlighted = self._highlighted_key() or self._selected
        table.clear(columns=True)
        columns = self.columns()
        for column, width in zip(columns, self._column_widths(table)):
            table.add_column(literal_text(column.label), width=width)
        for row in rows:
            table.add_row(*_cells(row, columns), key=row.key)
        keys = [row.key for row in rows]
        if highlighted in keys:
            table.move_cursor(row=keys.index(highlighted), animate=False)
        empty = self.query_one("#picker-empty", Static)
        empty.display = not rows
        if not rows:
            empty.update(literal(self.empty_text() if not self._rows else _("No match.")))
        self._show_detail()

    # --- moving and choosing

    def _highlighted_key(self) -> str | None:
        table = self.query_one("#picker-table", DataTable)
        if table.row_count == 0:
            return None
        row_key, _column = table.coordinate_to_cell_key(table.cursor_coordinate)
        return row_key.value

    @on(DataTable.RowHighlighted, "#picker-table")
    def _show_detail(self) -> None:
        self.query_one("#picker-detail", Static).update(self._highlighted_detail())

    def _highlighted_detail(self) -> Text:
        key = self._highlighted_key()
        row = self._rows_by_key.get(key) if key is not None else None
        return row.detail() if row is not None else Text()

    def action_move(self, rows: int) -> None:
        table = self.query_one("#picker-table", DataTable)
        if table.row_count:
            target = max(0, min(table.row_count - 1, table.cursor_row + rows))
            table.move_cursor(row=target, animate=False)

    @on(Input.Submitted, "#picker-filter")
    def _choose_highlighted(self) -> None:
        key = self._highlighted_key()
        if key is not None:
            self.dismiss(key)

    @on(DataTable.RowSelected, "#picker-table")
    def _choose_row(self, event: DataTable.RowSelected) -> None:
        self.dismiss(event.row_key.value)


def _cells(row: PickerRow, columns: Sequence[PickerColumn]) -> list[Text]:
    # Text, never str: a table reads a str cell as markup.
    return [
        literal_text(cell, style, justify=column.justify, no_wrap=True, overflow="ellipsis")
        for cell, style, column in zip_longest(row.cells, row.styles, columns, fillvalue="")
    ]

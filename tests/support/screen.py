"""What a Textual app shows, for comparing two screens and reading what a region of one says."""

from __future__ import annotations

import io

from rich.cells import cell_len
from rich.console import Console
from rich.style import Style
from textual.app import App
from textual.geometry import Region


def screen_cells(app: App[object]) -> list[tuple[str, str]]:
    """The screen cell by cell (character and style), however the segments happen to be split."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system="truecolor", record=True)
    console.print(app.screen._compositor.render_update(full=True))
    return [(char, str(segment.style)) for segment in console._record_buffer for char in segment.text]


def screen_rows(app: App[object]) -> list[list[tuple[str, Style | None]]]:
    """The screen row by row, one (text, style) per cell: a wide character fills its first cell and
    leaves '' in its second, a zero-width one joins the cell before it. The style carries what a
    click on the cell would do (`meta`) and any link."""
    rows = []
    for line in app.screen._compositor.render_update(full=True).strips:
        cells: list[tuple[str, Style | None]] = []
        for segment in (segment for strip in line for segment in strip):
            for char in segment.text:
                width = cell_len(char)
                if width == 0 and cells:
                    cells[-1] = (cells[-1][0] + char, cells[-1][1])
                    continue
                cells.append((char, segment.style))
                cells.extend([("", segment.style)] * (width - 1))
        rows.append(cells)
    return rows


def text_in(rows: list[list[tuple[str, Style | None]]], region: Region) -> str:
    """What the cells of `region` show, a line per row."""
    return "\n".join(
        "".join(char for char, _style in row[region.x : region.right]) for row in rows[region.y : region.bottom]
    )

"""What a Textual app shows, for comparing two screens."""

from __future__ import annotations

import io

from rich.console import Console
from textual.app import App


def screen_cells(app: App[object]) -> list[tuple[str, str]]:
    """The screen cell by cell (character and style), however the segments happen to be split."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, color_system="truecolor", record=True)
    console.print(app.screen._compositor.render_update(full=True))
    return [(char, str(segment.style)) for segment in console._record_buffer for char in segment.text]

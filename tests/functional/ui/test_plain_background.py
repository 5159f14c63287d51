"""`PlainBackground` paints a container's lines from one line of each kind: on the screen that must
be exactly what Textual paints line by line, and a container whose lines differ (a border, a hatch,
keylines) must be painted line by line."""

from __future__ import annotations

import asyncio

import pytest
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import Static

from app.ui.widgets.conversation.block import PlainBackground
from tests.support.screen import screen_cells

LOOKS = {
    "padding and a background": "padding: 1 2 2 1; background: red 30%;",
    "a border": "padding: 1; border: round green;",
    "an outline": "outline: heavy blue;",
    "a hatch": "hatch: right green 40%;",
    "keylines": "keyline: thin yellow; layout: grid; grid-size: 2;",
}


class Painted(Vertical):
    """Counts the lines Textual's own `render_lines` paints for it (the `PlainBackground` mixin,
    put before this class, calls it for the lines it paints)."""

    painted = 0

    def render_lines(self, crop: Region) -> list[Strip]:
        lines = super().render_lines(crop)
        self.painted += len(lines)
        return lines


class Plain(PlainBackground, Painted):
    pass


class Textuals(Painted):
    pass


class _Boxed(App[None]):
    def __init__(self, box: type[Painted], look: str) -> None:
        super().__init__()
        self.box = box
        self.look = look

    def compose(self) -> ComposeResult:
        box = self.box(Static("first"), Static("second", classes="apart"), Static("third"))
        box.styles.height = 14
        yield box

    def on_mount(self) -> None:
        self.query_one(self.box).set_styles(LOOKS[self.look])
        for static in self.query(".apart"):
            static.styles.margin = (2, 4)


async def _painted(box: type[Painted], look: str) -> tuple[list[tuple[str, str]], int]:
    """The screen's cells, and how many of the box's lines went through Textual's line painter."""
    app = _Boxed(box, look)
    async with app.run_test(size=(40, 16)) as pilot:
        await pilot.pause()
        painted = app.query_one(box)
        painted.painted = 0
        painted.refresh()
        cells = screen_cells(app)
    return cells, painted.painted


@pytest.mark.parametrize("look", list(LOOKS))
def test_a_plain_container_looks_as_textual_paints_it(look: str) -> None:
    (plain, plain_lines), (textuals, textuals_lines) = asyncio.run(_painted(Plain, look)), asyncio.run(
        _painted(Textuals, look)
    )
    assert plain == textuals
    if look == "padding and a background":
        assert (plain_lines, textuals_lines) == (3, 14)  # top padding, content, bottom padding
    else:
        assert plain_lines == textuals_lines == 14

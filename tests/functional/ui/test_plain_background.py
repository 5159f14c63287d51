"""`PlainBackground` paints a container's lines from one line of each kind: on the screen that must
be exactly what Textual paints line by line, and a container whose lines differ (a border, a hatch,
keylines) must be painted line by line."""

from __future__ import annotations

import asyncio

import pytest
from textual._styles_cache import StylesCache
from textual.app import App, ComposeResult
from textual.containers import Vertical
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


class Plain(PlainBackground, Vertical):
    pass


class Textuals(Vertical):
    pass


class _Boxed(App[None]):
    def __init__(self, box: type[Vertical], look: str) -> None:
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


async def _painted(box: type[Vertical], look: str) -> tuple[list[tuple[str, str]], int]:
    """The screen's cells, and how many of the box's lines went through Textual's line painter."""
    app = _Boxed(box, look)
    painted = 0
    render_line = StylesCache.render_line

    def counted(cache: StylesCache, *args: object, **kwargs: object) -> object:
        nonlocal painted
        painted += cache is app.query_one(box)._styles_cache
        return render_line(cache, *args, **kwargs)

    async with app.run_test(size=(40, 16)) as pilot:
        await pilot.pause()
        StylesCache.render_line = counted  # type: ignore[method-assign]
        try:
            app.query_one(box).refresh()
            cells = screen_cells(app)
        finally:
            StylesCache.render_line = render_line  # type: ignore[method-assign]
    return cells, painted


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

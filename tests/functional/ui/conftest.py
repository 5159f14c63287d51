"""The UI tests run on asyncio, the loop Textual and the MCP supervisors run on; `chinese` switches the
interface to zh_CN for one test; every snapshot is taken with still cursors."""

import inspect
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, TextArea

from app import i18n


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def chinese() -> Iterator[None]:
    before = i18n.current_language()
    i18n.set_language("zh_CN")
    try:
        yield
    finally:
        i18n.set_language(before)


@pytest.fixture
def snap_compare(snap_compare: Callable[..., bool]) -> Callable[..., bool]:
    """The plugin's `snap_compare`, with every input's and text area's cursor held still (visible
    where focused) before the picture: a blinking cursor made a picture depend on when it was taken
    (seen on a loaded machine as a filter box without its cursor)."""

    def compare(
        app: Any,
        terminal_size: tuple[int, int] = (80, 24),
        run_before: Callable[[Pilot[Any]], Awaitable[None] | None] | None = None,
    ) -> bool:
        async def still_cursors(pilot: Pilot[Any]) -> None:
            if run_before is not None:
                result = run_before(pilot)
                if inspect.isawaitable(result):
                    await result
            for screen in pilot.app.screen_stack:
                for widget in screen.query("Input, TextArea"):
                    assert isinstance(widget, (Input, TextArea))
                    widget.cursor_blink = False
            await pilot.pause()

        return snap_compare(app, terminal_size=terminal_size, run_before=still_cursors)

    return compare

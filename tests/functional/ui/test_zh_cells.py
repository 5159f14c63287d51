"""In Chinese, every screen shows the catalog's words whole (issue 24 item 9).

A newcomer in tmux at 120×40 saw `实时查看每次  求中各路由` in the help and `命令  板` in the
trajectory's footer: a wide character split where a widget underneath ends is drawn by Rich as two
spaces (`app/ui/wide_cells.py`). The chat runs with `LANG=zh_CN.UTF-8` as `toolscope` chooses its
language from it, visits every screen at 120×40, and each screen row is compared with the zh_CN
catalog: a row where a translated word appears with one of its characters replaced by two spaces
fails. A second test renders a partial update, as the terminal receives it, onto a grid of cells.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from babel.messages.pofile import read_po
from rich.cells import cell_len
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.geometry import Region
from textual.widgets import Static

from app import i18n
from app.i18n import _
from app.ui import keymap
from app.ui.text import LiteralApp, literal
from tests.functional.ui.chat_support import Bench, make_bench, run, send, settle, type_text, until
from tests.support.screen import screen_rows

pytestmark = pytest.mark.timeout(120)

SIZE = (120, 40)
CATALOG = Path(__file__).resolve().parents[3] / "translations" / "zh_CN" / "LC_MESSAGES" / "toolscope.po"
PLACEHOLDER = re.compile(r"\{[^}]*\}")


def catalog_words() -> set[str]:
    """Every run of the zh_CN translations between spaces and placeholders, three characters or
    longer, that holds a wide character: what a screen may show of them on one row."""
    with CATALOG.open("rb") as handle:
        catalog = read_po(handle, locale="zh_CN")
    words = set()
    for message in catalog:
        if not message.id:
            continue
        forms = message.string if isinstance(message.string, tuple) else (message.string,)
        for form in forms:
            for word in PLACEHOLDER.sub(" ", form).split():
                if len(word) >= 3 and any(cell_len(char) == 2 for char in word):
                    words.add(word)
    return words


def dropped(words: set[str], rows: list[str]) -> list[str]:
    """Rows where a catalog word shows with one of its inner wide characters drawn as two spaces
    (at either end it would read as the word's neighbour's spacing)."""
    found = []
    for word in words:
        for index in range(1, len(word) - 1):
            if cell_len(word[index]) != 2:
                continue
            maimed = word[:index] + "  " + word[index + 1 :]
            found += [f"{word!r} drawn as {row.strip()!r}" for row in rows if maimed in row and word not in row]
    return found


def shown(app: Any) -> list[str]:
    return ["".join(char for char, _style in row) for row in screen_rows(app)]


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Bench]:
    for variable in ("LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    before = i18n.current_language()
    assert i18n.setup_language() == "zh_CN"
    try:
        yield make_bench(tmp_path, monkeypatch)
    finally:
        i18n.set_language(before)


@pytest.mark.slow(seconds=15)
def test_every_screen_shows_the_catalog_words_whole(bench: Bench) -> None:
    words = catalog_words()
    seen: dict[str, list[str]] = {}

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE, notifications=True) as pilot:

            async def look(name: str) -> None:
                await settle(pilot)
                seen[name] = shown(app)

            async def visit(name: str, key: str) -> None:
                await pilot.press(key)
                await look(name)
                await pilot.press("escape")
                await settle(pilot)

            await send(pilot, "hello")
            await look("chat")
            await type_text(pilot, "/help")
            await pilot.press("enter")
            await look("help")
            await pilot.press(keymap.TRAJECTORY)  # closes the help, opens the trajectory
            await until(pilot, lambda: type(app.screen).__name__ == "TrajectoryScreen")
            # A toast over the trajectory's divider, where the newcomer saw 请 go missing.
            app.notify(_("Ctrl+G opens the inspector: what each route received for each request, live."))
            await look("trajectory")
            await pilot.press(keymap.TRAJECTORY_CLOSE)
            app.clear_notifications()
            await settle(pilot)
            await visit("palette", keymap.PALETTE)
            await visit("tools", keymap.TOOLS)
            await visit("routes", keymap.ROUTES)
            await visit("sessions", keymap.SESSIONS)
            await visit("inspector", keymap.INSPECT)

    run(scenario())
    assert set(seen) == {"chat", "help", "trajectory", "palette", "tools", "routes", "sessions", "inspector"}
    for name, rows in seen.items():
        assert any(word in row for row in rows for word in words), f"{name} shows no translated word"
    screen = "\n".join(seen["trajectory"])
    assert "命令面板" in screen and "实时查看每次请求中各路由收到了什么" in screen
    assert "搜索命令…" in "\n".join(seen["palette"])
    problems = [f"{name}: {problem}" for name, rows in seen.items() for problem in dropped(words, rows)]
    assert problems == []


# --- a partial update, as the terminal draws it ---------------------------------------------------


class Grid:
    """A terminal's cells: a wide character takes two, and writing over either half erases both."""

    def __init__(self, width: int, height: int) -> None:
        self.rows: list[list[str]] = [[" "] * width for _ in range(height)]
        self.x = self.y = 0

    def feed(self, data: str) -> None:
        for token in re.findall(r"\x1b\[(\d+);(\d+)H|\x1b\[[0-9;]*m|(\n)|(.)", data, re.S):
            row, column, newline, char = token
            if row:
                self.y, self.x = int(row) - 1, int(column) - 1
            elif newline:
                self.y, self.x = self.y + 1, 0
            elif char:
                self._put(char)

    def _put(self, char: str) -> None:
        line, width = self.rows[self.y], cell_len(char)
        for x in range(self.x, self.x + width):
            if line[x] == "":  # the right half of a wide character: its left half goes too
                line[x - 1] = " "
            elif x + 1 < len(line) and line[x + 1] == "" and cell_len(line[x]) == 2:
                line[x + 1] = " "
        line[self.x] = char
        if width == 2:
            line[self.x + 1] = ""
        self.x += width

    def text(self) -> list[str]:
        return ["".join(row) for row in self.rows]


class Overlap(LiteralApp[None]):
    """A notice over two panes whose border falls inside its wide characters."""

    CSS = """
    Horizontal { height: 3; }
    #left { width: 11; }
    #right { width: 1fr; }
    #notice { layer: above; width: 30; height: 1; }
    Screen { layers: below above; }
    """

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Static(literal("x"), id="left")
            yield Static(literal("y"), id="right")
        yield Static(literal("检查器：实时查看每次请求"), id="notice")


def test_a_partial_update_draws_a_wide_character_over_a_border_whole() -> None:
    """The notice's 时 straddles the panes' border: drawn whole in full, when either pane alone
    is drawn again, and when part of the notice is (that part ends inside 时's piece)."""
    notice = "检查器：实时查看每次请求"

    async def scenario() -> list[list[str]]:
        app = Overlap()
        async with app.run_test(size=(40, 4)) as pilot:
            await pilot.pause()
            compositor = app.screen._compositor
            grid = Grid(40, 4)
            grid.feed(compositor.render_update(full=True).render_segments(app.console))
            frames = [grid.text()]
            for name, part in (("#left", None), ("#right", None), ("#notice", Region(5, 0, 10, 1))):
                widget = app.query_one(name, Static)
                # What an update of the widget (or of its `part`) asks; drawn here before the screen does.
                widget.refresh(*(part,) if part else ())
                compositor.update_widgets({widget})
                update = compositor.render_update()
                assert update is not None
                grid.feed(update.render_segments(app.console))
                frames.append(grid.text())
            return frames

    for frame in run(scenario()):
        assert frame[0].startswith(notice)

"""Exporting from the palette asks where to write (issue 24 item 11): the dialog shows the file it
offers in the working directory, the user may edit it, Enter writes, Escape writes nothing. The
chat is the real app on the worked example of docs/inspect.md; what is written is read back from the disk."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.functional.test_inspect import worked_example, write_session
from tests.functional.ui.chat_support import Bench, make_bench, run, settle, type_text, until
from tests.functional.ui.test_inspector import exported, palette
from tests.support.screen import screen_rows
from tests.support.told import Told

pytestmark = pytest.mark.timeout(120)

SIZE = (120, 40)


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Bench:
    return make_bench(tmp_path, monkeypatch)


@pytest.fixture
def example(bench: Bench) -> Path:
    log, _developer = worked_example()
    return write_session(log, bench.root / "sessions")


def screen_text(app) -> str:
    return "\n".join("".join(char for char, _style in row) for row in screen_rows(app))


async def asked(pilot) -> str:
    """Wait for the export dialog to be on the screen; what the screen shows then."""
    await until(pilot, lambda: "Export as HTML to:" in screen_text(pilot.app))
    await pilot.pause()
    return screen_text(pilot.app)


async def accept_offered_path(pilot, fmt_name: str = "HTML") -> None:
    """Enter in the export dialog: the offered file is written."""
    await until(pilot, lambda: f"Export as {fmt_name} to:" in screen_text(pilot.app))
    await pilot.press("enter")


def export_with(bench: Bench, example: Path, *keys: str, text: str = "") -> tuple[str, list[str]]:
    """Run Export as HTML from the palette, press `keys` (then type `text`, then Enter) in the
    dialog; what the dialog showed and the export notifications."""
    notes: list[str] = []
    shown: list[str] = []

    async def scenario() -> None:
        app, told = bench.app(session=example), Told()
        async with app.run_test(size=SIZE, notifications=True, message_hook=told) as pilot:
            await until(pilot, lambda: app.view() is not None)
            await palette(pilot, "Export as HTML")
            shown.append(await asked(pilot))
            await pilot.press(*keys)
            if text:
                await type_text(pilot, text)
                await pilot.press("enter")
            await settle(pilot)
            await until(pilot, lambda: exported(told) or app.screen is app.chat)
            await settle(pilot)
            notes.extend(exported(told))

    run(scenario())
    return shown[0], notes


def test_the_dialog_offers_the_working_directory_and_enter_writes_there(bench, example) -> None:
    target = bench.workspace / f"toolscope-{example.stem}.html"
    shown, notes = export_with(bench, example, "enter")
    assert "Export as HTML to:" in shown and "Escape cancels" in shown
    assert target.name in shown
    assert notes == [f"Exported as HTML to {target}"]
    assert '<div class="context tool-change"' in target.read_text()


def test_an_edited_path_is_written_relative_to_the_working_directory(bench, example) -> None:
    _shown, notes = export_with(bench, example, "ctrl+u", text="page.html")
    target = bench.workspace / "page.html"
    assert notes == [f"Exported as HTML to {target}"]
    assert target.read_text().startswith("<!DOCTYPE html>")
    assert not list(bench.workspace.glob("toolscope-*"))


def test_a_directory_gets_the_offered_name_inside_it(bench, example) -> None:
    (bench.workspace / "exports").mkdir()
    _shown, notes = export_with(bench, example, "ctrl+u", text="exports")
    target = bench.workspace / "exports" / f"toolscope-{example.stem}.html"
    assert notes == [f"Exported as HTML to {target}"]
    assert target.is_file()


def test_escape_writes_nothing(bench, example) -> None:
    _shown, notes = export_with(bench, example, "escape")
    assert notes == []
    assert sorted(path.name for path in bench.workspace.iterdir()) == ["README.md"]

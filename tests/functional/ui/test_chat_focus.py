"""Where the user's keys go in the chat: typing always reaches the prompt, and Escape closes what is
on top (the help, a picker, the tools, the inspector, the trajectory, the keys panel)."""

from __future__ import annotations

import pytest
from textual import events
from textual.widgets import Input

from app.ui.screens.help import HelpScreen
from app.ui.screens.route_picker import RoutePickerScreen
from app.ui.widgets.composer import Composer
from app.ui.widgets.conversation.approval import ApprovalPrompt
from tests.functional.ui.chat_support import SIZE, make_bench, run, send, settle, type_text, until
from tests.support.screen import screen_rows, text_in

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def bench(tmp_path, monkeypatch):
    return make_bench(tmp_path, monkeypatch)


def screen_text(app) -> str:
    """Every character on the screen, row after row (what a user reads)."""
    return "\n".join("".join(char for char, _style in row) for row in screen_rows(app))


class TestTypingReachesThePrompt:
    def test_keys_typed_with_a_block_focused_go_to_the_prompt(self, bench) -> None:
        async def scenario() -> None:
            app = bench.app()
            async with app.run_test(size=SIZE) as pilot:
                await send(pilot, "use read_file on README.md")
                await pilot.press("shift+tab")
                assert not isinstance(app.focused, Composer)
                await type_text(pilot, "next one")
                assert isinstance(app.focused, Composer)
                assert app.chat.composer.text == "next one"

        run(scenario())

    def test_a_burst_typed_with_a_block_focused_arrives_whole_and_in_order(self, bench) -> None:
        """As tmux sends typed text: every key posted before the first is handled."""

        async def scenario() -> None:
            app = bench.app()
            async with app.run_test(size=SIZE) as pilot:
                await send(pilot, "use read_file on README.md")
                await pilot.press("shift+tab")
                burst = "the quick brown fox jumps over 13 lazy dogs"
                for char in burst:
                    app.post_message(events.Key("space" if char == " " else char, char))
                await until(pilot, lambda: len(app.chat.composer.text) >= len(burst))
                await settle(pilot)
                assert app.chat.composer.text == burst

        run(scenario())

    def test_closing_a_screen_gives_the_prompt_back_its_keys(self, bench) -> None:
        """One chat for every screen (each start is a second of the suite)."""

        async def scenario() -> None:
            app = bench.app()
            async with app.run_test(size=SIZE) as pilot:
                await send(pilot, "use read_file on README.md")
                chat = app.screen
                for key in ("ctrl+t", "ctrl+g", "ctrl+l", "ctrl+r", "ctrl+o", "f1", "ctrl+p"):
                    await pilot.press("shift+tab")
                    assert not isinstance(app.focused, Composer), key
                    await pilot.press(key)
                    await until(pilot, lambda: app.screen is not chat)
                    await pilot.press("escape")
                    await until(pilot, lambda: app.screen is chat)
                    await settle(pilot)
                    assert isinstance(app.focused, Composer), key

        run(scenario())

    def test_an_approval_prompt_keeps_its_keys(self, bench) -> None:
        async def scenario() -> None:
            app = bench.app()
            async with app.run_test(size=SIZE) as pilot:
                await send(pilot, "use write_file on notes.txt with hello", wait=False)
                await until(pilot, lambda: app.chat.query(ApprovalPrompt))
                await until(pilot, lambda: isinstance(app.focused, ApprovalPrompt))
                await pilot.press("n")
                await until(pilot, lambda: not app.turn_running)
                await settle(pilot)
                assert app.chat.composer.text == ""
                assert not (bench.workspace / "notes.txt").exists()

        run(scenario())


class TestEscapeClosesPanels:
    def test_help_is_a_screen_with_a_way_out_that_escape_f1_and_help_close(self, bench) -> None:
        async def scenario() -> None:
            app = bench.app()
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, lambda: app.registry is not None)
                chat = app.screen
                for opened_by, closed_by in ((["f1"], "escape"), (["f1"], "f1"), (None, "escape"), (None, "f1")):
                    if opened_by is None:
                        await type_text(pilot, "/help")
                        await pilot.press("enter")
                    else:
                        await pilot.press(*opened_by)
                    await until(pilot, lambda: app.screen is not chat)
                    shown = screen_text(app)
                    assert "Keys and commands" in shown
                    assert "Escape closes" in shown
                    await pilot.press(closed_by)
                    await until(pilot, lambda: app.screen is chat)
                    assert "Keys and commands" not in screen_text(app)
                    assert app.chat.composer.text == ""

        run(scenario())

    def test_a_picker_opened_from_the_help_replaces_it(self, bench) -> None:
        async def scenario() -> None:
            app = bench.app()
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, lambda: app.registry is not None)
                await pilot.press("f1")
                await until(pilot, lambda: isinstance(app.screen, HelpScreen))
                await pilot.press("ctrl+r")
                await until(pilot, lambda: isinstance(app.screen, RoutePickerScreen))
                await settle(pilot)
                dialog = app.screen.query_one("#picker-dialog").region
                assert "Keys and commands" not in text_in(screen_rows(app), dialog)
                assert not any(isinstance(screen, HelpScreen) for screen in app.screen_stack)
                await pilot.press("escape")
                await until(pilot, lambda: app.screen is app.chat)

        run(scenario())

    def test_escape_hides_the_keys_panel_before_it_cancels_anything(self, bench) -> None:
        async def scenario() -> None:
            app = bench.app()
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, lambda: app.registry is not None)
                app.action_show_help_panel()
                await settle(pilot)
                assert app.screen.query("HelpPanel")
                await pilot.press("escape")
                await settle(pilot)
                assert not app.screen.query("HelpPanel")

        run(scenario())

    def test_escape_closes_the_command_palette(self, bench) -> None:
        async def scenario() -> None:
            app = bench.app()
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, lambda: app.registry is not None)
                chat = app.screen
                await pilot.press("ctrl+p")
                await until(pilot, lambda: app.screen is not chat and app.screen.query(Input))
                await pilot.press("escape")
                await until(pilot, lambda: app.screen is chat)
                await type_text(pilot, "ok")
                assert app.chat.composer.text == "ok"

        run(scenario())

    def test_escape_hides_the_keys_panel_in_the_trajectory_too(self, bench) -> None:
        from app.trajectory.source import SessionFileSource
        from app.ui.trajectory.app import TrajectoryApp
        from app.ui.trajectory.screen import TrajectoryScreen

        async def scenario() -> None:
            app = bench.app()
            async with app.run_test(size=SIZE) as pilot:
                await send(pilot, "hello")
            trajectory_app = TrajectoryApp(SessionFileSource.open(bench.sessions()[0]))
            async with trajectory_app.run_test(size=SIZE) as pilot:
                await until(pilot, lambda: isinstance(trajectory_app.screen, TrajectoryScreen))
                trajectory = trajectory_app.screen
                trajectory_app.action_show_help_panel()
                await settle(pilot)
                assert trajectory.query("HelpPanel")
                await pilot.press("escape")
                await settle(pilot)
                assert not trajectory.query("HelpPanel") and trajectory_app.screen is trajectory

        run(scenario())

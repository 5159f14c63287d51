"""The inspector driven by its pilot: the worked example of docs/inspect.md opened by the chat app, the live
inspector over a chat with the offline model, and the palette's exports read back.

What the inspector shows is compared with the report model (`inspect_requests`), which the CLI
tests check against the worked example: the screen must lay that model out, not compute its own.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from textual.command import CommandList
from textual.widgets import Checkbox, Static

from app import i18n
from app.export.view_json import view_json
from app.report.model import inspect_requests
from app.session.session import Session
from app.ui.messages import PromptSubmitted
from app.ui.screens.inspector import InspectorScreen, RouteChooser
from app.ui.screens.tools import ToolsScreen
from app.display import token_count
from app.ui import keymap
from app.ui.widgets.inspector import InspectorMode, RouteColumn
from tests.functional.test_export import KEY as HOSTILE_KEY
from tests.functional.test_export import crafted_log
from tests.functional.test_inspect import worked_example, write_session
from tests.functional.ui.chat_support import make_bench, run, send, settle, type_text, until
from tests.support.told import Told, turn_ends

pytestmark = pytest.mark.timeout(120)

WIDE = (160, 45)
ONE_PER_MODE = ["deepseek/deepseek-flash", "anthropic/claude-sonnet", "openai/gpt"]
"""addition-only, in-history, none."""


@pytest.fixture
def bench(tmp_path, monkeypatch):
    return make_bench(tmp_path, monkeypatch)


@pytest.fixture
def example(bench) -> Path:
    log, _developer = worked_example()
    return write_session(log, bench.root / "sessions")


async def open_inspector(pilot, *args, **kwargs) -> InspectorScreen:
    app = pilot.app
    await until(pilot, lambda: app.view() is not None and app.registry is not None)
    screen = InspectorScreen(*args, **kwargs)
    await app.push_screen(screen)
    await pilot.pause()
    return screen


def shown_text(screen: InspectorScreen) -> dict[str, str]:
    """Each route column shown: its text as on the screen."""
    return {
        column.route.id: str(column.query_one(".route-content", Static).render())
        for column in screen.query(RouteColumn)
        if column.display
    }


def heading(screen: InspectorScreen) -> str:
    return str(screen.query_one("#inspector-request", Static).render())


def change_line(screen: InspectorScreen) -> str:
    return str(screen.query_one("#inspector-change", Static).render())


def test_previous_and_next_walk_the_requests_and_each_shows_its_tool_change(bench, example) -> None:
    async def scenario() -> None:
        app = bench.app(session=example)
        async with app.run_test(size=WIDE) as pilot:
            screen = await open_inspector(pilot, 3, follow_latest=False)
            assert heading(screen).startswith("Request 3 of 6 · turn 2, step 1")
            assert change_line(screen) == "Tools since the previous request: added time"
            await pilot.press("n")
            assert screen.request == 4 and change_line(screen) == "Tools since the previous request: removed grep"
            await pilot.press("n", "n", "n")
            assert screen.request == 6 and change_line(screen) == "No tool change since the previous request"
            for _ in range(7):
                await pilot.press("p")
            assert screen.request == 1 and change_line(screen) == "First request: 2 tools (read, grep)"
            # Every route of the catalog is shown, page by page, laid out from the report model.
            (report,) = inspect_requests(app.view().requests, list(app.catalog), only=1)
            texts = shown_text(screen)
            await pilot.press("right")
            texts |= shown_text(screen)
            assert list(texts) == list(app.catalog.ids)
            for position, route_report in enumerate(report.routes):
                text = texts[route_report.route.id]
                same = [earlier.route.id for earlier in report.routes[:position] if earlier.same_summary_as(route_report)]
                if same:
                    assert text.startswith(f"Same as {same[0]}: ")
                    continue
                assert "Prefix: kept" in text
                for declaration in route_report.projected.declarations:
                    assert declaration.tool.name in text
            await pilot.press("escape")
            assert app.screen is app.chat

    run(scenario())


def test_the_request_asked_for_is_shown_once_the_session_has_loaded(bench, example) -> None:
    async def scenario() -> None:
        app = bench.app(session=example)
        async with app.run_test(size=WIDE) as pilot:
            await until(pilot, lambda: app.view() is not None)
            # A source that has no session yet, as while the trajectory is still reading the file.
            loaded: list[object] = [None]
            screen = InspectorScreen(3, follow_latest=False, source=lambda: loaded[0])
            await app.push_screen(screen)
            assert heading(screen) == "This session has no model requests yet."
            loaded[0] = app.view()
            app.session_advanced.publish(None)
            await pilot.pause()
            assert screen.request == 3 and heading(screen).startswith("Request 3 of 6")

    run(scenario())


def test_switching_the_language_words_the_open_inspector_again(bench, example) -> None:
    async def scenario() -> None:
        app = bench.app(session=example)
        async with app.run_test(size=WIDE) as pilot:
            screen = await open_inspector(pilot, 4, follow_latest=False, shown=ONE_PER_MODE)
            try:
                await app.run_action("switch_language")
                await settle(pilot)
                assert app.screen is screen and screen.request == 4
                assert heading(screen).startswith("请求 4/6")
                assert screen.query_one(RouteChooser).border_title == "显示的路由"
                assert list(shown_text(screen)) == ONE_PER_MODE
                assert "缓存前缀" in shown_text(screen)["openai/gpt"]
            finally:
                i18n.set_language("en")

    run(scenario())


def test_each_mode_declares_what_design_5_says_after_each_change(bench, example) -> None:
    def declared(text: str) -> list[str]:
        lines = text.split("Declarations\n", 1)[1].split("\nBlocks", 1)[0].splitlines()
        return [" ".join(line.split()) for line in lines]

    async def scenario() -> None:
        app = bench.app(session=example)
        async with app.run_test(size=WIDE) as pilot:
            screen = await open_inspector(pilot, 4, follow_latest=False, shown=ONE_PER_MODE)
            texts = shown_text(screen)
            assert list(texts) == ONE_PER_MODE
            flash, sonnet, gpt = (texts[route] for route in ONE_PER_MODE)
            # After d2 (−grep): addition-only drops grep and breaks the prefix; in-history keeps it.
            assert declared(flash) == ["read initial", "time added defer_loading"]
            assert "Prefix: broken at /tools/2" in flash
            assert declared(sonnet) == ["read initial", "grep retained after removal", "time added defer_loading"]
            assert "Prefix: kept" in sonnet and "tool removal grep" in " ".join(sonnet.split())
            # none: the tools in force, no defer_loading, no blocks; the prefix breaks.
            assert declared(gpt) == ["read initial", "time added"]
            assert "Prefix: broken at /tools/1" in gpt and "Blocks: none" in gpt
            assert "Beta header: anthropic-beta: mid-conversation-tool-changes-2026-07-01" in " ".join(sonnet.split())
            assert "Beta header: none" in gpt

    run(scenario())


def test_the_route_chooser_shows_only_the_chosen_routes(bench, example) -> None:
    async def scenario() -> None:
        app = bench.app(session=example)
        async with app.run_test(size=WIDE) as pilot:
            screen = await open_inspector(pilot, 2, follow_latest=False)
            chooser = screen.query_one(RouteChooser)
            assert not chooser.has_class("-open")
            await pilot.press("r")
            first = chooser.query(Checkbox).first()
            assert chooser.has_class("-open") and app.focused is first
            # Space switches the highlighted route off; down and space the next one too.
            await pilot.press("space", "down", "space")
            hidden = list(app.catalog.ids)[:2]
            assert screen.shown_routes == [route for route in app.catalog.ids if route not in hidden]
            # Beside the open chooser, two routes fit on a page at this width.
            assert list(shown_text(screen)) == screen.shown_routes[:2]
            # A click switches one back on.
            await pilot.click(first)
            await pilot.pause()
            assert list(app.catalog.ids)[0] in shown_text(screen)
            # The choice stays while moving between requests; Escape closes the chooser first.
            await pilot.press("escape")
            assert not chooser.has_class("-open") and app.screen is screen
            await pilot.press("n")
            assert screen.request == 3 and list(app.catalog.ids)[1] not in shown_text(screen)

    run(scenario())


def test_the_body_and_diff_toggles_show_the_wire_json_and_its_diff(bench, example) -> None:
    async def scenario() -> None:
        app = bench.app(session=example)
        async with app.run_test(size=WIDE) as pilot:
            screen = await open_inspector(pilot, 3, follow_latest=False, shown=["offline/demo"])
            (report,) = inspect_requests(app.view().requests, list(app.catalog), only=3)
            route = next(r for r in report.routes if r.route.id == "offline/demo")
            await pilot.press("b")
            assert screen.mode is InspectorMode.BODY
            body = shown_text(screen)["offline/demo"]
            assert json.loads(body) == route.wire.body
            await pilot.press("d")
            assert screen.mode is InspectorMode.DIFF
            assert shown_text(screen)["offline/demo"].splitlines() == route.body_diff()
            await pilot.press("d")
            assert screen.mode is InspectorMode.SUMMARY
            assert shown_text(screen)["offline/demo"].startswith("Prefix: kept")
            # The first request has nothing to compare with.
            await pilot.press("p", "p", "d")
            assert shown_text(screen)["offline/demo"] == "No previous body on this route to compare with."

    run(scenario())


def test_the_key_never_reaches_the_inspector_and_hostile_text_is_literal(bench, monkeypatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", HOSTILE_KEY)
    path = write_session(crafted_log(), bench.root / "sessions")

    async def scenario() -> None:
        app = bench.app(session=path)
        async with app.run_test(size=WIDE) as pilot:
            screen = await open_inspector(pilot, 7, follow_latest=False)
            for key in ("b", "d"):
                await pilot.press(key)
                texts = shown_text(screen)
                everything = "\n".join(texts.values())
                assert HOSTILE_KEY not in everything and "[redacted]" in everything
                assert "\x1b" not in everything and "\u202e" not in everything
                assert "[bold red]rich[/]" in everything  # Rich markup shown as typed

    assert HOSTILE_KEY in path.read_text()
    run(scenario())


@pytest.mark.slow(seconds=12)
def test_the_live_inspector_follows_the_chat_as_turns_stream_and_a_plugin_is_switched(bench) -> None:
    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=WIDE) as pilot:
            await send(pilot, "hello")
            await pilot.press("ctrl+g")
            screen = app.screen
            assert isinstance(screen, InspectorScreen) and screen.following
            assert heading(screen).startswith("Request 1 of 1")
            # The route that ran the request shows what the offline model recorded beside the estimate.
            (usage,) = [request.outcome.usage for request in app.view().requests]
            await pilot.press(keymap.INSPECT_LATER_ROUTES)  # the offline route is on the second page
            (ran,) = [column for column in screen.query(RouteColumn) if column.display and column.route.id == "offline/demo"]
            recorded = f"recorded {token_count(usage.cache_read)} cached, {token_count(usage.input - usage.cache_read)} uncached"
            assert f" uncached · {recorded} · no price" in str(ran.query_one(".route-cost", Static).render())
            await pilot.press(keymap.INSPECT_EARLIER_ROUTES)
            # The plugin is switched on in the tools screen, opened over the inspector.
            await pilot.press("ctrl+t")
            assert isinstance(app.screen, ToolsScreen)
            calculator = next(
                panel.query_one(Checkbox) for panel in app.screen.query(".source") if panel.source_name == "calculator"
            )
            calculator.focus()
            await pilot.press("space")
            await pilot.press("escape")
            assert app.screen is screen and screen.request == 1
            # The next prompt, as the composer under the inspector sends it: the inspector moves to
            # each request as it is logged (the tool call, then the answer).
            seen: list[int] = []
            app.session_advanced.subscribe(screen, lambda _event: seen.append(screen.request), immediate=True)
            ended = turn_ends(app)
            app.post_message(PromptSubmitted("use calculate on 6*7"))
            await until(pilot, lambda: ended() and not app.turn_running)
            await settle(pilot)
            assert screen.request == 3 and heading(screen).startswith("Request 3 of 3")
            assert 2 in seen
            await pilot.press("p")
            assert not screen.following
            assert change_line(screen) == "Tools since the previous request: added calculate"
            assert "tool addition  calculate" in shown_text(screen)["deepseek/deepseek-flash"]
            # offline/demo, on the next page, carries the same declarations and block.
            await pilot.press("right")
            assert shown_text(screen)["offline/demo"].startswith("Same as deepseek/deepseek-flash: ")
            # Not following: a new request leaves the screen where it is, until f follows again.
            ended = turn_ends(app)
            app.post_message(PromptSubmitted("thanks"))
            await until(pilot, lambda: ended() and not app.turn_running)
            await settle(pilot)
            assert screen.request == 2 and heading(screen).startswith("Request 2 of 4")
            await pilot.press("f")
            assert screen.request == 4 and screen.following

    run(scenario())


def test_inspect_before_any_request_says_so_and_fills_in_when_one_is_logged(bench) -> None:
    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=WIDE) as pilot:
            await until(pilot, lambda: app.registry is not None)
            await type_text(pilot, "/inspect")
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, InspectorScreen))
            screen = app.screen
            assert heading(screen) == "This session has no model requests yet."
            ended = turn_ends(app)
            app.post_message(PromptSubmitted("hello"))
            await until(pilot, lambda: ended() and not app.turn_running)
            await settle(pilot)
            assert heading(screen).startswith("Request 1 of 1")

    run(scenario())


# --- export from the palette ---------------------------------------------------------------------


async def palette(pilot, title: str) -> None:
    """Type `title` into the command palette and run the command once it is the first hit."""
    await pilot.press("ctrl+p")
    await until(pilot, lambda: pilot.app.screen.query(CommandList))
    await type_text(pilot, title)

    def first_hit() -> str:
        hits = pilot.app.screen.query_one(CommandList)
        return str(hits.get_option_at_index(0).prompt) if hits.option_count else ""

    await until(pilot, lambda: first_hit().startswith(title))
    await pilot.press("enter")


def exported(told: Told) -> list[str]:
    """The notifications about an export."""
    return told.notes("xport")


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_export_from_the_palette_writes_the_session_in_the_working_directory(bench, example, fmt) -> None:
    from tests.functional.ui.test_export_dialog import accept_offered_path

    titles = {"md": "Export as Markdown", "html": "Export as HTML", "json": "Export as JSON"}
    target = bench.workspace / f"toolscope-{example.stem}.{fmt}"
    notes: list[str] = []

    async def scenario() -> None:
        app, told = bench.app(session=example), Told()
        async with app.run_test(size=WIDE, message_hook=told) as pilot:
            await until(pilot, lambda: app.view() is not None)
            await palette(pilot, titles[fmt])
            await accept_offered_path(pilot, titles[fmt].removeprefix("Export as "))
            await until(pilot, lambda: exported(told))
            notes.extend(exported(told))

    run(scenario())
    assert notes == [f"Exported as { {'md': 'Markdown', 'html': 'HTML', 'json': 'JSON'}[fmt]} to {target}"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    text = target.read_text()
    view = Session.open(example).view()
    if fmt == "json":
        data = json.loads(text)
        # The session view, with each request's cache diagnostic per route and the cost per route.
        assert data.pop("cost")["routes"] and all(request.pop("cache") for request in data["requests"])
        assert data == json.loads(json.dumps(view_json(view)))
        return
    reports = inspect_requests(view.requests, [])
    changes = [report.tool_change for report in reports if report.tool_change.changed]
    assert len(changes) == 3
    if fmt == "md":
        assert "> **Context** · Tool added: `time`" in text
        assert "> **Context** · Tool removed: `grep`" in text
        assert "> **Context** · Tool added: `grep`" in text
        assert text.count("Tools since the previous request: ") == 3
    else:
        assert text.count('<div class="context tool-change"') == 3
        for change in ("added <code>time</code>", "removed <code>grep</code>", "added <code>grep</code>"):
            assert f"Tools since the previous request: {change}" in text


def test_export_before_the_first_prompt_says_there_is_nothing_yet(bench) -> None:
    notes: list[str] = []

    async def scenario() -> None:
        app, told = bench.app(), Told()
        async with app.run_test(size=WIDE, message_hook=told) as pilot:
            await until(pilot, lambda: app.registry is not None)
            await palette(pilot, "Export as HTML")
            await until(pilot, lambda: exported(told))
            notes.extend(exported(told))

    run(scenario())
    assert notes == ["Nothing to export yet: the session starts with the first prompt."]
    assert not list(bench.workspace.glob("toolscope-*"))

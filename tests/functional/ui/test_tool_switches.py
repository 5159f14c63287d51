"""Tool switches across a resume (issue 24 item 6), driven by the pilot as a user would: sources
switched in the tools screen (Ctrl+T), a prompt, quitting, then the chat `toolscope -c` opens.

A resumed chat starts with the sources its last header had; its first prompt records no tool change
when nothing changed; the tools screen says where a source differs from the config; and
`[tools] remember_switches` decides whether a switch is saved to config.toml. The sources are the
real plugins and the real MCP stdio server of `tests/support/mcp_servers/`.
"""

from __future__ import annotations

import json
import sys

import pytest
from textual.widgets import Static

from app.agent.runtime import latest_session
from app.config import load_config
from app.session.ids import session_file
from app.tools.source_state import ServerState
from app.ui import keymap
from app.ui.app import ToolscopeApp
from app.ui.screens.tools import SourceSwitch, ToolsScreen
from app.ui.widgets.conversation.context_node import ContextBlock
from tests.functional.e2e.harness import TOOLS_SERVER
from tests.functional.ui.chat_support import SIZE, Bench, make_bench, run, send, settle, tools_ready, type_text, until
from tests.support.screen import screen_cells
from tests.support.told import Told

pytestmark = pytest.mark.timeout(120)

LAB = [
    "[mcp.servers.lab]",
    f'command = "{sys.executable}"',
    f'args = ["{TOOLS_SERVER}"]',
    "enabled = false",
    "",
]


@pytest.fixture
def bench(tmp_path, monkeypatch):
    return make_bench(tmp_path, monkeypatch)


def continued(bench: Bench) -> ToolscopeApp:
    """The chat `toolscope -c` opens: the session written to last."""
    directory = bench.home / "sessions"
    return bench.app(session=session_file(directory, latest_session(directory)))


def shown(app: ToolscopeApp) -> str:
    return "".join(char for char, _style in screen_cells(app))


async def open_tools(pilot) -> ToolsScreen:  # type: ignore[no-untyped-def]
    app = pilot.app
    await until(pilot, lambda: tools_ready(app))
    await pilot.press(keymap.TOOLS)
    await until(pilot, lambda: isinstance(app.screen, ToolsScreen))
    await pilot.pause()
    return app.screen


def switch_of(screen: ToolsScreen, title: str) -> SourceSwitch:
    return next(switch for switch in screen.query(SourceSwitch) if str(switch.label) == title)


async def flip(pilot, title: str) -> None:  # type: ignore[no-untyped-def]
    """Switch one source from the tools screen by keyboard, then close it."""
    screen = await open_tools(pilot)
    switch = switch_of(screen, title)
    before = switch.value
    switch.focus()
    await pilot.press("space")
    await until(pilot, lambda: switch.value is not before)
    await pilot.press("escape")
    await settle(pilot)


def logged(bench: Bench, kind: str) -> list[dict]:
    """The `data` of every event of one type in the session file, in order."""
    lines = (json.loads(line) for line in bench.sessions()[0].read_text().splitlines()[1:])
    return [event["data"] for event in lines if event["type"] == kind]


def tool_names(header: dict) -> list[str]:
    return [tool["name"] for tool in header["tools"]]


def test_a_plugin_switched_on_is_on_after_resume_and_the_first_prompt_records_no_change(bench) -> None:
    async def before() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "hello")
            await flip(pilot, "Calculator")
            await send(pilot, "use calculate on 6*7")

    async def after() -> list[str]:
        app = continued(bench)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.chat.conversation.blocks)
            await until(pilot, lambda: tools_ready(app))
            in_force = [tool.name for tool in app.registry.definitions()]
            await send(pilot, "hello again")
            assert not [block for block in app.chat.conversation.blocks[-3:] if isinstance(block, ContextBlock)]
            assert "removed" not in shown(app)
        return in_force

    run(before())
    headers, changes = logged(bench, "request/header"), logged(bench, "developer/message")
    assert "calculate" in tool_names(headers[-1])
    in_force = run(after())
    assert in_force == tool_names(headers[-1])
    # Nothing changed, so the resumed prompt's request goes on under the last header: no new one,
    # no tool-change message.
    assert len(logged(bench, "user/message")) == 3
    assert logged(bench, "request/header") == headers
    assert logged(bench, "developer/message") == changes


def test_an_mcp_server_switched_on_is_started_again_on_resume(bench) -> None:
    bench.config_lines += ["[tools]", 'remember_switches = "session"', "", *LAB]

    async def before() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "hello")
            assert app.registry.mcp_servers()[0].state is ServerState.STOPPED  # off in the config
            await flip(pilot, "lab")
            await until(pilot, lambda: app.registry.mcp_servers()[0].state is ServerState.RUNNING)
            await send(pilot, "use lab__echo with hi")

    async def after() -> None:
        app = continued(bench)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: tools_ready(app))
            assert app.registry.mcp_servers()[0].state is ServerState.RUNNING
            await send(pilot, "hello again")
            screen = await open_tools(pilot)
            assert "on in this session · off in config" in shown(app)
            assert switch_of(screen, "lab").value is True

    run(before())
    headers, changes = logged(bench, "request/header"), logged(bench, "developer/message")
    assert "lab__echo" in tool_names(headers[-1])
    run(after())
    assert len(logged(bench, "user/message")) == 3
    assert logged(bench, "request/header") == headers
    assert logged(bench, "developer/message") == changes


def test_switches_for_this_session_only_leave_config_toml_untouched_and_show_the_difference(bench) -> None:
    bench.config_lines += ["# my settings", "[tools]", 'remember_switches = "session"', ""]

    async def scenario() -> None:
        app = bench.app()
        config = bench.root / "config.toml"
        written = config.read_bytes(), config.stat().st_mtime_ns
        async with app.run_test(size=SIZE) as pilot:
            await flip(pilot, "Calculator")
            await open_tools(pilot)
            text = shown(app)
            assert "on in this session · off in config" in text
            assert "Switches last for this session" in text
        assert (config.read_bytes(), config.stat().st_mtime_ns) == written
        assert not (bench.home / "config.toml").exists()

    run(scenario())


def test_switches_saved_to_the_config_write_config_toml_and_keep_the_rest_of_it(bench) -> None:
    bench.config_lines += [
        "# my settings: kept as written",
        "[tools]",
        'remember_switches = "config"   # saved',
        "command_timeout = 60",
        "",
        "[plugins]",
        'enabled = ["clock"]  # the clock first',
        "",
        *LAB,
    ]

    async def scenario() -> None:
        app = bench.app()
        config = bench.root / "config.toml"
        original = config.read_text()
        async with app.run_test(size=SIZE) as pilot:
            await flip(pilot, "Calculator")
            await flip(pilot, "lab")
            await until(pilot, lambda: "enabled = true" in config.read_text())
            await open_tools(pilot)
            text = shown(app)
            assert "in this session ·" not in text
            assert "Switches are saved to" in text
        saved = config.read_text()
        assert saved == original.replace('["clock"]', '["clock", "calculator"]').replace(
            "enabled = false", "enabled = true"
        )
        loaded = load_config(config)
        assert loaded.plugins.enabled == ["clock", "calculator"]
        assert loaded.mcp.servers["lab"].enabled is True

    run(scenario())


def test_with_no_config_file_a_saved_switch_creates_one_in_the_data_dir(bench) -> None:
    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await flip(pilot, "Clock")
        config = bench.home / "config.toml"
        assert load_config(config).plugins.enabled == ["clock"]
        assert config.stat().st_mode & 0o077 == 0

    run(scenario())


def test_a_switch_that_cannot_be_saved_says_so_holds_for_the_session_and_leaves_the_file(bench) -> None:
    bench.config_lines += ["[plugins]", "enabled = []", ""]

    async def scenario() -> None:
        app, told = bench.app(), Told()
        config = bench.root / "config.toml"
        async with app.run_test(size=SIZE, message_hook=told) as pilot:
            await until(pilot, lambda: tools_ready(app))
            config.write_text("[plugins]\nenabled = []\ntypo = 1\n")  # edited by hand meanwhile
            await flip(pilot, "Calculator")
            await until(pilot, lambda: told.notifications)
            (note,) = told.notifications
            assert note.title == "The switch was not saved" and "unknown key 'typo'" in str(note.message)
            assert "calculate" in [tool.name for tool in app.registry.definitions()]
            await open_tools(pilot)
            assert "on in this session · off in config" in shown(app)
        assert config.read_text() == "[plugins]\nenabled = []\ntypo = 1\n"

    run(scenario())


def test_a_session_chosen_with_ctrl_o_brings_its_sources_back(bench) -> None:
    from app.ui.screens.session_picker import SessionPickerScreen

    bench.config_lines += ["[tools]", 'remember_switches = "session"', ""]

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await flip(pilot, "Calculator")
            await send(pilot, "use calculate on 6*7")
        (first,) = bench.sessions()
        headers = logged(bench, "request/header")
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "hello")
            assert "calculate" not in [tool.name for tool in app.registry.definitions()]
            await pilot.press(keymap.SESSIONS)
            await until(pilot, lambda: isinstance(app.screen, SessionPickerScreen))
            await until(pilot, lambda: app.screen.query_one("#picker-table").row_count == 2)
            await type_text(pilot, "calculate")
            await pilot.press("enter")
            await until(pilot, lambda: app.writer is not None and app.writer.path == first)
            await until(pilot, lambda: "calculate" in [tool.name for tool in app.registry.definitions()])
            await send(pilot, "hello again")
        lines = [json.loads(line) for line in first.read_text().splitlines()[1:]]
        assert [event["data"] for event in lines if event["type"] == "request/header"] == headers

    run(scenario())


class TestToolListsKeptForServersNotRunning:
    """A server switched off or not yet started shows the tools it listed when last seen, marked as
    such and never declared (issue 26 item 3); the cache file they come from is untrusted."""

    def panel(self, app: ToolscopeApp, name: str) -> str:
        return " ".join(
            str(static.render()) for static in switch_of(app.screen, name).parent.parent.query(Static)
        )

    def test_a_server_seen_once_shows_its_tools_when_off_in_this_and_the_next_session(self, bench) -> None:
        bench.config_lines += ["[tools]", 'remember_switches = "session"', "", *LAB]

        async def first() -> None:
            app = bench.app()
            async with app.run_test(size=SIZE) as pilot:
                await open_tools(pilot)
                assert "no tools" in self.panel(app, "lab") and "Last seen" not in self.panel(app, "lab")
                await pilot.press("escape")
                await flip(pilot, "lab")  # on: it lists its tools
                await until(pilot, lambda: app.registry.mcp_servers()[0].state is ServerState.RUNNING)
                await flip(pilot, "lab")  # off again
                await until(pilot, lambda: app.registry.mcp_servers()[0].state is ServerState.STOPPED)
                await open_tools(pilot)
                text = self.panel(app, "lab")
                assert "Last seen" in text and "offered to the model only while the server runs" in text
                assert "lab__echo" in text and "lab__swap_tools" in text
                assert not [tool for tool in app.registry.definitions() if tool.name.startswith("lab__")]

        async def next_session() -> str:
            app = bench.app()
            async with app.run_test(size=SIZE) as pilot:
                await open_tools(pilot)
                assert not [tool for tool in app.registry.definitions() if tool.name.startswith("lab__")]
                return self.panel(app, "lab")

        run(first())
        cache = bench.home / "mcp-tools.json"
        assert cache.stat().st_mode & 0o777 == 0o600
        text = run(next_session())
        assert "MCP server · off" in text and "Last seen" in text and "lab__echo" in text
        # Foreign content in the cache's place is ignored (never shown), and the next listing
        # writes the file again.
        cache.write_text('{"format": 1, "servers": {"lab": {"identity": "x", "seen_at": "", "tools": [], "digest": ""}}}')
        text = run(next_session())
        assert "no tools" in text and "Last seen" not in text

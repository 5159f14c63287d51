"""The tools screen, the route picker and the session picker, each pushed by a tiny host App and
driven by Textual's pilot (keys and mouse) or photographed for `snapshots/`.

The registry is the real one: the real built-ins and plugins, and real MCP stdio servers from
`tests/support/mcp_servers/` (`lab` answers, `broken` fails before the handshake).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from rich.text import Text
from textual.app import App
from textual.command import CommandList
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static

from app.config import REMEMBER_FOR_SESSION
from app.llm.routes import load_catalog
from app.session.events import ToolDefinition
from app.session.listing import SessionSummary, list_sessions
from app.tools.builtins import builtin_tools
from app.tools.file_tools import Workspace
from app.tools.mcp_source import McpServerSource, McpServerSpec, McpTimeouts, RestartPolicy, mcp_tool_name
from app.tools.plugins import available_plugins
from app.tools.registry import ToolRegistry
from app.tools.seen_tools import SeenToolsStore
from app.tools.source_state import Plugin, ServerState
from app.tools.tool import Tool, ToolContext
from app.ui.commands import SCREEN_COMMANDS
from app.ui.screens.picker import MAX_SHOWN
from app.ui.screens.route_picker import RoutePickerScreen
from app.ui.screens.session_picker import SessionPickerScreen
from app.ui.screens.tools import SourceSwitch, SwitchSettings, ToolsScreen

pytestmark = pytest.mark.timeout(60)

SERVERS = Path(__file__).resolve().parents[2] / "support" / "mcp_servers"
SIZE = (100, 30)
LAB_TOOLS = [  # sorted by the server's own names
    *("lab__crash", "lab__echo", "lab__fail", mcp_tool_name("lab", "files.read")),
    *("lab__picture", "lab__pid", "lab__slow", "lab__swap_tools"),
]

# --- the host app -------------------------------------------------------------------------------


class Host(App[None]):
    """Pushes one screen on start (after starting the registry's MCP servers) and records what it
    was dismissed with; implements the actions the palette commands run."""

    COMMANDS = App.COMMANDS | SCREEN_COMMANDS

    def __init__(
        self, make_screen: Callable[[], Screen[Any]] | None = None, registry: ToolRegistry | None = None
    ) -> None:
        super().__init__()
        self.make_screen = make_screen
        self.registry = registry
        self.results: list[object] = []
        self.actions: list[str] = []

    async def on_mount(self) -> None:
        if self.registry is not None:
            await self.registry.start()
        if self.make_screen is not None:
            self.push_screen(self.make_screen(), self.results.append)

    async def on_unmount(self) -> None:
        if self.registry is not None:
            await self.registry.aclose()

    def action_open_tools(self) -> None:
        self.actions.append("open_tools")

    def action_pick_route(self) -> None:
        self.actions.append("pick_route")

    def action_pick_session(self) -> None:
        self.actions.append("pick_session")

    def action_open_trajectory(self) -> None:
        self.actions.append("open_trajectory")


@asynccontextmanager
async def running(
    make_screen: Callable[[], Screen[Any]], registry: ToolRegistry | None = None, size: tuple[int, int] = SIZE
) -> AsyncIterator[tuple[Host, Pilot[Any]]]:
    """The host app with its screen up, driven by a pilot."""
    app = Host(make_screen, registry)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        yield app, pilot


def mcp_server(name: str, script: str, *args: str) -> McpServerSource:
    spec = McpServerSpec(name, sys.executable, [str(SERVERS / script), *args])
    return McpServerSource(spec, timeouts=McpTimeouts(request=15, call=10))


def make_registry(
    tmp_path: Path, *servers: McpServerSource, enabled: tuple[str, ...] = ("clock",)
) -> ToolRegistry:
    return ToolRegistry(
        builtins=builtin_tools(Workspace(tmp_path)),
        plugins=available_plugins(),
        enabled_plugins=enabled,
        mcp_servers=servers,
    )


def for_this_session(registry: ToolRegistry, *also_in_config: str) -> SwitchSettings:
    """The config switches on what the registry has on (and the plugins `also_in_config`), and a
    switch lasts for the session: the file named is never written."""
    switches = registry.switches()
    configured = replace(switches, plugins=switches.plugins | set(also_in_config))
    return SwitchSettings(configured, REMEMBER_FOR_SESSION, Path("/home/user/.local/share/toolscope/config.toml"))


def names(registry: ToolRegistry) -> list[str]:
    return [definition.name for definition in registry.definitions()]


async def wait_for(pilot: Pilot[Any], condition: Callable[[], bool], seconds: float = 20) -> None:
    with anyio.fail_after(seconds):
        while not condition():
            await pilot.pause(0.02)


def text_of(app: App[Any], selector: str) -> str:
    return str(app.screen.query_one(selector, Static).content)


# --- fixed content --------------------------------------------------------------------------------


@pytest.fixture
def utc() -> Iterator[None]:
    """Dates are shown in local time; the snapshots are taken in UTC."""
    previous = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if previous is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = previous
    time.tzset()


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> str:
    """Anthropic's key is set (to a value that must never appear), the others are not."""
    for variable in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    secret = "sk-ant-never-on-screen-4242"
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    return secret


DAY = 86_400_000
NOV_30 = 1_796_042_700_000  # 2026-11-30 12:45 UTC


def summaries() -> list[SessionSummary]:
    def summary(
        number: int, title: str, events: int, size: int, *, problem: str | None = None
    ) -> SessionSummary:
        session_id = f"20261130-1245{number:02d}-a{number}b{number}"
        created = NOV_30 - number * DAY
        return SessionSummary(
            id=session_id,
            path=f"/home/user/.local/share/toolscope/sessions/{session_id}.jsonl",
            created_at=None if problem else created,
            title=title,
            events=events,
            size=size,
            mtime_ns=(created + 3_600_000) * 1_000_000,
            problem=problem,
        )

    return [
        summary(0, "Why does the parser drop the last line?", 58, 41_300),
        summary(1, "Plan the release notes for 0.2", 12, 6_120),
        summary(2, "[bold]markup[/bold] stays literal\x1b[31m and no escapes", 4, 900),
        summary(3, "", 1, 310),
        summary(4, "", 0, 0, problem="invalid-header"),
        summary(5, "Convert the meeting time to Europe/Paris 时间", 31, 2_500_000),
    ]


# --- snapshots ------------------------------------------------------------------------------------


def test_tools_screen_snapshot(snap_compare, tmp_path: Path) -> None:
    """The config switches the calculator on too, so its panel says it differs."""
    registry = make_registry(
        tmp_path, mcp_server("lab", "tools_server.py"), mcp_server("broken", "crash_at_start.py")
    )
    assert snap_compare(Host(lambda: ToolsScreen(registry, for_this_session(registry, "calculator")), registry), terminal_size=(100, 50))


def test_tools_screen_snapshot_of_a_server_last_seen(snap_compare, tmp_path: Path, utc: None) -> None:
    """Off in the config, seen in an earlier session: its tools, marked as last seen."""
    store = SeenToolsStore(tmp_path / "mcp-tools.json")
    lab = McpServerSource(McpServerSpec("lab", sys.executable, [str(SERVERS / "tools_server.py")]), seen=store)
    seen = [ToolDefinition(name=name, description=f"What {name} does.", parameters={}) for name in LAB_TOOLS[:3]]
    store.remember("lab", lab.spec.identity, seen, datetime(2026, 12, 2, 9, 30, tzinfo=UTC))
    registry = ToolRegistry(builtins=builtin_tools(Workspace(tmp_path)), mcp_servers=[lab], servers_off=["lab"])
    assert snap_compare(Host(lambda: ToolsScreen(registry, for_this_session(registry)), registry), terminal_size=(100, 40))


def test_route_picker_snapshot(snap_compare, keys: str) -> None:
    host = Host(lambda: RoutePickerScreen(load_catalog(), "anthropic/claude-sonnet"))
    assert snap_compare(host, terminal_size=SIZE)


def test_session_picker_snapshot(snap_compare, utc: None) -> None:
    assert snap_compare(Host(lambda: SessionPickerScreen(summaries())), terminal_size=SIZE)


def test_session_picker_snapshot_in_chinese(snap_compare, utc: None, chinese: None) -> None:
    assert snap_compare(Host(lambda: SessionPickerScreen(summaries())), terminal_size=SIZE)


def test_tools_screen_snapshot_in_chinese(snap_compare, tmp_path: Path, chinese: None) -> None:
    registry = make_registry(tmp_path)
    assert snap_compare(Host(lambda: ToolsScreen(registry, for_this_session(registry)), registry), terminal_size=(100, 40))


# --- the tools screen -----------------------------------------------------------------------------


def switch_of(app: App[Any], title: str) -> SourceSwitch:
    return next(
        switch for switch in app.screen.query(SourceSwitch) if str(switch.label) == title
    )


def panel_text(app: App[Any], title: str) -> str:
    """The state, reasons and tools a source's panel shows, as plain text."""
    panel = switch_of(app, title).ancestors_with_self[2]
    return "\n".join(str(static.content) for static in panel.query(Static))


def panel_content(app: App[Any], title: str, part: str) -> Text:
    content = switch_of(app, title).ancestors_with_self[2].query_one(part, Static).content
    assert isinstance(content, Text)
    return content


@pytest.mark.anyio
async def test_a_plugin_switched_on_by_keyboard_and_off_by_mouse_changes_the_registry(tmp_path: Path) -> None:
    registry = make_registry(tmp_path)
    # A short terminal: the list scrolls, and the arrows must still move between the switches.
    async with running(lambda: ToolsScreen(registry, for_this_session(registry)), registry, (100, 16)) as (app, pilot):
        assert "calculate" not in names(registry)
        assert app.focused is switch_of(app, "Clock")  # the first switch that can change

        await pilot.press("down", "space")
        assert app.focused is switch_of(app, "Calculator")
        assert names(registry)[-1] == "calculate"
        assert "plugin · on" in panel_text(app, "Calculator")

        switch_of(app, "Clock").scroll_visible(animate=False)  # as a user scrolls back up
        await pilot.pause()
        await pilot.click(switch_of(app, "Clock"))
        assert not {"current_time", "convert_time"} & set(names(registry))
        assert switch_of(app, "Clock").value is False
        assert "plugin · off" in panel_text(app, "Clock")


@pytest.mark.anyio
async def test_the_screen_follows_changes_made_elsewhere_even_from_another_thread(tmp_path: Path) -> None:
    registry = make_registry(tmp_path)
    async with running(lambda: ToolsScreen(registry, for_this_session(registry)), registry) as (app, pilot):
        assert switch_of(app, "Calculator").value is False
        changer = threading.Thread(target=registry.enable_plugin, args=("calculator",))
        changer.start()
        changer.join()
        await wait_for(pilot, lambda: switch_of(app, "Calculator").value)
        assert "plugin · on" in panel_text(app, "Calculator")
        assert text_of(app, "#tools-summary") == "8 tools are on."
        # The screen's own switch did not echo the change back into the registry.
        assert names(registry).count("calculate") == 1


@pytest.mark.anyio
async def test_an_mcp_server_switched_off_loses_its_tools_and_on_gets_them_back(tmp_path: Path) -> None:
    registry = make_registry(tmp_path, mcp_server("lab", "tools_server.py"))
    async with running(lambda: ToolsScreen(registry, for_this_session(registry)), registry) as (app, pilot):
        assert [name for name in names(registry) if name.startswith("lab__")] == LAB_TOOLS
        assert "MCP server · running" in panel_text(app, "lab")

        await pilot.click(switch_of(app, "lab"))
        await wait_for(pilot, lambda: registry.mcp_servers()[0].state is ServerState.STOPPED)
        await wait_for(pilot, lambda: "MCP server · off" in panel_text(app, "lab"))
        assert not [name for name in names(registry) if name.startswith("lab__")]
        assert "no tools" in panel_text(app, "lab")

        switch_of(app, "lab").focus()
        await pilot.press("space")
        await wait_for(pilot, lambda: "MCP server · running" in panel_text(app, "lab"))
        assert [name for name in names(registry) if name.startswith("lab__")] == LAB_TOOLS
        assert switch_of(app, "lab").value is True


@pytest.mark.anyio
@pytest.mark.parametrize(("args", "revision"), [((), "2026-07-28"), (("--legacy",), "2025-11-25")])
async def test_a_running_mcp_server_shows_its_transport_and_revision(tmp_path: Path, args, revision) -> None:
    registry = make_registry(tmp_path, mcp_server("lab", "tools_server.py", *args))
    async with running(lambda: ToolsScreen(registry, for_this_session(registry)), registry) as (app, _pilot):
        assert f"MCP server · running · stdio · revision {revision}" in panel_text(app, "lab")


@pytest.mark.anyio
async def test_a_failing_mcp_server_shows_why(tmp_path: Path) -> None:
    registry = make_registry(tmp_path, mcp_server("broken", "crash_at_start.py"))
    async with running(lambda: ToolsScreen(registry, for_this_session(registry)), registry) as (app, pilot):
        text = panel_text(app, "broken")
        assert "MCP server · failed" in text
        assert "MCP server “broken” could not start." in text
        assert "stderr: fatal: cannot open the configuration file" in text
        assert switch_of(app, "broken").value is False


@pytest.mark.anyio
async def test_escape_closes_the_tools_screen_with_none(tmp_path: Path) -> None:
    registry = make_registry(tmp_path)
    async with running(lambda: ToolsScreen(registry, for_this_session(registry)), registry) as (app, pilot):
        await pilot.press("escape")
        assert app.results == [None]
        assert not isinstance(app.screen, ToolsScreen)


# --- the pickers ----------------------------------------------------------------------------------


def visible_keys(app: App[Any]) -> list[str]:
    table = app.screen.query_one("#picker-table", DataTable)
    return [str(row.key.value) for row in table.ordered_rows]


@pytest.mark.anyio
async def test_filtering_the_session_picker_and_choosing_returns_the_path(utc: None) -> None:
    sessions = summaries()
    async with running(lambda: SessionPickerScreen(sessions)) as (app, pilot):
        assert visible_keys(app) == [summary.path for summary in sessions]

        await pilot.press(*"release")  # by title
        assert visible_keys(app) == [sessions[1].path]
        await pilot.press(*" notes")  # every word must match
        assert visible_keys(app) == [sessions[1].path]
        await pilot.press(*" zzz")
        assert visible_keys(app) == []
        assert text_of(app, "#picker-empty") == "No match."

        app.screen.query_one("#picker-filter", Input).value = "a5b5"  # by id
        await pilot.pause()
        assert visible_keys(app) == [sessions[5].path]
        await pilot.press("enter")
        assert app.results == [sessions[5].path]


@pytest.mark.anyio
async def test_session_picker_arrows_move_from_the_filter_and_a_click_chooses(utc: None) -> None:
    sessions = summaries()
    async with running(lambda: SessionPickerScreen(sessions)) as (app, pilot):
        await pilot.press("down", "down")
        assert sessions[2].id in text_of(app, "#picker-detail")
        await pilot.press("enter")
        assert app.results == [sessions[2].path]

    async with running(lambda: SessionPickerScreen(sessions)) as (app, pilot):
        table = app.screen.query_one("#picker-table", DataTable)
        second_row = (3, 2)  # below the header, past the first row; offsets inside the table
        await pilot.click(table, offset=second_row)  # the first click highlights
        assert app.results == []
        assert sessions[1].id in text_of(app, "#picker-detail")
        await pilot.click(table, offset=second_row)  # a click on the highlighted row chooses
        assert app.results == [sessions[1].path]


@pytest.mark.anyio
async def test_session_titles_are_shown_literally() -> None:
    async with running(lambda: SessionPickerScreen(summaries()), size=(140, 30)) as (app, pilot):
        table = app.screen.query_one("#picker-table", DataTable)
        title = table.get_row_at(2)[0]
        assert isinstance(title, Text) and not title.spans  # plain text: no markup was applied
        assert title.plain == "[bold]markup[/bold] stays literal and no escapes"


@pytest.mark.anyio
async def test_an_empty_session_list_says_so_and_enter_does_nothing() -> None:
    async with running(lambda: SessionPickerScreen([])) as (app, pilot):
        assert text_of(app, "#picker-empty") == "No sessions yet."
        await pilot.press("enter")
        assert app.results == []
        await pilot.press("escape")
        assert app.results == [None]


@pytest.mark.anyio
async def test_the_session_picker_reads_the_sessions_in_a_thread_and_the_keyboard_works_meanwhile(utc: None) -> None:
    sessions = summaries()
    released = threading.Event()
    readers: list[str] = []

    def slow_disk() -> list[SessionSummary]:
        readers.append(threading.current_thread().name)
        released.wait(30)
        return sessions

    async with running(lambda: SessionPickerScreen(slow_disk)) as (app, pilot):
        await wait_for(pilot, lambda: bool(readers))
        assert text_of(app, "#picker-empty") == "Reading the sessions…"
        await pilot.press(*"release")  # typed while the disk is slow: the filter gets it
        assert app.screen.query_one("#picker-filter", Input).value == "release"
        released.set()
        await wait_for(pilot, lambda: bool(visible_keys(app)))
        assert visible_keys(app) == [sessions[1].path]  # the filter typed meanwhile applies
        assert readers != [threading.main_thread().name]
        await pilot.press("enter")
        assert app.results == [sessions[1].path]


@pytest.mark.anyio
async def test_a_session_dir_that_cannot_be_read_is_said_in_the_picker(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "sessions"
    not_a_dir.write_text("a file where the sessions dir should be")
    cache = tmp_path / "cache.json"
    async with running(lambda: SessionPickerScreen(lambda: list_sessions(not_a_dir, cache))) as (app, pilot):
        await wait_for(pilot, lambda: "Reading" not in text_of(app, "#picker-empty"))
        assert text_of(app, "#picker-empty") == "Cannot read the sessions: Not a directory"
        await pilot.press("escape")
        assert app.results == [None]


@pytest.mark.anyio
async def test_choosing_a_route_returns_its_id_and_never_shows_a_key(keys: str) -> None:
    async with running(lambda: RoutePickerScreen(load_catalog(), "offline/demo")) as (app, pilot):
        table = app.screen.query_one("#picker-table", DataTable)
        cells = [table.get_row_at(index) for index in range(table.row_count)]
        shown = "\n".join(str(cell) for row in cells for cell in row) + text_of(app, "#picker-detail")
        assert keys not in shown
        assert str(cells[-1][0]).startswith("●")  # the current route is marked and highlighted
        assert text_of(app, "#picker-detail").startswith("Offline demo model")

        await pilot.press(*"anthropic deepseek")  # route id, dialect, model and label all match
        assert visible_keys(app) == ["anthropic/deepseek"]
        assert "key from DEEPSEEK_API_KEY: missing" in text_of(app, "#picker-detail")
        await pilot.press("enter")
        assert app.results == ["anthropic/deepseek"]


@pytest.mark.anyio
async def test_escape_or_a_click_outside_closes_the_route_picker_with_none() -> None:
    for close in ("escape", "click outside"):
        async with running(lambda: RoutePickerScreen(load_catalog(), "offline/demo")) as (app, pilot):
            if close == "escape":
                await pilot.press("escape")
            else:
                await pilot.click(offset=(0, 0))
            assert app.results == [None]


# --- the command palette --------------------------------------------------------------------------


def palette_hits(app: App[Any]) -> int:
    lists = app.screen.query(CommandList)
    return lists.first().option_count if lists else 0


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("query", "action"),
    [
        ("tools", "open_tools"),
        ("switch route", "pick_route"),
        ("resume", "pick_session"),
        ("trajectory", "open_trajectory"),
    ],
)
async def test_each_palette_command_runs_its_app_action(query: str, action: str) -> None:
    async with running(lambda: Screen()) as (app, pilot):
        await pilot.press("ctrl+p")
        await pilot.press(*query)
        await wait_for(pilot, lambda: palette_hits(app) > 0)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.actions == [action])


@pytest.mark.anyio
async def test_the_palette_lists_the_screen_commands_in_chinese(chinese: None) -> None:
    async with running(lambda: Screen()) as (app, pilot):
        await pilot.press("ctrl+p")
        app.screen.query_one(Input).insert_text_at_cursor("工具")  # the title is translated
        await wait_for(pilot, lambda: palette_hits(app) > 0)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.actions == ["open_tools"])


@pytest.mark.anyio
async def test_the_palette_finds_a_command_by_its_english_title_in_chinese(chinese: None) -> None:
    """As VS Code's palette does: the English title is matched too; the shown one is translated."""
    async with running(lambda: Screen()) as (app, pilot):
        await pilot.press("ctrl+p")
        await pilot.press(*"trajectory")
        await wait_for(pilot, lambda: palette_hits(app) > 0)
        option = app.screen.query_one(CommandList).get_option_at_index(0)
        assert "轨迹" in str(option.prompt) and "Trajectory" not in str(option.prompt)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.actions == ["open_trajectory"])


@pytest.mark.anyio
async def test_text_from_mcp_servers_is_shown_literally_without_escape_sequences(tmp_path: Path) -> None:
    registry = make_registry(
        tmp_path,
        mcp_server("hostile", "hostile_server.py"),
        mcp_server("worse", "hostile_server.py", "--fail"),
    )
    async with running(lambda: ToolsScreen(registry, for_this_session(registry)), registry) as (app, pilot):
        description = panel_content(app, "hostile", ".source-tools")
        assert description.plain == "hostile__styled  [link=https://evil.example]click[/link] cleared done"
        assert [span.style for span in description.spans] == ["bold"]  # the name; no markup applied
        reasons = panel_content(app, "worse", ".source-reasons")
        assert "stderr: [bold red]boom[/bold red] red over" in reasons.plain
        assert not reasons.spans
        assert "\x1b" not in panel_text(app, "hostile") + panel_text(app, "worse")


@pytest.mark.anyio
async def test_a_restarting_mcp_server_says_so_and_can_be_switched_off(tmp_path: Path) -> None:
    spec = McpServerSpec("flaky", sys.executable, [str(SERVERS / "crash_at_start.py")], restart=True)
    policy = RestartPolicy(max_attempts=2, initial_delay=300, max_delay=300)
    registry = make_registry(tmp_path, McpServerSource(spec, restart_policy=policy))
    async with running(lambda: ToolsScreen(registry, for_this_session(registry)), registry) as (app, pilot):
        await wait_for(pilot, lambda: "MCP server · restarting" in panel_text(app, "flaky"))
        text = panel_text(app, "flaky")
        assert "Restarting MCP server “flaky” in 300.0 s (attempt 1 of 2)." in text
        assert switch_of(app, "flaky").value is True  # it is on: it will come back by itself

        await pilot.click(switch_of(app, "flaky"))
        await wait_for(pilot, lambda: "MCP server · off" in panel_text(app, "flaky"))
        assert "Restarting" not in panel_text(app, "flaky")  # the user's switch is the news now


@pytest.mark.anyio
async def test_a_long_session_list_shows_the_first_rows_and_the_filter_searches_them_all() -> None:
    many = [
        SessionSummary(
            f"s{number:04d}", f"/s/{number}.jsonl", NOV_30 - number, f"question {number}", 3, 10, NOV_30 * 10**6
        )
        for number in range(MAX_SHOWN + 50)
    ]
    async with running(lambda: SessionPickerScreen(many)) as (app, pilot):
        assert visible_keys(app) == [summary.path for summary in many[:MAX_SHOWN]]
        assert text_of(app, "#picker-more") == (
            f"Showing the first {MAX_SHOWN} of {MAX_SHOWN + 50} matches; type to narrow the list."
        )
        app.screen.query_one("#picker-filter", Input).value = f"question {MAX_SHOWN + 49}"
        await pilot.pause()
        assert visible_keys(app) == [many[-1].path]
        assert not app.screen.query_one("#picker-more", Static).display


@pytest.mark.anyio
async def test_a_plugin_tool_left_out_by_a_clash_says_so_whenever_the_plugin_is_on(tmp_path: Path) -> None:
    async def handler(arguments: dict[str, Any], context: ToolContext) -> str:
        return "never runs: the built-in read_file wins"

    second_read_file = Tool("read_file", "A second read_file.", {"type": "object"}, handler)
    clashing = Plugin("shadow", "Shadow", "Brings its own read_file.", (second_read_file,))
    registry = ToolRegistry(builtins=builtin_tools(Workspace(tmp_path)), plugins=[clashing])
    clash = "Tool “read_file” from “shadow” is left out: an earlier source already provides it."
    async with running(lambda: ToolsScreen(registry, for_this_session(registry)), registry) as (app, pilot):
        assert clash not in panel_text(app, "Shadow")
        for _round in range(2):  # the registry reports a clash once; the screen shows it each time
            await pilot.click(switch_of(app, "Shadow"))
            assert clash in panel_text(app, "Shadow")
            await pilot.click(switch_of(app, "Shadow"))
            assert clash not in panel_text(app, "Shadow")

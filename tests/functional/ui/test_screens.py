"""The tools screen, the route picker and the session picker, each pushed by a tiny host App and
driven by Textual's pilot (keys and mouse) or photographed for `snapshots/`.

The registry is the real one: the real built-ins and plugins, and real MCP stdio servers from
`tests/support/mcp_servers/` (`lab` answers, `broken` fails before the handshake).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Checkbox, DataTable, Input

from app.i18n import set_language
from app.llm.routes import load_catalog
from app.session.listing import SessionSummary
from app.tools.builtins import Workspace, builtin_tools
from app.tools.mcp_source import McpServerSource, McpServerSpec, McpTimeouts, mcp_tool_name
from app.tools.plugins import available_plugins
from app.tools.registry import ServerState, ToolRegistry
from app.ui.commands import SCREEN_COMMANDS
from app.ui.screens.route_picker import RoutePickerScreen
from app.ui.screens.session_picker import SessionPickerScreen
from app.ui.screens.tools import SourcePanel, ToolsScreen

pytestmark = pytest.mark.timeout(60)

SERVERS = Path(__file__).resolve().parents[2] / "support" / "mcp_servers"
SIZE = (100, 30)
LAB_TOOLS = ["lab__echo", "lab__pid", "lab__fail", "lab__picture", mcp_tool_name("lab", "files.read"), "lab__slow", "lab__swap_tools", "lab__crash"]

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


def mcp_server(name: str, script: str) -> McpServerSource:
    spec = McpServerSpec(name, sys.executable, [str(SERVERS / script)])
    return McpServerSource(spec, timeouts=McpTimeouts(request=15, call=10))


def make_registry(tmp_path: Path, *servers: McpServerSource, enabled: tuple[str, ...] = ("clock",)) -> ToolRegistry:
    return ToolRegistry(
        builtins=builtin_tools(Workspace(tmp_path)),
        plugins=available_plugins(),
        enabled_plugins=enabled,
        mcp_servers=servers,
    )


def names(registry: ToolRegistry) -> list[str]:
    return [definition.name for definition in registry.definitions()]


async def wait_for(pilot: Pilot[Any], condition: Callable[[], bool], seconds: float = 20) -> None:
    with anyio.fail_after(seconds):
        while not condition():
            await pilot.pause(0.02)


def panel(app: App[Any], title_part: str) -> SourcePanel:
    return next(p for p in app.screen.query(SourcePanel) if title_part in str(p.query_one(Checkbox).label))


def screen_text(app: App[Any]) -> str:
    """Everything on the terminal now, as plain text."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_update(full=True).strips)  # type: ignore[union-attr]


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
def chinese() -> Iterator[None]:
    set_language("zh_CN")
    yield
    set_language("en")


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
    def summary(number: int, title: str, events: int, size: int, *, problem: str | None = None) -> SessionSummary:
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
    registry = make_registry(tmp_path, mcp_server("lab", "tools_server.py"), mcp_server("broken", "crash_at_start.py"))
    assert snap_compare(Host(lambda: ToolsScreen(registry), registry), terminal_size=(100, 50))


def test_route_picker_snapshot(snap_compare, keys: str) -> None:
    assert snap_compare(Host(lambda: RoutePickerScreen(load_catalog(), "anthropic/claude-sonnet")), terminal_size=SIZE)


def test_session_picker_snapshot(snap_compare, utc: None) -> None:
    assert snap_compare(Host(lambda: SessionPickerScreen(summaries())), terminal_size=SIZE)


def test_session_picker_snapshot_in_chinese(snap_compare, utc: None, chinese: None) -> None:
    assert snap_compare(Host(lambda: SessionPickerScreen(summaries())), terminal_size=SIZE)


def test_tools_screen_snapshot_in_chinese(snap_compare, tmp_path: Path, chinese: None) -> None:
    registry = make_registry(tmp_path)
    assert snap_compare(Host(lambda: ToolsScreen(registry), registry), terminal_size=(100, 40))

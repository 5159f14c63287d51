"""From an MCP server's tool change to the tools screen showing it, against a bare `mcp` client's
re-list. `python benchmarks/bench_mcp_change.py [--rounds N]`

The server (`benchmarks/mcp_toggle_server.py`) adds or removes a tool on each call to `toggle` and
returns the `time.monotonic()` at which it announced the change. Each sample runs from that moment:

- toolscope: a registry as the chat's (the built-ins, the plugins, and the server through the
  real `McpServerSource`) calls `bench__toggle`; the clock stops when the tools screen (pushed on
  a headless app, as Ctrl+T shows it) lists `bench__extra`, or stops listing it (its panel's
  text, read every 0.5 ms), and the next frame has been written to the terminal;
- baseline: a bare `mcp.Client` on a server of its own, listening with
  `listen(tools_list_changed=True)` as the SDK documents, calls `toggle`, waits for the event and
  re-lists (cache bypassed); the clock stops when the list has changed.

Both speak 2026-07-28 (the change is heard through `subscriptions/listen`), over stdio and over
Streamable HTTP on loopback. The call runs in a task of its own on both sides, so the clock stops
when the change is shown, whenever the call's own result arrives (over HTTP on loopback it
arrives ~40 ms after the change: the stack's, on both sides). Changes are 50 ms apart; blocks of
rounds alternate between the two; medians are compared.

Goal (issue 26): toolscope ≤ 1.5 × the bare client, on each transport.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from textual.app import App  # noqa: E402
from textual.widgets import Static  # noqa: E402

from app.config import REMEMBER_FOR_SESSION  # noqa: E402
from app.tools.approval import AutoApprover  # noqa: E402
from app.tools.builtins import builtin_tools  # noqa: E402
from app.tools.file_tools import Workspace  # noqa: E402
from app.tools.mcp_source import McpServerSource, McpServerSpec  # noqa: E402
from app.tools.plugins import available_plugins  # noqa: E402
from app.tools.registry import ToolRegistry, ToolSwitches  # noqa: E402
from app.tools.tool import ToolContext  # noqa: E402
from app.ui.screens.tools import SourcePanel, SwitchSettings, ToolsScreen  # noqa: E402

SERVER = Path(__file__).resolve().parent / "mcp_toggle_server.py"
GOAL = 1.5
POLL = 0.0005
IDLE = 0.05
"""Seconds between changes, on both sides: each change reaches an idle client, as in use."""


@asynccontextmanager
async def http_server() -> AsyncIterator[str]:
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--http"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


# --- the bare client --------------------------------------------------------------------------------


async def bare_rounds(transport: Any, rounds: int) -> list[float]:
    samples: list[float] = []
    async with Client(transport, mode="auto") as client, client.listen(tools_list_changed=True) as changes:
        events = changes.__aiter__()
        names = {tool.name for tool in (await client.list_tools()).tools}
        for _round in range(rounds):
            call = asyncio.ensure_future(client.call_tool("toggle", {}))
            while True:
                await events.__anext__()
                listed = {tool.name for tool in (await client.list_tools(cache_mode="bypass")).tools}
                if listed != names:
                    break
            done = time.monotonic()
            samples.append(done - float((await call).content[0].text))  # type: ignore[union-attr]
            names = listed
            await anyio.sleep(IDLE)
    return samples


# --- toolscope ----------------------------------------------------------------------------------------


class Host(App[None]):
    def __init__(self, registry: ToolRegistry) -> None:
        super().__init__()
        self.registry = registry
        self.frames: list[float] = []
        """When each frame was written to the (headless) terminal."""

    def _display(self, screen: Any, renderable: Any) -> None:
        # Textual's one place that writes a frame (private): when the user would see it.
        super()._display(screen, renderable)
        self.frames.append(time.monotonic())

    async def on_mount(self) -> None:
        await self.registry.start()
        settings = SwitchSettings(ToolSwitches(servers=frozenset({"bench"})), REMEMBER_FOR_SESSION, Path("/dev/null"))
        self.push_screen(ToolsScreen(self.registry, settings))


def tool_lines(app: App[Any]) -> Static:
    """The server's tool lines on the tools screen (found once: the poll itself must cost nothing)."""
    panel = next(panel for panel in app.screen.query(SourcePanel) if panel.source_name == "bench")
    return panel.query_one(".source-tools", Static)


def shows_extra(lines: Static) -> bool:
    return shows_extra_in(lines.content)


def shows_extra_in(content: object) -> bool:
    return "bench__extra" in str(content)


async def toolscope_rounds(spec: McpServerSpec, rounds: int) -> tuple[list[float], list[float]]:
    """Per change: to the screen's content, and to the frame written after it."""
    registry = ToolRegistry(
        builtins=builtin_tools(Workspace(Path.cwd())), plugins=available_plugins(), mcp_servers=[McpServerSource(spec)]
    )
    app = Host(registry)
    content: list[float] = []
    frames: list[float] = []
    async with app.run_test(headless=True, size=(100, 40)) as pilot:
        while not isinstance(app.screen, ToolsScreen) or not app.screen.query(SourcePanel):
            await pilot.pause(0.01)
        context = ToolContext(AutoApprover(True), "bench")
        lines = tool_lines(app)
        for _round in range(rounds):
            before = lines.content
            call = asyncio.ensure_future(registry.execute("bench__toggle", "{}", context))
            while lines.content is before:
                await asyncio.sleep(POLL)
            assert shows_extra(lines) != shows_extra_in(before)
            changed = time.monotonic()
            while not app.frames or app.frames[-1] < changed:
                await asyncio.sleep(POLL)
            painted = next(frame for frame in app.frames if frame >= changed)
            outcome = await call
            assert not outcome.is_error, outcome.content
            sent = float(outcome.content)
            content.append(changed - sent)
            frames.append(painted - sent)
            await pilot.pause(IDLE)
        await registry.aclose()
    return content, frames


# --- the run --------------------------------------------------------------------------------------------


Samples = dict[str, list[float]]


async def measure(rounds: int, blocks: int) -> dict[str, Samples]:
    stdio = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    stdio_spec = McpServerSpec("bench", sys.executable, [str(SERVER)])
    results: dict[str, Samples] = {name: {"content": [], "frame": [], "bare": []} for name in ("stdio", "HTTP")}
    async with http_server() as url:
        http_spec = McpServerSpec("bench", url=url)
        runs: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
            "stdio": (
                lambda: toolscope_rounds(stdio_spec, rounds),
                lambda: bare_rounds(stdio_client(stdio), rounds),
            ),
            "HTTP": (
                lambda: toolscope_rounds(http_spec, rounds),
                lambda: bare_rounds(streamable_http_client(url), rounds),
            ),
        }
        for _block in range(blocks):
            for name, (ours, bare) in runs.items():
                content, frames = await ours()
                results[name]["content"] += content
                results[name]["frame"] += frames
                results[name]["bare"] += await bare()
    return results


def figure(samples: list[float]) -> str:
    return f"median {statistics.median(samples) * 1e3:6.2f} ms (p90 {statistics.quantiles(samples, n=10)[-1] * 1e3:6.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="changes per connection")
    parser.add_argument("--blocks", type=int, default=3, help="connections of each kind, alternating")
    args = parser.parse_args()
    results = anyio.run(measure, args.rounds, args.blocks)
    held = True
    load = Path("/proc/loadavg").read_text().split()[0]
    print(f"{args.rounds} changes × {args.blocks} connections of each kind; load {load}")
    for name, samples in results.items():
        bare = statistics.median(samples["bare"])
        ratio = statistics.median(samples["content"]) / bare
        held &= ratio <= GOAL
        print(f"  {name}")
        print(f"    bare client re-listed      {figure(samples['bare'])}")
        print(f"    tools screen shows it      {figure(samples['content'])}  {ratio:.2f}×")
        frame_ratio = statistics.median(samples["frame"]) / bare
        print(f"    next frame written         {figure(samples['frame'])}  {frame_ratio:.2f}× (not a goal)")
    print(f"goal: the tools screen ≤ {GOAL}× the bare client on each transport: {'holds' if held else 'MISSED'}")
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())

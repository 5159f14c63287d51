"""What the chat's pilot and snapshot tests share: an app on a private data dir and workspace,
loopback routes, and waiting for the agent without sleeping for a fixed time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual import events
from textual.pilot import Pilot

from app.agent.runtime import catalog_from
from app.config import Config, load_config
from app.session.session import Session
from app.ui.app import ChatOptions, ToolscopeApp
from app.ui.widgets.conversation import approval
from tests.functional.e2e.harness import KEY, KEY_ENV, RouteSpec, route_table
from tests.support.told import turn_ends

SIZE = (100, 34)
README = "# Demo project\n\nA small workspace for the chat tests.\n"
WAIT_LIMIT = 20.0
FROZEN_CLOCK = 1000.0


@dataclass
class Bench:
    """A data dir and a workspace under one temporary folder, plus an optional config file."""

    root: Path
    config_lines: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.workspace = self.root / "workspace"
        self.workspace.mkdir(parents=True)
        (self.workspace / "README.md").write_text(README)

    def loopback_route(self, base_url: str, route_id: str = "loop/model", **overrides: Any) -> str:
        table = route_table(base_url, RouteSpec(route_id)) | overrides
        self.config_lines += ["[[routes]]", *(f"{key} = {_toml(value)}" for key, value in table.items()), ""]
        return route_id

    def config(self) -> Config | None:
        if not self.config_lines:
            return None
        path = self.root / "config.toml"
        path.write_text("\n".join(self.config_lines))
        return load_config(path)

    def app(self, route: str = "offline/demo", *, session: Path | None = None, **agent_options: Any) -> ToolscopeApp:
        config = self.config()
        return ToolscopeApp(
            ChatOptions(
                catalog=catalog_from(config),
                route_id=route,
                session_path=session,
                config=config,
                cwd=self.workspace,
                agent_options=agent_options,
            )
        )

    def sessions(self) -> list[Path]:
        return sorted((self.home / "sessions").glob("*.jsonl"))

    def only_session(self) -> Session:
        (path,) = self.sessions()
        return Session.open(path)


def _toml(value: Any) -> str:
    import json

    return json.dumps(value)


def make_bench(tmp_path: Path, monkeypatch: Any) -> Bench:
    bench = Bench(tmp_path)
    # The pilot answers a prompt as soon as it has the focus: no delay against keys typed ahead.
    monkeypatch.setattr(approval, "ANSWER_DELAY", 0.0)
    monkeypatch.setenv("TOOLSCOPE_HOME", str(bench.home))
    monkeypatch.setenv(KEY_ENV, KEY)
    for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    return bench


async def until(pilot: Pilot[Any], condition: Callable[[], object], limit: float = WAIT_LIMIT) -> None:
    """Let the app run until `condition()` holds; fail (not hang) after `limit` seconds."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"the app never reached {condition!r}")
        await pilot.pause(0.02)


async def type_text(pilot: Pilot[Any], text: str) -> None:
    await pilot.press(*("space" if char == " " else char for char in text))


async def send(pilot: Pilot[Any], text: str, *, wait: bool = True) -> None:
    """Type a prompt as a user would, press Enter, and (by default) wait for the turn to end."""
    app = pilot.app
    assert isinstance(app, ToolscopeApp)
    await until(pilot, lambda: app.registry is not None)
    await type_text(pilot, text)
    await submit(pilot, wait=wait)


async def paste(pilot: Pilot[Any], text: str) -> None:
    """Paste `text` into the composer as a terminal would (once the tools are ready to send it)."""
    app = pilot.app
    assert isinstance(app, ToolscopeApp)
    await until(pilot, lambda: app.registry is not None)
    app.post_message(events.Paste(text))
    await until(pilot, lambda: app.chat.composer.text)


async def submit(pilot: Pilot[Any], *, wait: bool = True) -> None:
    """Press Enter and (by default) wait for the turn to end."""
    app = pilot.app
    assert isinstance(app, ToolscopeApp)
    ended = turn_ends(app)
    await pilot.press("enter")
    if wait:
        await until(pilot, lambda: ended() and not app.turn_running)
        await settle(pilot)


def tools_ready(app: ToolscopeApp) -> bool:
    """The tools have started: the registry is there and the worker starting it is over."""
    return app.registry is not None and not any(worker.name == "tools" for worker in app.workers)


async def settle(pilot: Pilot[Any]) -> None:
    """Every message the agent posted is handled and the screen is laid out."""
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def freeze_countdowns(app: ToolscopeApp) -> None:
    """Retry countdowns read this clock from now on: the picture stops changing."""
    app.chat.conversation.clock = lambda: FROZEN_CLOCK


def blocks(app: ToolscopeApp) -> list[str]:
    return [type(block).__name__ for block in app.chat.conversation.blocks]


async def cursor_blink_off(pilot: Pilot[Any]) -> None:
    """A still cursor in the focused composer, so pictures do not depend on the blink phase."""
    composer = pilot.app.chat.composer
    composer.cursor_blink = False
    composer.focus()
    await pilot.pause()


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)

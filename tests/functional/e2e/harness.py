"""What the end-to-end tests share: scripted DeepSeek streams for the loopback `SSEServer`
(`tests/functional/llm/sse_server.py`, reused as is), a workbench with its own data dir, config and
workspace, and the real `toolscope run` in a subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.session.events import Event
from app.session.session import Session
from tests.functional.llm.sse_server import Reply

TOOLSCOPE = Path(sys.executable).parent / "toolscope"
TOOLS_SERVER = Path(__file__).resolve().parents[2] / "support" / "mcp_servers" / "tools_server.py"
KEY_ENV = "TOOLSCOPE_E2E_KEY"
KEY = "sk-e2e-do-not-print-4f1c9a"
RUN_LIMIT = 60.0
"""Seconds a single `toolscope run` may take before the test gives up on it."""


# --- DeepSeek chat-completions streams ------------------------------------------------------------


def chunk(delta: dict[str, Any] | None = None, finish_reason: str | None = None) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "delta": delta or {}, "finish_reason": finish_reason}
    return {"id": "chatcmpl-e2e", "object": "chat.completion.chunk", "model": "e2e-model", "choices": [choice]}


USAGE_CHUNK = {
    "id": "chatcmpl-e2e",
    "object": "chat.completion.chunk",
    "choices": [],
    "usage": {"prompt_tokens": 120, "completion_tokens": 12, "prompt_cache_hit_tokens": 64},
}


def frame(payload: dict[str, Any] | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"data: {data}\n\n".encode()


def text_frames(text: str, *, pieces: int = 1) -> list[bytes]:
    """A complete answer: `text` cut into `pieces` deltas, then the finish, usage and `[DONE]`."""
    size = max(1, -(-len(text) // pieces))
    frames = [frame(chunk({"content": text[i : i + size]})) for i in range(0, len(text), size)]
    return [*frames, frame(chunk(finish_reason="stop")), frame(USAGE_CHUNK), frame("[DONE]")]


def tool_call_frames(*calls: tuple[str, str, str], preface: str = "") -> list[bytes]:
    """Calls `(id, name, arguments)`: identity in the first delta, arguments in two more, each
    continuation repeating `id` as `""` (seed 004: that must not erase it)."""
    frames = [frame(chunk({"role": "assistant", "content": preface}))] if preface else []
    for index, (call_id, name, arguments) in enumerate(calls):
        opening = {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        frames.append(frame(chunk({"tool_calls": [opening]})))
        half = len(arguments) // 2
        for part in (arguments[:half], arguments[half:]):
            continuation = {"index": index, "id": "", "function": {"arguments": part}}
            frames.append(frame(chunk({"tool_calls": [continuation]})))
    return [*frames, frame(chunk(finish_reason="tool_calls")), frame(USAGE_CHUNK), frame("[DONE]")]


def call_without_id_frames(name: str, arguments: str) -> list[bytes]:
    """Seed 004's incident: a call whose `id` is null or empty in every delta, then `[DONE]`."""
    half = len(arguments) // 2
    deltas = [
        {"index": 0, "id": None, "type": "function", "function": {"name": name, "arguments": ""}},
        {"index": 0, "id": "", "function": {"arguments": arguments[:half]}},
        {"index": 0, "id": None, "function": {"name": None, "arguments": arguments[half:]}},
    ]
    frames = [frame(chunk({"tool_calls": [delta]})) for delta in deltas]
    return [*frames, frame(chunk(finish_reason="tool_calls")), frame(USAGE_CHUNK), frame("[DONE]")]


def answer(text: str) -> Reply:
    return Reply(pieces=text_frames(text))


def calls(*calls: tuple[str, str, str]) -> Reply:
    return Reply(pieces=tool_call_frames(*calls))


def json_error(status: int, message: str, kind: str, **headers: str) -> Reply:
    body = json.dumps({"error": {"message": message, "type": kind}}).encode()
    return Reply(status=status, pieces=[body], headers={"content-type": "application/json", **headers})


# --- the workbench ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RouteSpec:
    id: str
    tool_update: str = "addition-only"
    system_prompt: str = "top"
    idle_timeout: float | None = None
    dialect: str = "deepseek-chat"
    settings: tuple[tuple[str, str | bool], ...] = ()
    """Further keys of the table."""


def route_table(base_url: str, route: RouteSpec) -> dict[str, str | float | bool]:
    """The `[[routes]]` table of a route to the loopback server (DeepSeek format unless told)."""
    table: dict[str, str | float | bool] = {
        "id": route.id,
        "dialect": route.dialect,
        "model": "e2e-model",
        "base_url": base_url,
        "api_key_env": KEY_ENV,
        "tool_update": route.tool_update,
        "system_prompt": route.system_prompt,
    }
    if route.idle_timeout is not None:
        table["idle_timeout"] = route.idle_timeout
    table.update(route.settings)
    return table


@dataclass
class Workbench:
    """A data dir, a workspace (the cwd of every run) and a config file, all under one folder."""

    root: Path
    home: Path = field(init=False)
    workspace: Path = field(init=False)
    config: Path = field(init=False)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.workspace = self.root / "workspace"
        self.config = self.root / "config.toml"
        self.workspace.mkdir(parents=True, exist_ok=True)

    @property
    def sessions(self) -> Path:
        return self.home / "sessions"

    def write_config(
        self,
        base_url: str,
        routes: list[RouteSpec],
        *,
        mcp_relist_delay: float | None = None,
        mcp_server: str = "lab",
        mcp_args: tuple[str, ...] = (),
    ) -> None:
        """Routes to the loopback server (the first is the default) and, optionally, the MCP
        `tools_server.py` as server `mcp_server` (its tools are `<mcp_server>__<tool>`), run with
        `mcp_args` too (`--legacy`)."""
        lines = ["[defaults]", f"route = {json.dumps(routes[0].id)}", ""]
        if mcp_relist_delay is not None:
            args = [str(TOOLS_SERVER), "--relist-delay", str(mcp_relist_delay), *mcp_args]
            table = f"[mcp.servers.{json.dumps(mcp_server)}]"
            lines += [table, f"command = {json.dumps(sys.executable)}", f"args = {json.dumps(args)}", ""]
        for route in routes:
            lines += ["[[routes]]", *(f"{key} = {json.dumps(value)}" for key, value in route_table(base_url, route).items()), ""]
        self.config.write_text("\n".join(lines), encoding="utf-8")

    def environment(self, **extra: str) -> dict[str, str]:
        """The caller's environment without anything that could change a run's behaviour (a
        config, a language, a proxy in front of 127.0.0.1), plus this bench's paths, the key and
        `extra`."""
        dropped = {"TOOLSCOPE_CONFIG", "TOOLSCOPE_HOME", "LC_ALL", "LC_MESSAGES", "LANG", "NO_COLOR"}
        env = {k: v for k, v in os.environ.items() if k not in dropped and "proxy" not in k.lower()}
        env.update(
            TOOLSCOPE_HOME=str(self.home),
            TOOLSCOPE_CONFIG=str(self.config),
            LANG="C.UTF-8",
            PYTHONIOENCODING="utf-8",
            NO_PROXY="127.0.0.1,localhost",
        )
        env[KEY_ENV] = KEY
        env.update(extra)
        return env

    def only_session(self) -> Path:
        (path,) = self.sessions.glob("*.jsonl")
        return path


@dataclass(frozen=True)
class RunResult:
    returncode: int
    stdout: str
    stderr: str


async def start_run(bench: Workbench, *args: str, env: dict[str, str] | None = None) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        str(TOOLSCOPE),
        "--lang",
        "en",
        "run",
        *args,
        cwd=bench.workspace,
        env=bench.environment(**(env or {})),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def toolscope_run(bench: Workbench, *args: str, env: dict[str, str] | None = None) -> RunResult:
    """`toolscope --lang en run ARGS…` in the workspace, to completion (bounded by RUN_LIMIT);
    `env` adds to (or replaces in) the bench's environment."""
    process = await start_run(bench, *args, env=env)
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), RUN_LIMIT)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode is not None
    return RunResult(process.returncode, stdout.decode("utf-8"), stderr.decode("utf-8"))


def run(coroutine: Any, limit: float = 2 * RUN_LIMIT) -> Any:
    """Run a scenario (server and subprocess share this loop), bounded as a whole."""

    async def bounded() -> Any:
        return await asyncio.wait_for(coroutine, limit)

    return asyncio.run(bounded())


# --- reading the log back -----------------------------------------------------------------------------


def events_of(path: Path) -> tuple[Event, ...]:
    return Session.open(path).load().events


def of_type(events: tuple[Event, ...], type_: str) -> list[Event]:
    return [event for event in events if event.type == type_]


def request_bodies(server: Any) -> list[dict[str, Any]]:
    return [json.loads(received.body) for received in server.received]


def declared(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The body's tool declarations by name."""
    return {tool["function"]["name"]: tool for tool in body.get("tools", [])}


def update_blocks(body: dict[str, Any]) -> list[tuple[str, str]]:
    """Every `(tool_addition | tool_removal, name)` block in the body's system messages, in order."""
    blocks = []
    for message in body["messages"]:
        if message["role"] == "system" and isinstance(message["content"], list):
            blocks += [(block["type"], block["tool"]["name"]) for block in message["content"] if "tool" in block]
    return blocks

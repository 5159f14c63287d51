"""Secrets and the terminal, end to end (issue 8 items 1–4, docs/architecture.md §13, docs/security.md).

Each numbered item is shown through the real command where a user meets it: `toolscope run`
against a loopback provider of each dialect, `toolscope sessions` and `toolscope inspect` on crafted
session files. The two properties run the same commands in-process (`app.cli.main`, the provider
on a loopback server in a thread) so that many random cases stay cheap.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from app import cli
from app.llm import redact as redact_module
from app.session.events import RequestHeaderData, ToolDefinition
from app.session.store import SessionStore
from tests.functional.e2e.harness import (
    KEY,
    KEY_ENV,
    TOOLSCOPE,
    USAGE_CHUNK,
    Workbench,
    chunk,
    frame,
    run,
    toolscope_run,
)
from tests.functional.llm.sse_server import Reply, SSEServer

DIALECTS = ("deepseek-chat", "anthropic-messages", "openai-sdk")
FRAGMENT = 12
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
TERMINAL_ATTACK = "\x1b[2J\x1b]52;c;ZXZpbA==\x07\x1b]8;;http://evil.test/\x07click\x1b]8;;\x07\x1b]0;owned\x07 done"
"""Clear the screen, write the clipboard (OSC 52), a hidden link (OSC 8), a window title (OSC 0)."""


# --- what must never show ----------------------------------------------------------------------------


def key_runs(key: str = KEY) -> set[str]:
    """The key, as any run of 12 of its characters (docs/architecture.md §13: no part of it that could be used)."""
    return {key[i : i + FRAGMENT] for i in range(len(key) - FRAGMENT + 1)}


def assert_no_key(*outputs: str | bytes) -> None:
    for output in outputs:
        text = output.decode("utf-8", "replace") if isinstance(output, bytes) else output
        # A run split by whitespace (a provider wrapping its line) counts too; in the log a newline
        # inside a string is the two characters `\n`.
        joined = re.sub(r"\s|\\n|\\r|\\t", "", text)
        found = sorted(run for run in key_runs() if run in text or run in joined)
        assert not found, f"the key leaked: {found[:3]}"


def is_inert(text: str) -> bool:
    """Nothing a terminal acts on or reorders: no ESC or other C0 (but newline, tab), DEL, C1, bidi."""
    return not any(
        (ord(char) < 0x20 and char not in "\n\t") or 0x7F <= ord(char) <= 0x9F or char in BIDI for char in text
    )


# --- the provider, per dialect -------------------------------------------------------------------------


def chat_frames(reasoning: list[str], text: list[str], call: tuple[str, str, list[str]] | None) -> list[bytes]:
    """A chat-completions stream (deepseek-chat and openai-sdk): reasoning deltas, text deltas, one
    tool call whose arguments come in pieces."""
    frames = [frame(chunk({"reasoning_content": piece})) for piece in reasoning]
    frames += [frame(chunk({"content": piece})) for piece in text]
    if call is not None:
        call_id, name, pieces = call
        opening = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
        frames.append(frame(chunk({"tool_calls": [opening]})))
        frames += [frame(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})) for piece in pieces]
    finish = "tool_calls" if call is not None else "stop"
    return [*frames, frame(chunk(finish_reason=finish)), frame(USAGE_CHUNK), frame("[DONE]")]


def anthropic_frames(reasoning: list[str], text: list[str], call: tuple[str, str, list[str]] | None) -> list[bytes]:
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"message": {"id": "msg_1", "usage": {"input_tokens": 9}}})]
    index = 0
    for kind, delta_type, member, pieces in (("thinking", "thinking_delta", "thinking", reasoning), ("text", "text_delta", "text", text)):
        if not pieces:
            continue
        events.append(("content_block_start", {"index": index, "content_block": {"type": kind, member: ""}}))
        events += [("content_block_delta", {"index": index, "delta": {"type": delta_type, member: piece}}) for piece in pieces]
        events.append(("content_block_stop", {"index": index}))
        index += 1
    if call is not None:
        call_id, name, pieces = call
        events.append(("content_block_start", {"index": index, "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}}}))
        events += [("content_block_delta", {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}) for piece in pieces]
        events.append(("content_block_stop", {"index": index}))
    stop = "tool_use" if call is not None else "end_turn"
    events += [("message_delta", {"delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}}), ("message_stop", {})]
    return [f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode() for kind, fields in events]


def stream_reply(dialect: str, *, reasoning: list[str] = [], text: list[str] = [], call: tuple[str, str, list[str]] | None = None) -> Reply:  # noqa: B006 (never mutated)
    build = anthropic_frames if dialect == "anthropic-messages" else chat_frames
    return Reply(pieces=build(reasoning, text, call))


def error_reply(dialect: str, status: int, message: str) -> Reply:
    error = {"type": "authentication_error" if status == 401 else "invalid_request_error", "message": message}
    payload = {"type": "error", "error": error} if dialect == "anthropic-messages" else {"error": error}
    return Reply(status=status, pieces=[json.dumps(payload).encode()], headers={"content-type": "application/json"})


def write_config(path: Path, base_url: str, dialect: str) -> None:
    """One route of `dialect` to the loopback server, the default; no retries (a failure is final)."""
    route = {
        "id": f"e2e/{dialect}",
        "dialect": dialect,
        "model": "e2e-model",
        "base_url": base_url,
        "api_key_env": KEY_ENV,
        "tool_update": "none" if dialect == "openai-sdk" else "addition-only",
        "max_retries": 0,
    }
    lines = ["[defaults]", f"route = {json.dumps(route['id'])}", "", "[[routes]]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in route.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


async def run_against(bench: Workbench, dialect: str, *replies: Reply, args: tuple[str, ...] = ("Go.",)) -> Any:
    async with SSEServer(*replies) as server:
        write_config(bench.config, server.base_url, dialect)
        return await toolscope_run(bench, *args)


def toolscope(bench: Workbench, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOLSCOPE), "--lang", "en", *args],
        capture_output=True, text=True, encoding="utf-8", env=bench.environment(), cwd=bench.workspace, timeout=60,
    )  # fmt: skip


# --- item 1: the key never leaks ------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_key_straddling_the_clip_or_split_by_a_newline_never_leaks(bench: Workbench, dialect: str) -> None:
    # Before: the detail was clipped to 500 characters, then the whole key was looked for: 19 of its
    # characters went out on stderr and into `agent/request-error`.
    message = f"Bad key {KEY[:10]}\n{KEY[10:]} " + "x" * 470 + KEY
    result = run(run_against(bench, dialect, error_reply(dialect, 401, message)))
    assert result.returncode == 1
    assert_no_key(result.stdout, result.stderr, bench.only_session().read_bytes())
    assert "toolscope: error: The provider refused the credentials (HTTP 401): Bad key [redacted]" in result.stderr


@pytest.mark.timeout(60)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_key_echoed_in_reasoning_text_and_tool_arguments_never_leaks(bench: Workbench, dialect: str) -> None:
    arguments = json.dumps({"path": KEY})
    echo = stream_reply(
        dialect,
        reasoning=[f"The header said {KEY[:8]}", f"\n{KEY[8:]}."],
        text=[f"Your key is {KEY[:5]}", KEY[5:17], f"{KEY[17:]}, kept safe."],
        call=("call_1", "read_file", [arguments[:15], arguments[15:]]),
    )
    result = run(run_against(bench, dialect, echo, stream_reply(dialect, text=["Done."])))
    assert result.returncode == 0, result.stderr
    path = bench.only_session()
    inspected = toolscope(bench, "inspect", str(path))
    inspected_json = toolscope(bench, "inspect", "--json", str(path))
    assert inspected.returncode == inspected_json.returncode == 0, inspected.stderr
    assert_no_key(result.stdout, result.stderr, path.read_bytes(), inspected.stdout, inspected_json.stdout)
    assert "Your key is [redacted], kept safe." in result.stdout


# --- item 2: the last error line is shown literally --------------------------------------------------------


@pytest.mark.timeout(60)
def test_the_final_error_line_of_run_shows_the_providers_message_literally(bench: Workbench) -> None:
    result = run(run_against(bench, "deepseek-chat", error_reply("deepseek-chat", 400, TERMINAL_ATTACK)))
    assert result.returncode == 1
    assert is_inert(result.stderr), repr(result.stderr)
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("toolscope: error:")]
    assert line.endswith("click done")


# --- item 3: crafted session files ------------------------------------------------------------------------


def craft_header_line(session_id: str) -> bytes:
    header = {"type": "session", "version": 1, "id": session_id, "createdAt": 1_700_000_000_000, "cwd": "/w", "parent": None}
    return json.dumps(header).encode() + b"\n"


def craft_session(sessions: Path, *, route: str, model: str, tool: str, prompt: str, answer: str) -> Path:
    """A valid session whose every provider- or file-sent field is `hostile`."""
    with SessionStore(sessions).create("/w") as writer:
        writer.append("turn/start", {"turn": 1})
        writer.append("user/message", {"id": "u-1", "text": prompt})
        writer.append("step/start", {"turn": 1, "step": 1})
        tools = (ToolDefinition(name=tool, description=answer, parameters={"type": "object"}),)
        writer.append(
            "request/header",
            RequestHeaderData(reason="initial", sequence=0, route=route, model=model, system=answer, tools=tools, config={}),
        )
        content = [{"type": "reasoning", "text": answer}, {"type": "text", "text": answer}]
        writer.append("assistant/message", {"turn": 1, "step": 1, "route": route, "model": model, "content": content, "finish": "stop"})
        writer.append("step/end", {"turn": 1, "step": 1})
        writer.append("turn/end", {"turn": 1, "reason": "completed"})
        return writer.session.path


def test_a_crafted_session_id_is_refused_and_every_session_field_is_shown_literally(bench: Workbench) -> None:
    bench.config.write_text("")
    bench.sessions.mkdir(parents=True)
    crafted_id = bench.sessions / "crafted.jsonl"
    crafted_id.write_bytes(craft_header_line("x\x1b]0;owned\x07\x1b[2J"))
    # A file name is someone else's choice too.
    (bench.sessions / "n\x1b]0;owned\x07.jsonl").write_bytes(b"not a session\n")
    hostile = "r\x1b[2J\x1b]0;owned\x07\u202e\x9b31m"
    valid = craft_session(bench.sessions, route=hostile, model=hostile, tool="t" + hostile, prompt=hostile, answer=hostile)

    listing = toolscope(bench, "sessions")
    assert listing.returncode == 0, listing.stderr
    assert is_inert(listing.stdout), repr(listing.stdout)
    assert re.search(r"^crafted +- .*\(unreadable: not a session log\)", listing.stdout, re.MULTILINE)

    refused = toolscope(bench, "inspect", str(crafted_id))
    assert refused.returncode == 1 and is_inert(refused.stderr), repr(refused.stderr)
    assert "invalid session header: id: must be a session id" in refused.stderr

    shown = toolscope(bench, "inspect", str(valid))
    assert shown.returncode == 0, shown.stderr
    assert is_inert(shown.stdout), repr(shown.stdout)
    assert "sent on r" in shown.stdout


# --- item 4: C1 and bidi in JSON and text, newlines in notes ------------------------------------------------


C1_AND_BIDI = "a\x9b31mb\u202ec\u2066d"


@pytest.mark.timeout(60)
def test_json_output_escapes_c1_and_bidi_and_text_output_neutralises_them(bench: Workbench) -> None:
    answer = stream_reply("deepseek-chat", text=[f"Answer {C1_AND_BIDI}"])
    as_json = run(run_against(bench, "deepseek-chat", answer, args=("--json", f"Prompt {C1_AND_BIDI}")))
    assert as_json.returncode == 0, as_json.stderr
    assert is_inert(as_json.stdout), repr(as_json.stdout)
    logged = [json.loads(line) for line in as_json.stdout.splitlines()]
    (message,) = [event for event in logged if event["type"] == "assistant/message"]
    assert message["data"]["content"][0]["text"] == f"Answer {C1_AND_BIDI}"

    as_text = run(run_against(bench, "deepseek-chat", stream_reply("deepseek-chat", text=[f"Answer {C1_AND_BIDI}"])))
    assert is_inert(as_text.stdout) and "Answer a31mbcd" in as_text.stdout

    listing = toolscope(bench, "sessions", "--json")
    assert is_inert(listing.stdout), repr(listing.stdout)
    assert {entry["title"] for entry in json.loads(listing.stdout)} == {f"Prompt {C1_AND_BIDI}", "Go."}
    path = sorted(bench.sessions.glob("*.jsonl"))[0]
    inspected = toolscope(bench, "inspect", "--json", str(path))
    assert is_inert(inspected.stdout), repr(inspected.stdout)
    assert json.loads(inspected.stdout)["session"] == path.stem


@pytest.mark.timeout(60)
def test_a_tool_call_note_cannot_fake_a_line_of_its_own(bench: Workbench) -> None:
    arguments = '{"path": "x"}\ntoolscope: error: fake line\n'
    call = stream_reply("deepseek-chat", call=("call_1", "read_file", [arguments]))
    result = run(run_against(bench, "deepseek-chat", call, stream_reply("deepseek-chat", text=["Done."])))
    assert result.returncode == 0, result.stderr
    assert not any(line.startswith("toolscope: error: fake") for line in result.stderr.splitlines())
    assert '→ read_file {"path": "x"}↵toolscope: error: fake line↵' in result.stderr


# --- the properties, in-process ------------------------------------------------------------------------------


class LoopbackThread:
    """An event loop in a thread serving `SSEServer`s, for commands run in this thread (each runs
    its own asyncio loop)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> LoopbackThread:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()

    @contextlib.contextmanager
    def serving(self, *replies: Reply) -> Iterator[SSEServer]:
        server = SSEServer(*replies)
        asyncio.run_coroutine_threadsafe(server.__aenter__(), self.loop).result(10)
        try:
            yield server
        finally:
            asyncio.run_coroutine_threadsafe(server.__aexit__(None, None, None), self.loop).result(10)


def toolscope_in_process(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["--lang", "en", *args])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, LoopbackThread]]:
    """A data dir and config for commands run in-process, the key in the environment, a server thread."""
    config = tmp_path / "config.toml"
    monkeypatch.setenv("TOOLSCOPE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TOOLSCOPE_CONFIG", str(config))
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.chdir(tmp_path)
    with LoopbackThread() as servers:
        yield config, servers


def newest_session(home: Path, seen: set[Path]) -> Path:
    (path,) = set((home / "sessions").glob("*.jsonl")) - seen
    seen.add(path)
    return path


CHANNELS = ("http-error", "stream-error", "text", "reasoning", "tool-arguments")


@st.composite
def key_in_a_body(draw: st.DrawFn) -> str:
    """Random provider text with the key at a random place, maybe split by whitespace."""
    before = draw(st.text(st.characters(codec="utf-8"), max_size=600))
    after = draw(st.text(max_size=30))
    key = KEY
    for at, separator in draw(st.lists(st.tuples(st.integers(1, len(KEY) - 1), st.sampled_from([" ", "\n", "\r\n\t"])), max_size=2)):
        key = key[:at] + separator + key[at:]
    return before + key + after


@pytest.mark.slow(seconds=11)
@pytest.mark.timeout(300)
@given(body=key_in_a_body(), channel=st.sampled_from(CHANNELS), dialect=st.sampled_from(DIALECTS), limit=st.integers(40, 800))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_property_the_key_never_reaches_the_log_stdout_stderr_or_inspect(
    in_process: tuple[Path, LoopbackThread], body: str, channel: str, dialect: str, limit: int
) -> None:
    config, servers = in_process
    seen: set[Path] = set((config.parent / "home" / "sessions").glob("*.jsonl"))
    if channel == "http-error":
        replies = [error_reply(dialect, 400, body)]
    elif channel == "stream-error":
        if dialect == "anthropic-messages":
            error = f"event: error\ndata: {json.dumps({'type': 'error', 'error': {'type': 'invalid_request_error', 'message': body}})}\n\n"
        else:
            error = frame({"error": {"message": body, "type": "invalid_request_error"}}).decode()
        replies = [Reply(pieces=[error.encode()])]
    elif channel == "tool-arguments":
        arguments = json.dumps({"path": body})
        third = len(arguments) // 3
        pieces = [arguments[:third], arguments[third : 2 * third], arguments[2 * third :]]
        replies = [stream_reply(dialect, call=("call_1", "read_file", pieces)), stream_reply(dialect, text=["Done."])]
    else:
        third = len(body) // 3
        pieces = [body[:third], body[third : 2 * third], body[2 * third :]]
        replies = [stream_reply(dialect, **{"text" if channel == "text" else "reasoning": pieces}), stream_reply(dialect, text=["ok"])]
    with servers.serving(*replies) as server, patch.object(redact_module, "MESSAGE_LIMIT", limit):
        write_config(config, server.base_url, dialect)
        code, out, err = toolscope_in_process("run", "Go.")
    path = newest_session(config.parent / "home", seen)
    _, inspected, _ = toolscope_in_process("inspect", str(path))
    _, inspected_json, _ = toolscope_in_process("inspect", "--json", str(path))
    assert code in (0, 1), err
    assert_no_key(out, err, path.read_bytes(), inspected, inspected_json)


ATTACKS = [
    "\x1b[2J", "\x1b]0;title\x07", "\x1b]52;c;Y2xpcA==\x1b\\", "\x1b]8;;http://x\x07", "\x1b", "\x9b31m", "\x9d0;t\x9c",
    "\u202e", "\u202d", "\u2066", "\u200f", "\u2028", "\r", "\n", "toolscope: error: fake",
]  # fmt: skip
hostile = st.lists(st.one_of(st.sampled_from(ATTACKS), st.text(max_size=3)), min_size=1, max_size=8).map("".join)


@pytest.mark.timeout(300)
@given(answer=hostile, arguments=hostile, failure=hostile, prompt=hostile, field=hostile)
@settings(max_examples=15, deadline=None, phases=[Phase.generate], suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_property_every_output_is_free_of_escapes_c1_and_bidi(
    in_process: tuple[Path, LoopbackThread], answer: str, arguments: str, failure: str, prompt: str, field: str
) -> None:
    config, servers = in_process
    home = config.parent / "home"
    outputs: list[str] = []
    stderr: list[str] = []
    replies = [
        stream_reply("deepseek-chat", text=[answer[:3], answer[3:]], call=("call_1", "read_file", [arguments])),
        error_reply("deepseek-chat", 400, failure),
    ] * 2
    with servers.serving(*replies) as server:
        write_config(config, server.base_url, "deepseek-chat")
        for json_flag in ((), ("--json",)):
            _, out, err = toolscope_in_process("run", *json_flag, prompt)
            outputs += [out, err]
            stderr.append(err)
    crafted = craft_session(home / "sessions", route="r" + field, model="m" + field, tool="t" + field, prompt=prompt, answer=answer)
    for args in (("sessions",), ("sessions", "--json"), ("inspect", str(crafted)), ("inspect", "--json", str(crafted))):
        code, out, err = toolscope_in_process(*args)
        assert code == 0, err
        outputs += [out, err]
    for output in outputs:
        assert is_inert(output), repr(output)
    # A note is one line: no text from the model starts a line of stderr (stdout is its answer).
    assert not any(line.startswith("toolscope: error: fake") for err in stderr for line in err.splitlines())

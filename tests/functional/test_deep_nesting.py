"""Hostile session files through the real commands (issue 8, item 5): JSON nested a thousand levels
deep in a header, an event line, a torn tail or the first user message, and a fork chain 500
sessions long. Each is a clear error naming file and line, or is read; never a traceback, and one
bad file never hides the others from `toolscope sessions`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

TOOLSCOPE = Path(sys.executable).parent / "toolscope"
DEEP = "[" * 1000 + "]" * 1000
"""A thousand nested arrays: `json.loads` alone raises RecursionError on it."""
CREATED = 1_700_000_000_000


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home" / "sessions").mkdir(parents=True)
    return tmp_path / "home"


def toolscope(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    dropped = {"TOOLSCOPE_CONFIG", "LC_ALL", "LC_MESSAGES", "LANG", "NO_COLOR"}
    env = {key: value for key, value in os.environ.items() if key not in dropped}
    env.update(TOOLSCOPE_HOME=str(home), LANG="C.UTF-8", PYTHONIOENCODING="utf-8")
    return subprocess.run(
        [str(TOOLSCOPE), "--lang", "en", *args],
        capture_output=True, text=True, encoding="utf-8", env=env, timeout=120,
    )


def header(session_id: str, *, parent: dict[str, Any] | None = None, minute: int = 0) -> str:
    return json.dumps(
        {"type": "session", "version": 1, "id": session_id, "createdAt": CREATED + minute * 60_000,
         "cwd": "/w", "parent": parent},
        separators=(",", ":"),
    )


def event(type_: str, seq: int, data: dict[str, Any] | str) -> str:
    """An event line; `data` given as a string goes in raw (that is how the deep JSON gets in)."""
    raw = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return f'{{"type":"{type_}","seq":{seq},"time":{CREATED},"data":{raw}}}'


def a_turn(text: str = "hello there") -> list[str]:
    """One complete turn without a model request: seq 0..2."""
    return [
        event("turn/start", 0, {"turn": 1}),
        event("user/message", 1, {"id": "u1", "text": text}),
        event("turn/end", 2, {"turn": 1, "reason": "interrupted"}),
    ]


def write(home: Path, session_id: str, lines: list[str], *, end: str = "\n") -> Path:
    path = home / "sessions" / f"{session_id}.jsonl"
    path.write_text("\n".join(lines) + end, encoding="utf-8")
    return path


def assert_clean(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr and "RecursionError" not in result.stderr, result.stderr


def test_sessions_lists_every_session_around_deeply_nested_headers_and_titles(home):
    write(home, "20260101-000000-aaaaaa", [header("20260101-000000-aaaaaa", minute=1), *a_turn("the good one")])
    deep_header = header("20260101-000000-bbbbbb", minute=2).replace('"cwd":"/w"', f'"cwd":{DEEP}')
    write(home, "20260101-000000-bbbbbb", [deep_header, *a_turn()])
    deep_title = [event("turn/start", 0, {"turn": 1}), event("user/message", 1, f'{{"id":"u1","text":{DEEP}}}')]
    write(home, "20260101-000000-cccccc", [header("20260101-000000-cccccc", minute=3), *deep_title])

    listed = toolscope(home, "sessions")
    assert_clean(listed)
    assert listed.returncode == 0
    assert "the good one" in listed.stdout
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()[1:-1]}
    assert "(unreadable: not a session log)" in rows["20260101-000000-bbbbbb"]
    assert "20260101-000000-cccccc" in listed.stdout and "3 sessions" in listed.stdout

    as_json = toolscope(home, "sessions", "--json")
    assert_clean(as_json)
    summaries = {summary["id"]: summary for summary in json.loads(as_json.stdout)}
    assert summaries["20260101-000000-aaaaaa"]["title"] == "the good one"
    assert summaries["20260101-000000-bbbbbb"]["problem"] == "invalid-header"
    assert summaries["20260101-000000-cccccc"]["title"] == ""


@pytest.mark.parametrize("where", ["header", "event line"])
def test_inspect_and_run_report_deep_nesting_as_corruption_with_file_and_line(home, where):
    lines = [header("s"), *a_turn()]
    if where == "header":
        lines[0] = lines[0].replace('"cwd":"/w"', f'"cwd":{DEEP}')
        line = 1
    else:
        lines[2] = event("user/message", 1, f'{{"id":"u1","text":{DEEP}}}')
        line = 3
    path = write(home, "s", lines)
    before = path.read_bytes()

    for command in (["inspect", str(path)], ["run", "--route", "offline/demo", "--session", str(path), "hi"]):
        result = toolscope(home, *command)
        assert_clean(result)
        assert result.returncode == 1, (command, result.stderr)
        assert f"{path}:{line}: " in result.stderr
        assert "nesting deeper than 200 levels" in result.stderr
    assert path.read_bytes() == before


def test_a_deeply_nested_torn_tail_is_set_aside_and_the_session_continues(home):
    torn = '{"type":"turn/start","seq":3,"time":1,"data":' + "[" * 1000
    path = write(home, "s", [header("s"), *a_turn(), torn], end="")

    inspected = toolscope(home, "inspect", str(path))
    assert_clean(inspected)
    assert inspected.returncode == 0
    assert "the last line is incomplete" in inspected.stderr

    continued = toolscope(home, "run", "--route", "offline/demo", "--session", str(path), "hello again")
    assert_clean(continued)
    assert continued.returncode == 0, continued.stderr
    assert "set aside" in continued.stderr
    assert Path(f"{path}.torn-1").read_text(encoding="utf-8") == torn


def test_a_fork_chain_500_sessions_long_is_read_by_every_command(home):
    ids = [f"c{number:03d}" for number in range(501)]
    write(home, ids[0], [header(ids[0]), *a_turn("the root")])
    for parent, child in zip(ids, ids[1:]):
        write(home, child, [header(child, parent={"id": parent, "seq": 2})])
    leaf = ids[-1]

    inspected = toolscope(home, "inspect", leaf)
    assert_clean(inspected)
    assert inspected.returncode == 0, inspected.stderr

    continued = toolscope(home, "run", "--route", "offline/demo", "--session", leaf, "still here?")
    assert_clean(continued)
    assert continued.returncode == 0, continued.stderr

    listed = toolscope(home, "sessions")
    assert_clean(listed)
    assert listed.returncode == 0 and "501 sessions" in listed.stdout


def test_inspect_shows_every_route_for_a_call_with_deeply_nested_arguments(home):
    """Issue 8, item 6: the anthropic-messages body used to raise RecursionError on such a call."""
    deep_arguments = '{"path":' + DEEP + "}"
    tool = {"name": "read_file", "description": "Read a file.", "parameters": {"type": "object"}}
    call = {"type": "tool-call", "callId": "toolu_1", "name": "read_file", "arguments": deep_arguments}
    error = "arguments are not valid JSON: nesting deeper than 200 levels"
    path = write(home, "s", [
        header("s"),
        event("turn/start", 0, {"turn": 1}),
        event("user/message", 1, {"id": "u1", "text": "read it"}),
        event("step/start", 2, {"turn": 1, "step": 1}),
        event("request/header", 3, {"reason": "initial", "sequence": 0, "route": "anthropic/claude-sonnet",
                                    "model": "m", "system": "", "tools": [tool], "config": {}}),
        event("assistant/message", 4, {"turn": 1, "step": 1, "route": "anthropic/claude-sonnet", "model": "m",
                                       "content": [call], "finish": "tool-calls"}),
        event("tool/call", 5, {"turn": 1, "step": 1, "callId": "toolu_1", "name": "read_file",
                               "arguments": deep_arguments}),
        event("tool/result", 6, {"turn": 1, "step": 1, "callId": "toolu_1", "name": "read_file", "content": error,
                                 "isError": True, "error": {"code": "INVALID_ARGUMENTS", "message": error}}),
        event("step/end", 7, {"turn": 1, "step": 1}),
        event("step/start", 8, {"turn": 1, "step": 2}),
        event("assistant/message", 9, {"turn": 1, "step": 2, "route": "anthropic/claude-sonnet", "model": "m",
                                       "content": [{"type": "text", "text": "Too deep."}], "finish": "stop"}),
        event("step/end", 10, {"turn": 1, "step": 2}),
        event("turn/end", 11, {"turn": 1, "reason": "completed"}),
    ])
    inspected = toolscope(home, "inspect", str(path), "--json")
    assert_clean(inspected)
    assert inspected.returncode == 0, inspected.stderr
    first, second = json.loads(inspected.stdout)["requests"]
    assert all(route["error"] is None for route in [*first["routes"].values(), *second["routes"].values()])
    anthropic = [route for route_id, route in second["routes"].items() if route_id.startswith("anthropic/")]
    assert anthropic
    for route in anthropic:
        tool_use = route["body"]["messages"][1]["content"][0]
        assert tool_use == {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}
    text = toolscope(home, "inspect", str(path))
    assert_clean(text)
    assert text.returncode == 0

"""`toolscope run` as a user runs it: a subprocess on the offline model, a real data dir and config."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.session.session import Session
from app.session.store import SessionStore

TOOLSCOPE = Path(sys.executable).parent / "toolscope"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("TOOLSCOPE_CONFIG", "LC_ALL", "LC_MESSAGES", "DEEPSEEK_API_KEY")
    }
    environment.update(
        TOOLSCOPE_HOME=str(tmp_path / "home"),
        TOOLSCOPE_CONFIG=str(tmp_path / "config.toml"),
        LANG="C.UTF-8",
        TOOLSCOPE_OFFLINE_DELAY="0",
    )
    (tmp_path / "config.toml").write_text("")
    return environment


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    return root


def run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOLSCOPE), "run", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )


def only_session(env: dict[str, str]) -> Path:
    (path,) = (Path(env["TOOLSCOPE_HOME"]) / "sessions").glob("*.jsonl")
    return path


def test_without_a_key_the_offline_model_answers_and_calls_tools(env, workspace):
    result = run(env, workspace, "use read_file on notes.txt")
    assert result.returncode == 0, result.stderr
    assert "alpha" in result.stdout and "beta" in result.stdout
    assert '→ read_file {"path": "notes.txt"}' in result.stderr
    assert "Traceback" not in result.stderr
    view = Session.open(only_session(env)).view()
    assert view.turns[0].end_reason == "completed"
    assert view.requests[0].route == "offline/demo"


def test_json_prints_every_logged_event_and_nothing_else(env, workspace):
    result = run(env, workspace, "--json", "hello")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["type"] for line in lines] == [
        "turn/start", "user/message", "step/start", "request/header", "assistant/message", "step/end", "turn/end",
    ]
    events = Session.open(only_session(env)).events
    assert [event.to_json() for event in events] == lines


def test_continuing_with_more_tools_prints_the_change_on_stderr(env, workspace, tmp_path):
    first = run(env, workspace, "hello")
    session_id = only_session(env).stem
    (tmp_path / "config.toml").write_text('[plugins]\nenabled = ["clock"]\n')
    second = run(env, workspace, "--session", session_id, "use current_time for UTC")
    assert first.returncode == second.returncode == 0, second.stderr
    assert "2 tools added\n  + current_time\n  + convert_time\n" in second.stderr
    assert "UTC" in second.stdout
    view = Session.open(only_session(env)).view()
    assert [h.header.reason for h in view.items if type(h).__name__ == "HeaderItem"] == ["initial", "resume"]


def test_write_tools_need_approve(env, workspace):
    refused = run(env, workspace, 'use write_file with {"path": "out.txt", "content": "x"}')
    assert refused.returncode == 0 and not (workspace / "out.txt").exists()
    assert "✗ write_file" in refused.stderr
    approved = run(env, workspace, "--approve", 'use write_file with {"path": "out.txt", "content": "x"}')
    assert approved.returncode == 0 and (workspace / "out.txt").read_text() == "x"


def test_usage_and_config_errors_exit_2_and_turn_errors_exit_1(env, workspace, tmp_path):
    unknown = run(env, workspace, "--route", "nope/nope", "hi")
    assert unknown.returncode == 2 and "unknown route 'nope/nope'" in unknown.stderr
    keyless = run(env, workspace, "--route", "deepseek/deepseek-flash", "hi")
    assert keyless.returncode == 1 and "DEEPSEEK_API_KEY" in keyless.stderr
    assert "Traceback" not in keyless.stderr
    (tmp_path / "config.toml").write_text('[[routes]]\nid = "offline/demo"\ntool_updte = "none"\n')
    bad = run(env, workspace, "hi")
    assert bad.returncode == 2 and "tool_updte" in bad.stderr and "Traceback" not in bad.stderr


def test_a_locked_session_is_refused_clearly(env, workspace):
    run(env, workspace, "hello")
    path = only_session(env)
    with SessionStore(path.parent).open_writer(path):
        busy = run(env, workspace, "--session", path.stem, "again")
    assert busy.returncode == 1 and "Traceback" not in busy.stderr and busy.stderr.strip()


def test_ctrl_c_closes_the_turn_and_keeps_the_visible_text(env, workspace):
    env = {**env, "TOOLSCOPE_OFFLINE_DELAY": "0.05"}
    process = subprocess.Popen(
        [str(TOOLSCOPE), "run", "hello"], env=env, cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        sessions = list((Path(env["TOOLSCOPE_HOME"]) / "sessions").glob("*.jsonl"))
        if sessions and b"request/header" in sessions[0].read_bytes():
            break
        time.sleep(0.05)
    time.sleep(0.5)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert "Interrupted" in err and "Traceback" not in err
    view = Session.open(only_session(env)).view()
    (assistant,) = [i for i in view.items if type(i).__name__ == "AssistantItem"]
    assert assistant.interrupted and assistant.text and out.startswith(assistant.text)
    assert view.turns[0].end_reason == "aborted"


def test_escape_sequences_from_tools_and_models_never_reach_the_terminal(env, workspace):
    (workspace / "evil.txt").write_text("before\x1b]0;pwned\x07\x1b[2Jafter\n")
    result = run(env, workspace, "use read_file on evil.txt")
    assert result.returncode == 0, result.stderr
    assert "beforeafter" in result.stdout
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    # The log keeps the text exactly as the tool returned it.
    assert b"\\u001b]0;pwned" in only_session(env).read_bytes()


def test_file_tools_stay_in_the_working_directory_unless_configured(env, workspace, tmp_path):
    outside = tmp_path / "notes"
    outside.mkdir()
    (outside / "todo.txt").write_text("buy milk\n")
    refused = run(env, workspace, f"use read_file on {outside / 'todo.txt'}")
    assert "PATH_OUTSIDE_WORKSPACE" in Session.open(only_session(env)).path.read_text()
    assert "buy milk" not in refused.stdout
    (tmp_path / "config.toml").write_text(f'[tools]\nextra_roots = ["{outside}"]\n')
    allowed = run(env, workspace, f"use read_file on {outside / 'todo.txt'}")
    assert allowed.returncode == 0 and "buy milk" in allowed.stdout

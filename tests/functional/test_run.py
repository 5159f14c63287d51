"""`toolscope run` as a user runs it: a subprocess on the offline model, a real data dir and config."""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
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


def test_json_prints_the_header_and_every_logged_event_and_nothing_else(env, workspace):
    result = run(env, workspace, "--json", "hello")
    assert result.returncode == 0, result.stderr
    header, *lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert header == json.loads(only_session(env).read_text().splitlines()[0])
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


def test_usage_config_and_missing_key_errors_exit_2(env, workspace, tmp_path):
    unknown = run(env, workspace, "--route", "nope/nope", "hi")
    assert unknown.returncode == 2 and "unknown route 'nope/nope'" in unknown.stderr
    keyless = run(env, workspace, "--route", "deepseek/deepseek-flash", "hi")
    assert keyless.returncode == 2 and "DEEPSEEK_API_KEY" in keyless.stderr
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


def test_ctrl_c_closes_the_turn_keeps_the_visible_text_and_reports_the_session(env, workspace):
    env = {**env, "TOOLSCOPE_OFFLINE_DELAY": "0.05"}
    process = subprocess.Popen(
        [str(TOOLSCOPE), "run", "hello"], env=env, cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    # Interrupted once the reply shows, however slow the machine is: not at a fixed time.
    assert process.stdout is not None and select.select([process.stdout], [], [], 30)[0], "no reply within 30 s"
    shown = os.read(process.stdout.fileno(), 65536)
    process.send_signal(signal.SIGINT)
    rest, err_bytes = process.communicate(timeout=30)
    out, err = (shown + rest).decode(), err_bytes.decode()
    assert shown and process.returncode == 130, err
    assert "Interrupted" in err and "Traceback" not in err
    assert err.endswith(f"Session: {only_session(env).stem}\n")
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


def events_of(path: Path) -> list[str]:
    return [event.type for event in Session.open(path).events]


@pytest.mark.parametrize("closed", ["stdout", "stderr"])
@pytest.mark.parametrize("json_output", [False, True])
def test_a_reader_that_went_away_never_stops_the_turn(env, workspace, closed, json_output):
    """`toolscope run … | head -1`: the pipe's reader is gone before the first line is written."""
    reader, writer = os.pipe()
    os.close(reader)
    streams = {closed: writer}
    streams.setdefault("stdout", subprocess.PIPE)
    streams.setdefault("stderr", subprocess.PIPE)
    try:
        process = subprocess.Popen(
            [str(TOOLSCOPE), "run", *(["--json"] if json_output else []), "use read_file on notes.txt"],
            env=env, cwd=workspace, text=True, **streams,
        )
    finally:
        os.close(writer)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    left = err if closed == "stdout" else out
    assert "Traceback" not in left and "Exception ignored" not in left and "BrokenPipe" not in left
    assert events_of(only_session(env))[-2:] == ["step/end", "turn/end"]
    assert Session.open(only_session(env)).view().turns[0].end_reason == "completed"
    if closed == "stdout":
        assert f"Session: {only_session(env).stem}" in err


def test_head_closing_the_pipe_keeps_the_answer_logged_and_the_session_usable(env, workspace):
    """The same through a shell pipeline, then the session continues without a repair."""
    shell = subprocess.run(
        f"'{TOOLSCOPE}' run 'use read_file on notes.txt' | head -c 1",
        shell=True, capture_output=True, text=True, env=env, cwd=workspace, timeout=60,
    )
    assert shell.stderr.count("Session: ") == 1 and "Traceback" not in shell.stderr
    again = run(env, workspace, "--session", only_session(env).stem, "hello")
    assert again.returncode == 0 and "crash" not in again.stderr


def test_the_session_id_is_reported_in_json_and_text(env, workspace):
    text = run(env, workspace, "hello")
    session_id = only_session(env).stem
    assert text.stderr.strip().endswith(f"Session: {session_id}")
    as_json = run(env, workspace, "--json", "--session", session_id, "again")
    header = json.loads(as_json.stdout.splitlines()[0])
    assert header["type"] == "session" and header["id"] == session_id
    assert only_session(env).read_text().splitlines()[0] == as_json.stdout.splitlines()[0]


def test_a_missing_key_is_one_line_and_creates_no_session(env, workspace):
    result = run(env, workspace, "--route", "deepseek/deepseek-flash", "hi")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "DEEPSEEK_API_KEY" in result.stderr
    assert "deepseek/deepseek-flash" in result.stderr
    assert not list((Path(env["TOOLSCOPE_HOME"]) / "sessions").glob("*.jsonl"))


def test_the_offline_model_splits_requests_on_connectives(env, workspace):
    (workspace / "app").mkdir()
    result = run(env, workspace, "use list_dir on app and then use read_file on notes.txt, then use list_dir on .")
    assert result.returncode == 0, result.stderr
    calls = [line for line in result.stderr.splitlines() if line.startswith("→")]
    assert calls == [
        '→ list_dir {"path": "app"}', '→ read_file {"path": "notes.txt"}', '→ list_dir {"path": "."}'
    ]


def test_route_errors_in_the_config_name_the_file(env, workspace, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[[routes]]\nid = "offline/demo"\ntool_updte = "none"\n')
    bad_route = run(env, workspace, "hi")
    config.write_text('[defaults]\nroute = "nope/nope"\n')
    bad_default = run(env, workspace, "hi")
    for result in (bad_route, bad_default):
        assert result.returncode == 2 and result.stderr.startswith(f"toolscope: error: {config}: ")
    assert "[defaults] route" in bad_default.stderr
    config.write_text("")
    on_the_command_line = run(env, workspace, "--route", "nope/nope", "hi")
    assert str(config) not in on_the_command_line.stderr


def test_a_connection_failure_names_the_host(env, workspace, tmp_path):
    with socket.socket() as unused:  # bound, never listening: connections are refused
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
        (tmp_path / "config.toml").write_text(
            '[[routes]]\nid = "local/refused"\ndialect = "deepseek-chat"\nmodel = "m"\n'
            f'base_url = "http://127.0.0.1:{port}"\napi_key_env = ""\nmax_retries = 0\n'
        )
        result = run(env, workspace, "--route", "local/refused", "hi")
    assert result.returncode == 1
    assert f"127.0.0.1:{port}" in result.stderr.splitlines()[-1]


@pytest.mark.parametrize("prompt", ["", "  \n"])
def test_an_empty_prompt_is_a_usage_error_and_creates_no_session(env, workspace, prompt):
    result = run(env, workspace, prompt)
    piped = subprocess.run(
        [str(TOOLSCOPE), "run"], input=prompt, capture_output=True, text=True, env=env, cwd=workspace, timeout=60
    )
    assert result.returncode == piped.returncode == 2 and "empty" in result.stderr
    assert not (Path(env["TOOLSCOPE_HOME"]) / "sessions").exists() or not list(
        (Path(env["TOOLSCOPE_HOME"]) / "sessions").glob("*.jsonl")
    )


@pytest.mark.parametrize("args", [["-"], []])
def test_the_prompt_comes_from_stdin(env, workspace, args):
    result = subprocess.run(
        [str(TOOLSCOPE), "run", *args], input="use read_file on notes.txt\n", capture_output=True,
        text=True, env=env, cwd=workspace, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "alpha" in result.stdout
    (user,) = [e for e in Session.open(only_session(env)).events if e.type == "user/message"]
    assert user.data.text == "use read_file on notes.txt\n"


@pytest.mark.slow(seconds=8)
def test_continue_picks_the_session_written_to_last(env, workspace):
    sessions = Path(env["TOOLSCOPE_HOME"]) / "sessions"
    run(env, workspace, "hello")
    (older,) = sessions.glob("*.jsonl")
    run(env, workspace, "hello")
    (newer,) = set(sessions.glob("*.jsonl")) - {older}
    os.utime(newer, ns=(10**18, 10**18))
    run(env, workspace, "--session", older.stem, "again")
    os.utime(newer, ns=(1, 1))  # the older session is now the one written to last
    result = run(env, workspace, "-c", "use read_file on notes.txt")
    assert result.returncode == 0, result.stderr
    assert f"Session: {older.stem}" in result.stderr
    assert [e.type for e in Session.open(older).events].count("turn/start") == 3
    both = run(env, workspace, "-c", "--session", older.stem, "hi")
    assert both.returncode == 2 and "not allowed with" in both.stderr


def test_continue_without_sessions_is_one_line(env, workspace):
    result = run(env, workspace, "-c", "hi")
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and "no session" in result.stderr

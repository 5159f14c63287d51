"""The real `toolscope` command in a subprocess, with its data dir in a temporary folder."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from app import __version__
from app.session.listing import CACHE_VERSION
from tests.support.terminal import READ_LIMIT, drain
from app.session.events import (
    SessionHeader,
    TurnStartData,
    UserMessageData,
    encode_event,
    encode_header,
    make_event,
)

TOOLSCOPE = Path(sys.executable).parent / "toolscope"
BASE_TIME = 1_700_000_000_000


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def _environment(home: Path, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("TOOLSCOPE_CONFIG", "LC_ALL", "LC_MESSAGES", "LANG", "NO_COLOR")
    }
    env.update(TOOLSCOPE_HOME=str(home), LANG="C.UTF-8", PYTHONIOENCODING="utf-8")
    env.update(extra)
    return env


def toolscope(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOLSCOPE), *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=_environment(home, **env),
        timeout=60,
    )


def write_session(
    home: Path, session_id: str, *, minute: int = 0, user_texts: tuple[str, ...] = (), name: str | None = None
) -> Path:
    """A valid log: header, turn/start, then one user/message per text."""
    header = SessionHeader(version=1, id=session_id, created_at=BASE_TIME + minute * 60_000, cwd="/w", parent=None)
    lines = [encode_header(header), encode_event(make_event("turn/start", 0, BASE_TIME, TurnStartData(turn=1)))]
    for seq, text in enumerate(user_texts, start=1):
        data = UserMessageData(id=f"u{seq}", text=text)
        lines.append(encode_event(make_event("user/message", seq, BASE_TIME, data)))
    path = home / "sessions" / f"{name or session_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(lines))
    return path


def listing(home: Path) -> list[dict[str, object]]:
    result = toolscope(home, "sessions", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def assert_one_line_error(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert result.stdout == ""
    return lines[0]


# --- basics --------------------------------------------------------------------------------


def test_version() -> None:
    result = subprocess.run([str(TOOLSCOPE), "--version"], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (0, f"toolscope {__version__}\n", "")


def test_python_dash_m_is_the_same_command(home: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "app", "sessions"], capture_output=True, text=True, env=_environment(home)
    )
    assert (result.returncode, result.stdout) == (0, "No sessions yet.\n")


def test_help_names_the_commands_and_says_the_chat_is_the_default(home: Path) -> None:
    result = toolscope(home, "--help")
    assert result.returncode == 0
    assert result.stdout.startswith("usage: toolscope")
    assert "chat" in result.stdout and "sessions" in result.stdout and "--lang" in result.stdout
    assert "opens the chat" in result.stdout


def test_chat_with_an_unknown_route_or_session_fails_in_one_line_before_the_interface(home: Path) -> None:
    route = toolscope(home, "chat", "--route", "no/such-route")
    assert route.returncode == 2 and "no/such-route" in route.stderr and "Traceback" not in route.stderr
    session = toolscope(home, "chat", "--session", "20990101-000000-abcdef")
    assert session.returncode == 1 and "no session" in session.stderr and "Traceback" not in session.stderr
    latest = toolscope(home, "chat", "-c")
    assert latest.returncode == 1 and "no session to continue" in latest.stderr


def _chat_on_a_terminal(home: Path, *args: str, shows: str, program: tuple[str, ...] = (str(TOOLSCOPE),)) -> tuple[int, str]:
    """The chat (`program`) in a real pseudo-terminal until `shows` is on the screen; then Ctrl+Q."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    process = subprocess.Popen(
        [*program, *args], stdin=terminal, stdout=terminal, stderr=terminal, env=_environment(home, TERM="xterm-256color")
    )
    os.close(terminal)
    shown = b""
    try:
        while shows.encode() not in shown and select.select([controller], [], [], READ_LIMIT)[0]:
            try:
                shown += os.read(controller, 65536)
            except OSError:  # EIO: the chat is gone
                break
        os.write(controller, b"\x11")
        shown += drain(controller)
    finally:
        if process.poll() is None:
            process.kill()
    return process.wait(timeout=60), shown.decode(errors="replace")


def test_dash_c_without_the_chat_word_resumes_the_latest_session(home: Path) -> None:
    write_session(home, "20260101-000000-aaaaaa", minute=0, user_texts=("older-session-question",))
    write_session(home, "20260101-000100-bbbbbb", minute=1, user_texts=("latest-session-question",))
    code, shown = _chat_on_a_terminal(home, "-c", shows="latest-session-question")
    assert code == 0 and "latest-session-question" in shown and "older-session-question" not in shown
    code, shown = _chat_on_a_terminal(
        home, "--route", "openai/gpt", "--session", "20260101-000000-aaaaaa", shows="older-session-question"
    )
    assert code == 0 and "older-session-question" in shown and "OpenAI GPT" in shown


CRASHING = """
import sys
from app import cli
from app.ui.screens.chat import ChatScreen
from app.ui.trajectory.screen import TrajectoryScreen

def crash(self):
    raise RuntimeError("a bug in the interface")

ChatScreen.compose = TrajectoryScreen.compose = crash
sys.exit(cli.main())
"""


@pytest.mark.parametrize("command", [(), ("view",)], ids=["chat", "view"])
def test_an_interface_that_crashes_exits_with_status_1(home: Path, command: tuple[str, ...]) -> None:
    """The chat crashed on a damaged index cache with exit status 0 (issue 23): a script or a shell
    could not tell."""
    write_session(home, "20260101-000000-aaaaaa", user_texts=("hello",))
    args = (*command, str(home / "sessions" / "20260101-000000-aaaaaa.jsonl")) if command else ()
    code, shown = _chat_on_a_terminal(home, *args, shows="a bug in the interface", program=(sys.executable, "-c", CRASHING))
    assert "a bug in the interface" in shown
    assert code == 1


def test_chat_options_before_another_command_are_a_usage_error(home: Path) -> None:
    for args in (("--route", "offline/demo", "run", "hi"), ("-c", "sessions")):
        result = toolscope(home, *args)
        assert result.returncode == 2 and "go after the command's name" in result.stderr
        assert "Traceback" not in result.stderr
    missing = toolscope(home, "-c")
    assert missing.returncode == 1 and "no session to continue" in missing.stderr


def test_unknown_option_is_a_usage_error(home: Path) -> None:
    result = toolscope(home, "sessions", "--bogus")
    assert result.returncode == 2
    assert "unrecognized arguments: --bogus" in result.stderr


@pytest.mark.parametrize("argument", ["-\x1b[31mred\x1b]0;title\x07", "--\u202eevil\x9b2J"])
def test_a_usage_error_quotes_the_argument_without_its_escape_sequences(home: Path, argument: str) -> None:
    """argparse echoes what it refuses: a prompt starting with `-` (found by the property test of
    untrusted text) printed its escape sequences raw on stderr."""
    result = toolscope(home, "run", argument)
    assert result.returncode == 2
    assert "unrecognized arguments: -" in result.stderr
    assert not any(char in result.stderr for char in "\x1b\x07\x9b\u202e")


# --- sessions ----------------------------------------------------------------------------------


def test_no_sessions_yet(home: Path) -> None:
    result = toolscope(home, "sessions")
    assert (result.returncode, result.stdout, result.stderr) == (0, "No sessions yet.\n", "")
    assert listing(home) == []


def test_sessions_newest_first_with_titles_counts_and_sizes(home: Path) -> None:
    long_text = "  Please   read\n\tthe README and then " + "explain every section in detail " * 5
    write_session(home, "old", minute=0, user_texts=("first words",))
    newest = write_session(home, "new", minute=20, user_texts=(long_text, "second"))
    write_session(home, "middle", minute=10)

    rows = listing(home)
    assert [row["id"] for row in rows] == ["new", "middle", "old"]
    top = rows[0]
    assert top["createdAt"] == BASE_TIME + 20 * 60_000
    assert top["events"] == 3
    assert top["size"] == newest.stat().st_size
    assert top["problem"] is None
    title = str(top["title"])
    assert title.startswith("Please read the README and then explain")
    assert len(title) <= 50 and title.endswith("…")
    assert rows[1]["title"] == "" and rows[1]["events"] == 1
    assert rows[2]["title"] == "first words"

    table = toolscope(home, "sessions")
    assert table.returncode == 0
    lines = table.stdout.splitlines()
    assert lines[0].split() == [
        "ID", "Created", "Last", "active", "Route", "Directory", "Title", "Events", "Size"
    ]
    assert lines[1].startswith("new ") and "Please read the README" in lines[1]
    assert lines[3].startswith("old ") and "first words" in lines[3] and "bytes" in lines[3]
    assert lines[-1] == "3 sessions"
    assert "\x1b[" not in table.stdout  # not a terminal: no colour


def test_unreadable_files_are_marked_not_fatal(home: Path) -> None:
    write_session(home, "good", user_texts=("hello",))
    sessions = home / "sessions"
    (sessions / "empty.jsonl").write_bytes(b"")
    (sessions / "garbage.jsonl").write_bytes(b"not json\n")
    (sessions / "future.jsonl").write_bytes(b'{"type":"session","version":99,"id":"future"}\n')
    (sessions / "wrong.jsonl").write_bytes(b'{"type":"session","version":1,"id":""}\n')
    (sessions / "notes.txt").write_bytes(b"ignored")

    rows = {row["id"]: row for row in listing(home)}
    assert set(rows) == {"good", "empty", "garbage", "future", "wrong"}
    assert rows["good"]["problem"] is None
    assert rows["empty"]["problem"] == "empty"
    assert rows["garbage"]["problem"] == "invalid-header"
    assert rows["future"]["problem"] == "unsupported-version"
    assert rows["wrong"]["problem"] == "invalid-header"
    assert rows["garbage"]["events"] is None

    table = toolscope(home, "sessions")
    assert table.returncode == 0 and table.stderr == ""
    assert "(unreadable: unsupported format version)" in table.stdout
    assert "(unreadable: not a session log)" in table.stdout


def test_unusable_data_dir_is_one_line_and_exit_1(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "sessions").write_text("a file where the directory should be")
    line = assert_one_line_error(toolscope(home, "sessions"), 1)
    assert line.startswith("toolscope: error: ") and "sessions" in line


def test_torn_last_line_is_not_counted(home: Path) -> None:
    path = write_session(home, "torn", user_texts=("hi",))
    with path.open("ab") as handle:
        handle.write(b'{"type":"user/message","seq":2')
    assert listing(home)[0]["events"] == 2


def test_cache_serves_unchanged_files_without_reading_them(home: Path) -> None:
    write_session(home, "cached", user_texts=("original title",))
    assert listing(home)[0]["title"] == "original title"
    cache_file = home / "cache" / "sessions-index.json"

    # The file unchanged: its summary is the cache's, not read again from the file.
    cache = json.loads(cache_file.read_text())
    cache["files"]["cached.jsonl"]["title"] = "the cache's title"
    cache_file.write_text(json.dumps(cache))
    assert listing(home)[0]["title"] == "the cache's title"

    # A change (here only the mtime) is picked up (an edit in place that restores it too:
    # test_listing_hardening).
    path = home / "sessions" / "cached.jsonl"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000_000))
    assert listing(home)[0]["title"] == "original title"


def test_appended_file_scans_only_new_bytes(home: Path) -> None:
    path = write_session(home, "growing")
    row = listing(home)[0]
    assert (row["title"], row["events"]) == ("", 1)

    data = UserMessageData(id="u1", text="now there is a title")
    with path.open("ab") as handle:
        handle.write(encode_event(make_event("user/message", 1, BASE_TIME, data)))
    row = listing(home)[0]
    assert (row["title"], row["events"], row["size"]) == ("now there is a title", 2, path.stat().st_size)

    # Earlier bytes are not re-read on append: an in-place edit of the old line stays unseen.
    raw = path.read_bytes().replace(b"now there", b"now THERE")
    path.write_bytes(raw + encode_event(make_event("user/message", 2, BASE_TIME, data)))
    row = listing(home)[0]
    assert (row["title"], row["events"]) == ("now there is a title", 3)


def test_shrunk_or_replaced_file_is_rescanned(home: Path) -> None:
    write_session(home, "s", user_texts=("one", "two", "three"))
    assert listing(home)[0]["events"] == 4
    write_session(home, "t", user_texts=("other",), name="s")
    row = listing(home)[0]
    assert (row["id"], row["title"], row["events"]) == ("t", "other", 2)


def test_damaged_cache_is_ignored(home: Path) -> None:
    write_session(home, "s", user_texts=("hello",))
    cache = home / "cache" / "sessions-index.json"
    cache.parent.mkdir(parents=True)
    cache.write_text(f'{{"version": {CACHE_VERSION}, "files": {{"s.jsonl": {{"size": "x"}}}}}}')
    assert listing(home)[0]["title"] == "hello"
    cache.write_text("[1, 2")
    assert listing(home)[0]["title"] == "hello"


def test_colour_only_on_a_terminal(home: Path) -> None:
    write_session(home, "s", user_texts=("hello",))
    controller, terminal = pty.openpty()
    try:
        process = subprocess.run(
            [str(TOOLSCOPE), "sessions"],
            stdout=terminal,
            stderr=subprocess.PIPE,
            env=_environment(home),
            timeout=60,
        )
        output = os.read(controller, 65536).decode()
    finally:
        os.close(controller)
        os.close(terminal)
    assert process.returncode == 0
    assert "\x1b[1m" in output
    assert "\x1b[" not in toolscope(home, "sessions").stdout
    with_no_color = subprocess.run(
        [str(TOOLSCOPE), "sessions"], stdout=subprocess.PIPE, env=_environment(home, NO_COLOR="1"), timeout=60
    )
    assert b"\x1b[" not in with_no_color.stdout


# --- language ------------------------------------------------------------------------------------


def test_lang_option_before_or_after_the_command(home: Path) -> None:
    for args in (("--lang", "zh_CN", "sessions"), ("sessions", "--lang=zh_CN")):
        result = toolscope(home, *args)
        assert (result.returncode, result.stdout) == (0, "还没有会话。\n")


def test_language_from_config_then_environment(home: Path) -> None:
    assert toolscope(home, "sessions", LANG="zh_CN.UTF-8").stdout == "还没有会话。\n"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[defaults]\nlang = "en"\n')
    assert toolscope(home, "sessions", LANG="zh_CN.UTF-8").stdout == "No sessions yet.\n"
    assert toolscope(home, "--lang", "zh_CN", "sessions").stdout == "还没有会话。\n"


def test_chinese_table_and_help(home: Path) -> None:
    write_session(home, "s", user_texts=("你好，世界",))
    result = toolscope(home, "--lang", "zh_CN", "sessions")
    assert result.returncode == 0
    header, row, total = result.stdout.splitlines()
    assert header.split() == ["ID", "创建时间", "最后活动", "路由", "目录", "标题", "事件数", "大小"]
    assert "你好，世界" in row and "字节" in row
    assert total == "共 1 个会话"
    helped = toolscope(home, "--lang", "zh_CN", "--help")
    assert helped.stdout.startswith("用法：toolscope")
    assert "列出已保存的会话" in helped.stdout


def test_unsupported_language_is_a_usage_error(home: Path) -> None:
    result = toolscope(home, "--lang", "fr", "sessions")
    assert result.returncode == 2
    assert "unsupported language 'fr' (available: en, zh_CN)" in result.stderr


# --- config errors -----------------------------------------------------------------------------


def test_bad_config_is_one_line_and_exit_2(home: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[defaults]\nrout = "offline/demo"\n')
    line = assert_one_line_error(toolscope(home, "--config", str(config), "sessions"), 2)
    assert line == f"toolscope: error: {config}: [defaults] unknown key 'rout'"


def test_config_from_environment_variable(home: Path, tmp_path: Path) -> None:
    config = tmp_path / "env.toml"
    config.write_text("[plugins]\nenabled = 3\n")
    line = assert_one_line_error(toolscope(home, "sessions", TOOLSCOPE_CONFIG=str(config)), 2)
    assert line.endswith("[plugins] enabled: expected an array")


def test_default_config_is_read_from_the_data_dir(home: Path) -> None:
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[defaults\n")
    line = assert_one_line_error(toolscope(home, "sessions"), 2)
    assert "config.toml: invalid TOML" in line


def test_missing_named_config_is_an_error(home: Path, tmp_path: Path) -> None:
    line = assert_one_line_error(toolscope(home, "--config", str(tmp_path / "none.toml"), "sessions"), 2)
    assert line.endswith("none.toml: config file not found")
    line = assert_one_line_error(toolscope(home, "sessions", TOOLSCOPE_CONFIG=str(tmp_path / "gone.toml")), 2)
    assert line.endswith("gone.toml: config file not found")


def test_config_error_in_chinese(home: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[defaults]\nrout = "x"\n')
    line = assert_one_line_error(toolscope(home, "--lang", "zh_CN", "--config", str(config), "sessions"), 2)
    assert line == f"toolscope：错误：{config}: [defaults] 未知的键 'rout'"


# --- routes, sessions -n, sessions rm ------------------------------------------------------------


def test_routes_show_dialect_model_mode_and_whether_the_key_is_set(home: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[defaults]\nroute = "local/gw"\n[[routes]]\nid = "local/gw"\ndialect = "deepseek-chat"\n'
        'model = "gw-model"\nbase_url = "http://127.0.0.1:1"\napi_key_env = "GW_KEY"\n'
    )
    secret = "sk-do-not-show-0123456789"
    env = {"TOOLSCOPE_CONFIG": str(config), "DEEPSEEK_API_KEY": secret, "ANTHROPIC_API_KEY": ""}
    table = toolscope(home, "routes", **env)
    assert table.returncode == 0, table.stderr
    assert secret not in table.stdout + table.stderr
    flash = next(line for line in table.stdout.splitlines() if "deepseek/deepseek-flash" in line)
    assert flash.split() == [
        "deepseek/deepseek-flash", "deepseek-chat", "deepseek-v4-flash", "addition-only", "set", "(DEEPSEEK_API_KEY)"
    ]
    gateway = next(line for line in table.stdout.splitlines() if "local/gw" in line)
    assert gateway.startswith("* local/gw") and "missing (GW_KEY)" in gateway
    assert "not needed" in next(line for line in table.stdout.splitlines() if "offline/demo" in line)
    as_json = {route["id"]: route for route in json.loads(toolscope(home, "routes", "--json", **env).stdout)}
    assert as_json["deepseek/deepseek-flash"]["key"] == "set"
    assert as_json["anthropic/claude-sonnet"]["key"] == "missing"
    assert as_json["offline/demo"]["key"] == "not-needed"
    assert as_json["local/gw"]["default"] and as_json["local/gw"]["toolUpdate"] == "none"
    assert secret not in json.dumps(as_json)
    config.write_text('[defaults]\nroute = "nope/nope"\n')
    broken = toolscope(home, "routes", **env)
    assert str(config) in assert_one_line_error(broken, 2)


def _run_turn(home: Path, cwd: Path, *args: str) -> None:
    result = subprocess.run(
        [str(TOOLSCOPE), "run", *args], capture_output=True, text=True, cwd=cwd,
        env=_environment(home, TOOLSCOPE_OFFLINE_DELAY="0"), timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_sessions_n_shows_the_newest_with_last_active_route_and_directory(home: Path, tmp_path: Path) -> None:
    write_session(home, "old", minute=0, user_texts=("first words",))
    _run_turn(home, tmp_path, "hello there")
    rows = listing(home)
    assert [row["route"] for row in rows] == ["offline/demo", None]
    assert rows[0]["cwd"] == str(tmp_path) and rows[1]["cwd"] == "/w"
    newest = Path(str(rows[0]["path"]))
    assert rows[0]["lastActive"] == newest.stat().st_mtime_ns // 1_000_000
    table = toolscope(home, "sessions", "-n", "1")
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["ID", "Created", "Last", "active", "Route", "Directory", "Title", "Events", "Size"]
    assert len(lines) == 3 and lines[-1] == "1 session"
    assert "offline/demo" in lines[1] and str(tmp_path) in lines[1] and "hello there" in lines[1]
    assert [row["id"] for row in json.loads(toolscope(home, "sessions", "-n", "1", "--json").stdout)] == [
        rows[0]["id"]
    ]
    assert toolscope(home, "sessions", "-n", "0").returncode == 2


def test_sessions_rm_needs_yes_off_a_terminal_and_removes_torn_lines_and_the_index(home: Path) -> None:
    path = write_session(home, "gone", user_texts=("hello",))
    torn = path.with_name(path.name + ".torn-1")
    torn.write_bytes(b'{"type":')
    index = path.with_name(path.name + ".idx")
    assert toolscope(home, "inspect", "gone").returncode == 0 and index.exists()  # a reader cached it
    refused = toolscope(home, "sessions", "rm", "gone")
    assert "--yes" in assert_one_line_error(refused, 2) and path.exists()
    removed = toolscope(home, "sessions", "rm", "gone", "-y")
    assert removed.returncode == 0, removed.stderr
    assert not path.exists() and not torn.exists() and not index.exists()
    assert listing(home) == []
    missing = toolscope(home, "sessions", "rm", "gone", "--yes")
    assert "gone" in assert_one_line_error(missing, 1)
    not_an_id = toolscope(home, "sessions", "rm", "../sessions/x", "--yes")
    assert_one_line_error(not_an_id, 1)


def test_sessions_rm_is_refused_while_a_writer_holds_the_session_or_forks_need_it(home: Path) -> None:
    from app.session.store import SessionStore

    store = SessionStore(home / "sessions")
    with store.create("/w") as writer:
        writer.append("turn/start", TurnStartData(turn=1))
        busy = toolscope(home, "sessions", "rm", writer.id, "--yes")
        assert "open for writing" in assert_one_line_error(busy, 1)
        assert writer.path.exists()
    with store.fork(writer.path) as child:
        pass
    needed = toolscope(home, "sessions", "rm", writer.id, "--yes")
    assert child.id in assert_one_line_error(needed, 1) and writer.path.exists()
    assert toolscope(home, "sessions", "rm", child.id, "--yes").returncode == 0
    assert toolscope(home, "sessions", "rm", writer.id, "--yes").returncode == 0


def _answer_on_a_terminal(home: Path, answer: str, *args: str) -> tuple[int, str]:
    controller, terminal = pty.openpty()
    os.write(controller, answer.encode())
    process = subprocess.Popen(
        [str(TOOLSCOPE), *args], stdin=terminal, stdout=terminal, stderr=terminal, env=_environment(home)
    )
    os.close(terminal)
    shown = drain(controller)
    return process.wait(timeout=60), shown.decode()


def test_sessions_rm_asks_on_a_terminal(home: Path) -> None:
    path = write_session(home, "asked", user_texts=("hello",))
    code, shown = _answer_on_a_terminal(home, "n\n", "sessions", "rm", "asked")
    assert code == 1 and "Delete session asked? [y/N]" in shown and path.exists()
    code, shown = _answer_on_a_terminal(home, "y\n", "sessions", "rm", "asked")
    assert code == 0 and "Deleted session asked." in shown and not path.exists()

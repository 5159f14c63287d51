"""`toolscope inspect` over a real session file holding the worked example of docs/inspect.md.

Headers h0 [read, grep]; +time (d1); −grep (d2); +grep unchanged (d3), with turns between. Every
route of the built-in catalog is inspected; the expectations are grouped by the route's tool-update
mode, so they hold for whichever routes the catalog ships.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.cli import _build_parser
from app.commands.inspect import run
from app.llm.routes import DEFAULT_BETA_HEADER, DEFAULT_TOOL_UPDATE_BETA, load_catalog
from app.report.model import inspect_requests
from app.report.prices import PriceBook
from app.report.text import render_text
from app.session.session import Session
from app.session.store import SessionStore
from tests.support.builder import LogBuilder, tool
from tests.support.oracles import assert_valid_anthropic_body
from tests.support.terminal import drain

READ, GREP, TIME = tool("read"), tool("grep"), tool("time")
BETA = f"{DEFAULT_BETA_HEADER}: {DEFAULT_TOOL_UPDATE_BETA}"
CATALOG = load_catalog()
MODES = {
    mode: [route.id for route in CATALOG if route.tool_update == mode]
    for mode in ("none", "addition-only", "in-history")
}


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLSCOPE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TOOLSCOPE_CONFIG", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    return tmp_path / "home"


def worked_example() -> tuple[LogBuilder, dict[str, int]]:
    """The log, and the seq of each developer message (d1, d2, d3)."""
    log = LogBuilder("worked-example")
    developer: dict[str, int] = {}

    def header(tools, name: str | None = None) -> None:
        for event in log.header_for(tools):
            if event.type == "developer/message":
                developer[name] = event.seq

    # Requests 1 and 2: h0, a tool round.
    log.start_turn("read the README")
    log.start_step()
    header([READ, GREP])
    log.assistant("", calls=[("call_1", "read", '{"path": "README.md"}')])
    log.tool_round("call_1", "read", "# toolscope")
    log.end_step()
    log.start_step()
    header([READ, GREP])
    log.assistant("It is the README.")
    log.end_step()
    log.end_turn()
    # Request 3: +time.
    log.start_turn("what time is it?")
    log.start_step()
    header([READ, GREP, TIME], "d1")
    log.assistant("Noon.")
    log.end_step()
    log.end_turn()
    # Request 4: −grep.
    log.start_turn("no more grep")
    log.start_step()
    header([READ, TIME], "d2")
    log.assistant("Fine.")
    log.end_step()
    log.end_turn()
    # Requests 5 and 6: +grep, unchanged, and a call to it.
    log.start_turn("grep again")
    log.start_step()
    header([READ, TIME, GREP], "d3")
    log.assistant("", calls=[("call_2", "grep", '{"pattern": "tool"}')])
    log.tool_round("call_2", "grep", "README.md:1")
    log.end_step()
    log.start_step()
    header([READ, TIME, GREP])
    log.assistant("Found it.")
    log.end_step()
    log.end_turn()
    return log, developer


def write_session(log: LogBuilder, directory: Path) -> Path:
    with SessionStore(directory).create("/tmp") as writer:
        for event in log.events:
            writer.append(event.type, event.data)
        return writer.path


def inspect(*argv: str) -> argparse.Namespace:
    """The options `toolscope inspect ARGV` parses to, through the real command-line parser."""
    return _build_parser().parse_args(["inspect", *argv])


def inspect_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert run(inspect(*argv, "--json")) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def example(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    log, developer = worked_example()
    return write_session(log, tmp_path / "sessions"), developer


def declared(route: dict) -> list[tuple[str, str, bool]]:
    return [(d["name"], d["state"], d["defer_loading"]) for d in route["declarations"]]


def blocks(route: dict) -> list[tuple[str, str, int]]:
    return [(b["type"], b["name"], b["seq"]) for b in route["blocks"]]


# --- the worked example, per mode ----------------------------------------------------------------


def test_every_catalog_route_and_request_is_reported(example, capsys):
    path, _developer = example
    report = inspect_json(capsys, str(path))
    assert report["session"] == path.stem
    assert [request["index"] for request in report["requests"]] == [1, 2, 3, 4, 5, 6]
    assert all(list(r["routes"]) == list(CATALOG.ids) for r in report["requests"])
    assert all(MODES.values()), "the built-in catalog has a route of every mode"
    for request in report["requests"]:
        for route_id, route in request["routes"].items():
            assert route["fallback"] is None and route["error"] is None
            if CATALOG.get(route_id).dialect == "anthropic-messages":
                assert_valid_anthropic_body(route["body"])


def test_in_history_routes_keep_the_prefix_at_every_request(example, capsys):
    path, d = example
    requests = inspect_json(capsys, str(path))["requests"]
    for route_id in MODES["in-history"]:
        routes = [request["routes"][route_id] for request in requests]
        assert [route["prefix_kept"] for route in routes] == [True] * 6, route_id
        assert declared(routes[0]) == [("read", "initial", False), ("grep", "initial", False)]
        assert declared(routes[2]) == [
            ("read", "initial", False),
            ("grep", "initial", False),
            ("time", "added", True),
        ]
        assert declared(routes[3]) == [
            ("read", "initial", False),
            ("grep", "retained-removed", False),
            ("time", "added", True),
        ]
        assert declared(routes[4]) == declared(routes[2])
        assert blocks(routes[1]) == []
        assert blocks(routes[2]) == [("tool_addition", "time", d["d1"])]
        assert blocks(routes[3]) == [
            ("tool_addition", "time", d["d1"]),
            ("tool_removal", "grep", d["d2"]),
        ]
        assert blocks(routes[5]) == [
            ("tool_addition", "time", d["d1"]),
            ("tool_removal", "grep", d["d2"]),
            ("tool_addition", "grep", d["d3"]),
        ]
        assert [route["beta"] for route in routes] == [None, None, BETA, BETA, BETA, BETA]


def test_addition_only_routes_break_the_prefix_at_the_removal(example, capsys):
    path, d = example
    requests = inspect_json(capsys, str(path))["requests"]
    for route_id in MODES["addition-only"]:
        routes = [request["routes"][route_id] for request in requests]
        assert [(r["prefix_kept"], r["first_difference"]) for r in routes] == [
            (True, None),
            (True, None),
            (True, None),
            # grep is no longer declared: the body has [read, time(deferred)], and the second
            # declaration rendered up front is missing (a pointer one past the end).
            (False, "/tools/2"),
            # grep comes back, declared up front again, before the deferred time.
            (False, "/tools/1"),
            (True, None),
        ], route_id
        assert declared(routes[3]) == [("read", "initial", False), ("time", "added", True)]
        assert declared(routes[4]) == [
            ("read", "initial", False),
            ("grep", "initial", False),
            ("time", "added", True),
        ]
        assert all(blocks(route) == [("tool_addition", "time", d["d1"])] for route in routes[2:])
        assert [route["beta"] for route in routes] == [None, None, BETA, BETA, BETA, BETA]


def test_none_routes_change_declarations_and_send_no_updates(example, capsys):
    path, _developer = example
    requests = inspect_json(capsys, str(path))["requests"]
    for route_id in MODES["none"]:
        routes = [request["routes"][route_id] for request in requests]
        assert [[name for name, _state, _deferred in declared(r)] for r in routes] == [
            ["read", "grep"],
            ["read", "grep"],
            ["read", "grep", "time"],
            ["read", "time"],
            ["read", "time", "grep"],
            ["read", "time", "grep"],
        ]
        assert not any(deferred for route in routes for _n, _s, deferred in declared(route))
        assert all(route["blocks"] == [] and route["beta"] is None for route in routes)
        assert [(r["prefix_kept"], r["first_difference"]) for r in routes] == [
            (True, None),
            (True, None),
            (False, "/tools/2"),
            (False, "/tools/1"),
            (False, "/tools/2"),
            (True, None),
        ]
        assert all("defer_loading" not in t for r in routes for t in r["body"].get("tools", []))


def test_block_positions_point_at_the_system_message_in_the_body(example, capsys):
    path, _developer = example
    request = inspect_json(capsys, str(path))["requests"][5]
    for route_id in MODES["in-history"] + MODES["addition-only"]:
        route = request["routes"][route_id]
        for block in route["blocks"]:
            message = route["body"]["messages"][block["position"]]
            assert message["role"] == "system"
            reference = {"type": "tool_reference", "name": block["name"]}
            assert {"type": block["type"], "tool": reference} in message["content"]


# --- options -------------------------------------------------------------------------------------


def test_one_request_on_chosen_routes_still_compares_with_the_previous_one(example, capsys):
    path, _developer = example
    chosen = [MODES["addition-only"][0], MODES["none"][0]]
    argv = ["--request", "4", "--route", chosen[0], "--route", chosen[1], "--route", chosen[0]]
    report = inspect_json(capsys, str(path), *argv)
    assert [request["index"] for request in report["requests"]] == [4]
    routes = report["requests"][0]["routes"]
    assert list(routes) == chosen
    assert routes[chosen[0]]["first_difference"] == "/tools/2"
    assert routes[chosen[1]]["first_difference"] == "/tools/1"


def test_the_first_request_keeps_its_prefix(example, capsys):
    path, _developer = example
    report = inspect_json(capsys, str(path), "--request", "1")
    assert all(route["prefix_kept"] for route in report["requests"][0]["routes"].values())


def test_a_session_id_is_looked_up_in_the_sessions_dir(isolated_home, capsys):
    log, _developer = worked_example()
    path = write_session(log, isolated_home / "sessions")
    assert inspect_json(capsys, path.stem, "--request", "2")["session"] == path.stem


def test_text_report_is_aligned_and_plain_off_a_terminal(example, capsys):
    path, _developer = example
    route_id = MODES["addition-only"][0]
    assert run(inspect(str(path), "--request", "4", "--route", route_id)) == 0
    out = capsys.readouterr().out
    assert "\x1b[" not in out
    assert "Request 4 · turn 3, step 1" in out
    assert route_id in out
    assert "broken at /tools/2" in out
    assert "anthropic-beta: mid-conversation-tool-changes-2026-07-01" in out
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.lstrip().startswith("Declarations"))
    read_row, time_row = lines[first], lines[first + 1]
    assert read_row.index("read") == time_row.index("time")
    assert read_row.index("initial") == time_row.index("added")
    assert all(line == line.rstrip() for line in lines)
    assert "Wire body" not in out and '"model"' not in out
    assert run(inspect(str(path), "--request", "4", "--route", route_id, "--body")) == 0
    assert '"model": "deepseek-v4-' in capsys.readouterr().out


def test_each_request_says_what_changed_in_the_tools_in_one_line(example, capsys):
    path, _developer = example
    assert run(inspect(str(path), "--route", "offline/demo")) == 0
    lines = capsys.readouterr().out.splitlines()
    answers = [lines[i + 1] for i, line in enumerate(lines) if line.startswith("━━ Request ")]
    assert answers == [
        "First request: 2 tools (read, grep)",
        "No tool change since the previous request",
        "Tools since the previous request: added time",
        "Tools since the previous request: removed grep",
        "Tools since the previous request: added grep",
        "No tool change since the previous request",
    ]


def test_each_route_says_why_it_got_what_it_got_for_each_change(example, capsys):
    """One route of each mode: its mode, what that mode made of the request's change, the prefix."""
    path, _developer = example
    routes = ["deepseek/deepseek-flash", "anthropic/claude-sonnet", "openai/gpt"]
    assert run(inspect(str(path), "--full", *(arg for route in routes for arg in ("--route", route)))) == 0
    text = capsys.readouterr().out
    whys = [
        " ".join(" ".join(block.split("\n  Prefix", 1)[0].split()).split())
        for block in text.split("  Why           ")[1:]
    ]
    assert whys == [
        # Request 1 (first) and 2 (no change).
        *["addition-only: the first request declares the tools in force", "in-history: the first request declares the tools in force", "none: the first request declares the tools in force"],
        *[f"{mode}: no tool change since the previous request; the prefix is kept" for mode in ("addition-only", "in-history", "none")],
        # Request 3: +time.
        "addition-only: time is declared deferred; an addition block makes it available; the prefix is kept",
        "in-history: time is declared deferred; an addition block makes it available; the prefix is kept",
        "none: time is declared up front, with no block; this route sends no update blocks; the prefix breaks at /tools/2",
        # Request 4: −grep.
        "addition-only: grep is no longer declared; its removal is not sent; the prefix breaks at /tools/2",
        "in-history: grep stays declared; a removal block takes it away; the prefix is kept",
        "none: grep is no longer declared; this route sends no update blocks; the prefix breaks at /tools/1",
        # Request 5: +grep, unchanged.
        "addition-only: grep is declared up front, with no block; the prefix breaks at /tools/1",
        "in-history: grep is declared up front again; an addition block makes it available; the prefix is kept",
        "none: grep is declared up front, with no block; this route sends no update blocks; the prefix breaks at /tools/2",
        # Request 6: no change.
        *[f"{mode}: no tool change since the previous request; the prefix is kept" for mode in ("addition-only", "in-history", "none")],
    ]


def test_a_route_that_did_not_change_says_since_which_request(example, capsys):
    """Issue 24 item 11: a route whose summary is what it was at an earlier request takes one line
    (a 5-request session printed 426 lines); `--full` shows every route in full."""
    path, _developer = example
    argv = (str(path), "--route", "offline/demo", "--route", "openai/gpt")
    assert run(inspect(*argv)) == 0
    out = capsys.readouterr().out
    requests = out.split("━━ Request ")[1:]
    shown = [[line for line in request.splitlines() if line.startswith(("offline/demo", "openai/gpt"))] for request in requests]
    unchanged = [[line for line in lines if "unchanged" in line] for lines in shown]
    assert unchanged == [
        [],
        ["offline/demo  unchanged since request 1", "openai/gpt  unchanged since request 1"],
        [],
        [],
        [],
        ["offline/demo  unchanged since request 5"],
    ]
    assert out.count("Declarations") == 2 * 6 - 3
    assert run(inspect(*argv, "--full")) == 0
    full = capsys.readouterr().out
    assert "unchanged" not in full and full.count("Declarations") == 2 * 6
    assert len(full.splitlines()) > len(out.splitlines())


def test_diff_shows_each_body_against_the_previous_request_on_the_route(example, capsys):
    path, _developer = example
    route_id = MODES["addition-only"][0]
    assert run(inspect(str(path), "--request", "3", "--route", route_id)) == 0
    assert "Body diff" not in capsys.readouterr().out
    assert run(inspect(str(path), "--request", "3", "--route", route_id, "--diff")) == 0
    out = capsys.readouterr().out
    requests = Session.open(path).view().requests
    (report,) = inspect_requests(requests, [CATALOG.get(route_id)], only=3)
    diff = report.routes[0].body_diff()
    assert "  Body diff" in out and diff
    assert "\n".join("    " + line for line in diff) in out
    assert run(inspect(str(path), "--request", "1", "--route", route_id, "--diff")) == 0
    assert "Body diff     none (no previous body on this route)" in capsys.readouterr().out


def test_json_has_the_tool_change_and_with_diff_the_body_diff(example, capsys):
    path, _developer = example
    report = inspect_json(capsys, str(path), "--request", "4")
    (request,) = report["requests"]
    assert request["tool_change"] == {
        "first": False,
        "tools": ["read", "time"],
        "added": [],
        "removed": ["grep"],
        "redefined": [],
    }
    assert all("body_diff" not in route for route in request["routes"].values())
    (request,) = inspect_json(capsys, str(path), "--request", "4", "--diff")["requests"]
    for route in request["routes"].values():
        assert route["body_diff"][:2] == ["--- previous", "+++ this"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--route", "nowhere/none"], "unknown route 'nowhere/none'"),
        (["--request", "7"], "request 7 is out of range: the session has 6 requests"),
        (["--request", "0"], "request 0 is out of range"),
    ],
)
def test_usage_errors_exit_2(example, capsys, argv, message):
    path, _developer = example
    assert run(inspect(str(path), *argv)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert message in captured.err


def test_a_corrupt_session_is_reported_without_a_traceback(example, capsys):
    path, _developer = example
    lines = path.read_bytes().splitlines(keepends=True)
    lines[5] = b'{"type":"user/message","seq":5,"time":1,"data":{"id":"u9"}}\n'
    path.write_bytes(b"".join(lines))
    assert run(inspect(str(path), "--json")) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{path}:6" in captured.err
    assert "Traceback" not in captured.err
    assert len(captured.err.strip().splitlines()) == 1


def test_a_missing_session_exits_1(capsys):
    assert run(inspect("no-such-session")) == 1
    assert "no-such-session" in capsys.readouterr().err


def test_text_report_colours_only_when_asked(example):
    path, _developer = example
    requests = Session.open(path).view().requests
    reports = inspect_requests(requests, [CATALOG.get(MODES["none"][0])], only=3)
    prices = PriceBook.of(None)
    assert "\x1b[31m" in render_text(path.stem, len(requests), reports, color=True, prices=prices)
    assert "\x1b[" not in render_text(path.stem, len(requests), reports, color=False, prices=prices)


def test_a_request_without_history_falls_back_on_routes_that_send_updates(tmp_path, capsys):
    log = LogBuilder("no-header")
    log.start_turn("hi")
    log.start_step()
    log.assistant("hello")
    log.end_step()
    log.end_turn()
    path = write_session(log, tmp_path / "sessions")
    routes = inspect_json(capsys, str(path))["requests"][0]["routes"]
    assert all(routes[route_id]["fallback"] == "no-history" for route_id in MODES["in-history"])
    assert all(routes[route_id]["fallback"] is None for route_id in MODES["none"])
    assert run(inspect(str(path), "--route", MODES["in-history"][0])) == 0
    out = capsys.readouterr().out
    assert "No tool history came with this request" in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_the_toolscope_command_prints_the_same_report(example, capsys, tmp_path):
    """The installed console command, in a subprocess, with a session id looked up under TOOLSCOPE_HOME."""
    path, _ = example
    home = tmp_path / "home"
    (home / "sessions").mkdir(parents=True)
    (home / "sessions" / path.name).write_bytes(path.read_bytes())
    env = {k: v for k, v in os.environ.items() if k not in ("TOOLSCOPE_CONFIG", "LC_ALL", "LC_MESSAGES")}
    env.update(TOOLSCOPE_HOME=str(home), LANG="C.UTF-8")
    command = Path(sys.executable).parent / "toolscope"
    result = subprocess.run(
        [str(command), "inspect", path.stem, "--json", "--route", "offline/demo"],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == inspect_json(capsys, str(path), "--route", "offline/demo")
    missing = subprocess.run(
        [str(command), "inspect", "no-such-session"], capture_output=True, text=True, env=env, timeout=60
    )
    assert missing.returncode == 1 and "Traceback" not in missing.stderr and missing.stderr.strip()


def toolscope_env(home: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TOOLSCOPE_CONFIG", "LC_ALL", "LC_MESSAGES", "PAGER", "TOOLSCOPE_PAGER")
    }
    env.update(TOOLSCOPE_HOME=str(home), LANG="C.UTF-8", **extra)
    return env


def test_the_text_report_is_the_summary_and_bodies_come_with_body(example, tmp_path):
    """Through the command: a few lines a route; `--body` adds the wire bodies; JSON keeps them."""
    path, _ = example
    command = Path(sys.executable).parent / "toolscope"
    env = toolscope_env(tmp_path / "home", PAGER="cat > pager-was-used")

    def inspect_command(*argv: str) -> str:
        result = subprocess.run(
            [str(command), "inspect", str(path), *argv],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    summary, with_bodies = inspect_command(), inspect_command("--body")
    routes, requests = len(CATALOG), 6
    assert len(summary.splitlines()) < 20 * routes * requests < len(with_bodies.splitlines())
    assert "Wire body" not in summary and '"messages": [' not in summary
    assert with_bodies.count("Wire body") == routes * requests
    as_json = json.loads(inspect_command("--json"))
    assert all(route["body"] for request in as_json["requests"] for route in request["routes"].values())
    assert not (tmp_path / "pager-was-used").exists()  # not a terminal: no pager


def _on_a_terminal(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    """Run `argv` with its stdout on a pseudo-terminal; its exit code and what reached the screen."""
    import pty

    leader, follower = pty.openpty()
    process = subprocess.Popen(argv, stdout=follower, stderr=subprocess.PIPE, env=env, cwd=cwd)
    os.close(follower)
    shown = drain(leader)
    process.wait(timeout=60)
    return process.returncode, shown.decode()


def test_on_a_terminal_the_text_goes_through_the_pager(example, tmp_path):
    path, _ = example
    command = [str(Path(sys.executable).parent / "toolscope"), "inspect", str(path)]
    env = toolscope_env(tmp_path / "home", PAGER="cat > paged.txt", NO_COLOR="1")
    code, shown = _on_a_terminal(command, env, tmp_path)
    assert code == 0 and shown == ""
    paged = (tmp_path / "paged.txt").read_text()
    assert paged.startswith(f"Session {path.stem} · 6 requests") and "Wire body" not in paged
    (tmp_path / "paged.txt").unlink()
    code, shown = _on_a_terminal([*command, "--no-pager"], env, tmp_path)
    assert code == 0 and not (tmp_path / "paged.txt").exists()
    assert shown.replace("\r\n", "\n") == paged
    code, shown = _on_a_terminal(command, {**env, "PAGER": "", "TOOLSCOPE_PAGER": "cat > chosen.txt"}, tmp_path)
    assert (tmp_path / "chosen.txt").read_text() == paged


def test_one_request_is_reported_without_reading_the_rest_of_the_log(example, capsys):
    """docs/architecture.md §5: `--request N` costs what request N costs; a bad line it does not read is not its
    concern (without `--request`, the whole log is validated first, as above)."""
    path, _developer = example
    lines = path.read_bytes().splitlines(keepends=True)
    lines[-1] = b'{"type":"turn/end"}\n'
    path.write_bytes(b"".join(lines))

    assert run(inspect(str(path), "--request", "1", "--json")) == 0
    assert [request["index"] for request in json.loads(capsys.readouterr().out)["requests"]] == [1]
    assert run(inspect(str(path), "--json")) == 1
    assert f"{path}:{len(lines)}" in capsys.readouterr().err


def test_a_fallback_explained_in_chinese_keeps_to_the_report_width():
    """The fallback's explanation is wrapped by terminal cells: `textwrap` counted characters, and
    the zh_CN missing-update explanation (55 characters, 110 cells) stayed one line past 100."""
    from app.report.text import cell_width, wrap_cells

    chinese = "此请求的消息缺少当前序列中的某次更新（这是一个截断了历史的辅助请求）：将声明当前工具，且不发送工具更新。"
    assert max(cell_width(line) for line in textwrap.wrap(chinese, 84)) > 84
    lines = wrap_cells(chinese, 84)
    assert "".join(lines) == chinese and len(lines) == 2 and all(cell_width(line) <= 84 for line in lines)
    english = "No tool history came with this request: the current tools are declared and no tool updates are sent."
    assert wrap_cells(english, 40) == textwrap.wrap(english, 40)

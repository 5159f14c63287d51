"""Sessions written by programs other than toolscope's writer (issue 23, item 1): any JSON spelling
of the same lines — spaces, escapes, key order, `type` not first, CRLF — reads exactly as the
writer's compact form through `inspect`, `export`, `cost`, `run --session`, the view, the
Trajectory and a resumed chat."""

from __future__ import annotations

import difflib
import json
import os
import random
import re
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.session.events import encode_event, encode_header
from app.session.listing import list_sessions
from app.session.resumed import ResumedLog
from app.session.session import Session
from tests.functional.ui.chat_support import cursor_blink_off, make_bench, settle, until
from tests.functional.ui.trajectory_support import TOOLSCOPE, trajectory_cells, trajectory_session
from tests.support.commands import run_cli
from tests.support.histories import GeneratedLog, session_logs
from tests.support.screen import screen_cells
from tests.support.spellings import respell_file

pytestmark = pytest.mark.anyio

COMMANDS = (
    ("inspect", "--json"), ("inspect", "--no-pager"), ("export", "--format", "json"), ("export", "--format", "md"), ("cost", "--json"),
)


def outputs(path: Path) -> list[object]:
    """What each reading command prints for `path`, and what the view and a resumed chat read."""
    printed = [run_cli(command, str(path), *options) for command, *options in COMMANDS]
    return [*printed, list(Session.open(path).view().items), ResumedLog(path).earlier(1_000_000)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(log=session_logs(), seed=st.integers(0, 2**32 - 1))
def test_a_respelt_session_reads_exactly_as_the_compact_one(log: GeneratedLog, seed: int, tmp_path: Path) -> None:
    compact = tmp_path / f"compact-{seed}.jsonl"
    compact.write_bytes(encode_header(log.header) + b"".join(map(encode_event, log.events)))
    spelt = tmp_path / f"spelt-{seed}.jsonl"
    spelt.write_bytes(respell_file(compact.read_bytes(), random.Random(seed)))

    assert outputs(spelt) == outputs(compact)


# --- through the console script, on a session the real agent wrote -------------------------------


def _json_dumps(path: Path, target: Path) -> Path:
    """`path` rewritten line by line with Python's `json.dumps` defaults: `{"type": "…", …}`."""
    lines = path.read_text(encoding="utf-8").splitlines()
    target.write_text("".join(json.dumps(json.loads(line)) + "\n" for line in lines), encoding="utf-8")
    return target


def _toolscope(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TOOLSCOPE_HOME": str(home), "TOOLSCOPE_OFFLINE_DELAY": "0", "NO_COLOR": "1"}
    env.pop("TOOLSCOPE_CONFIG", None)
    return subprocess.run([str(TOOLSCOPE), *args], capture_output=True, text=True, env=env, timeout=120, check=False)


@pytest.mark.slow(seconds=12)
def test_inspect_export_and_run_read_a_json_dumps_session_as_the_original(tmp_path: Path) -> None:
    """The issue's reproduction: `inspect` said "0 requests", `export` had no turns, `run
    --session` died with a traceback."""
    home = tmp_path / "home"
    original = trajectory_session(home)
    dumped = _json_dumps(original, tmp_path / "dumped.jsonl")
    assert dumped.read_text().startswith('{"type": "session", ')

    for args in (("inspect", "--no-pager"), ("inspect", "--json"), ("export", "--format", "json"), ("cost", "--json")):
        mine, theirs = _toolscope(home, args[0], str(original), *args[1:]), _toolscope(home, args[0], str(dumped), *args[1:])
        assert (theirs.returncode, theirs.stdout, theirs.stderr) == (mine.returncode, mine.stdout, mine.stderr)
    assert " · 0 requests" not in _toolscope(home, "inspect", str(dumped), "--no-pager").stdout

    continued = _toolscope(home, "run", "--session", str(dumped), "thanks again")
    assert continued.returncode == 0, continued.stderr
    assert continued.stdout.strip() and "Traceback" not in continued.stderr
    events = Session.open(dumped).load().events
    assert [event.type for event in events[-3:]] == ["assistant/message", "step/end", "turn/end"]
    assert events[-1].data.reason == "completed"


def test_the_session_list_shows_a_json_dumps_session_with_the_originals_title_and_route(tmp_path: Path) -> None:
    original = trajectory_session(tmp_path / "home")
    _json_dumps(original, original.with_name("dumped.jsonl"))

    listed = {Path(summary.path).name: summary for summary in list_sessions(original.parent, tmp_path / "listing.json")}
    mine, theirs = listed[original.name], listed["dumped.jsonl"]

    assert mine.title == "hello" and mine.route == "loop/unavailable"
    assert (theirs.title, theirs.route, theirs.events) == (mine.title, mine.route, mine.events)


# --- the Trajectory and the chat, driven by the pilot ---------------------------------------------


async def test_the_trajectory_of_a_json_dumps_session_is_the_originals(tmp_path: Path) -> None:
    """The issue saw a turn with only its user message: the requests, calls and context nodes of a
    line the index could not classify were missing."""
    original = trajectory_session(tmp_path / "home")
    dumped = _json_dumps(original, original.with_name("trajectory-demo-dumped.jsonl"))
    mine, theirs = await trajectory_cells(original), await trajectory_cells(dumped)
    shown = "".join(char for char, _style in mine)
    assert "are you there" in shown and theirs == mine, _difference(mine, theirs)


def _difference(mine: list[tuple[str, str]], theirs: list[tuple[str, str]]) -> str:
    """The two screens' text, a line per style change, as a unified diff: what a failure shows."""

    def lines(cells: list[tuple[str, str]]) -> list[str]:
        return re.sub(r"(\x1b\[[0-9;]*[A-Za-z])", r"\n\1", "".join(char for char, _style in cells)).splitlines()

    return "\n".join(difflib.unified_diff(lines(mine), lines(theirs), lineterm="", n=0))


async def test_a_resumed_chat_shows_a_json_dumps_session_as_the_original(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = make_bench(tmp_path, monkeypatch)
    original = trajectory_session(bench.home)
    dumped = _json_dumps(original, original.with_name("trajectory-demo-dumped.jsonl"))
    screens = []
    for path in (original, dumped):
        async with bench.app(session=path).run_test(size=(100, 34)) as pilot:
            await until(pilot, lambda: len(pilot.app.chat.conversation.blocks) > 5)
            await cursor_blink_off(pilot)  # the same cursor in both pictures, whatever the load
            await settle(pilot)
            screens.append([(char, style) for char, style in screen_cells(pilot.app)])
    assert "are you there" in "".join(char for char, _style in screens[0])
    assert screens[1] == screens[0], _difference(*screens)

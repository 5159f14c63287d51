"""The trajectory's cache breaks (issue 27 item 4): the mark on a request's row, the detail pane's
diagnostic and the "cache breaks" filter, on a session the real agent wrote through `toolscope run`
on the offline route set to send no tool updates, so that each plugin switched on or off breaks its
prompt cache; the trajectory is driven by the pilot and read from the screen."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.agent.runtime import catalog_from
from app.config import load_config
from app.report.cache import CacheCause
from app.session.session import Session
from app.trajectory.cache_marks import Diagnoses, cache_breaks, is_break
from app.trajectory.entries import CACHE_BREAK, PRESETS
from app.trajectory.indexed import IndexedTrajectory
from app.trajectory.model import TrajectoryModel
from app.trajectory.source import SessionFileSource
from app.ui.messages import PromptSubmitted
from app.ui.trajectory.app import TrajectoryApp
from app.ui.trajectory.detail import TrajectoryDetail
from app.ui.trajectory.screen import TrajectoryScreen
from benchmarks.sessions import write_large_session
from tests.functional.e2e.harness import KEY, KEY_ENV
from tests.functional.ui.chat_support import make_bench, send, until
from tests.functional.ui.trajectory_support import TOOLSCOPE, _normalized
from tests.support.screen import screen_rows

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

SIZE = (120, 34)
NO_UPDATES = ["[[routes]]", 'id = "offline/demo"', 'tool_update = "none"', ""]
"""Every tool change is a new prefix on this route: the breaks to mark."""


def _config(root: Path, name: str, plugins: list[str]) -> Path:
    path = root / f"{name}.toml"
    path.write_text("\n".join(["[plugins]", f"enabled = {json.dumps(plugins)}", "", *NO_UPDATES]), encoding="utf-8")
    return path


def _run(home: Path, workspace: Path, config: Path, prompt: str, *more: str) -> None:
    env = {key: value for key, value in os.environ.items() if key not in ("LC_ALL", "LC_MESSAGES", "LANG")}
    env.update(TOOLSCOPE_HOME=str(home), TOOLSCOPE_CONFIG=str(config), LANG="C.UTF-8", TOOLSCOPE_OFFLINE_DELAY="0")
    env[KEY_ENV] = KEY
    result = subprocess.run(
        [str(TOOLSCOPE), "run", *more, prompt], cwd=workspace, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def broken() -> Iterator[tuple[Path, Path]]:
    """Three turns: no plugin, the calculator switched on (request 2 breaks: +calculate), and off
    again (request 4 breaks: −calculate). The session and the config its route comes from. Built
    under a folder whose path has the same length however the tests run: the system prompt names
    the workspace, and the recorded usage in the picture counts its tokens."""
    root = Path(tempfile.mkdtemp(dir="/tmp", prefix="toolscope-snapshot-"))
    try:
        yield _written(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _written(root: Path) -> tuple[Path, Path]:
    home, workspace = root / "home", root / "workspace"
    workspace.mkdir()
    plain = _config(root, "plain", [])
    _run(home, workspace, plain, "hello")
    (path,) = (home / "sessions").glob("*.jsonl")
    _run(home, workspace, _config(root, "calculator", ["calculator"]), "use calculate on 6*7", "--session", str(path))
    _run(home, workspace, plain, "thanks", "--session", str(path))
    fixed = root / "view" / "sessions" / "cache-breaks.jsonl"
    fixed.parent.mkdir(parents=True)
    fixed.write_text(_normalized(path.read_text(encoding="utf-8"), workspace), encoding="utf-8")
    fixed.chmod(0o600)
    return fixed, plain


def viewer(session: Path, config: Path) -> TrajectoryApp:
    return TrajectoryApp(SessionFileSource.open(session), catalog=catalog_from(load_config(config)))


async def loaded(pilot) -> TrajectoryScreen:  # type: ignore[no-untyped-def]
    await until(pilot, lambda: isinstance(pilot.app.screen, TrajectoryScreen) and pilot.app.screen.loaded)
    await pilot.pause()
    return pilot.app.screen


def shown(pilot) -> str:  # type: ignore[no-untyped-def]
    """The screen's text, line by line."""
    return "\n".join("".join(char for char, _style in row) for row in screen_rows(pilot.app))


async def test_a_request_that_broke_its_routes_cache_is_marked_with_the_cause(broken) -> None:
    session, config = broken
    async with viewer(session, config).run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("v")  # the flat list: every request's row on the screen
        await until(pilot, lambda: shown(pilot).count("↯") == 2)  # worked out behind the rows drawn
        rows = {row[2]: row[1] for row in (re.search(r"(Request (\d).*)", line) for line in shown(pilot).splitlines()) if row}
        assert "↯ tools changed" in rows["2"] and "↯ tools changed" in rows["4"]
        # The first request writes the cache (not a break); the third is served from it.
        assert "↯" not in rows["1"] and "↯" not in rows["3"]


async def test_the_detail_pane_says_why_the_cache_broke(broken) -> None:
    session, config = broken
    async with viewer(session, config).run_test(size=SIZE) as pilot:
        screen = await loaded(pilot)
        await pilot.press("v", "home")
        while screen.current_entry.request is None or screen.current_entry.request.index != 4:
            await pilot.press("down")
        detail = screen.query_one(TrajectoryDetail)
        await until(pilot, lambda: f'"seq": {screen.current_entry.seq},' in detail.content.plain)
        await until(pilot, lambda: "│ Prompt cache on" in shown(pilot))
        text = shown(pilot)  # the pane wraps the line at its width
        assert "│ Prompt cache on offline/demo: tools changed" in text
        assert "│ (−calculate) at /tools/5" in text


async def test_the_cache_breaks_preset_shows_only_the_requests_whose_cache_broke(broken) -> None:
    session, config = broken
    async with viewer(session, config).run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("v", *["f"] * 5)  # default → … → everything → cache breaks
        await pilot.app.workers.wait_for_complete()  # the pass that finds them, in a thread
        await pilot.pause()
        text = shown(pilot)
        assert "filter: cache breaks" in text
        requests = [line for line in text.splitlines() if re.search(r"Request \d", line)]
        assert len(requests) == 2, requests
        assert "Request 2 · offline/demo · ↯ tools changed" in requests[0]
        assert "Request 4 · offline/demo · ↯ tools changed" in requests[1]


def test_the_cache_breaks_preset(broken, snap_compare) -> None:
    session, config = broken

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        screen = await loaded(pilot)
        await pilot.press(*["f"] * 5)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        tree = screen.query_one("#trajectory-tree")
        for node in list(tree.root.children):
            tree.expand_below(node)
        await pilot.pause()
        await pilot.press("home", "r")  # the first request the filter shows
        detail = screen.query_one(TrajectoryDetail)
        await until(pilot, lambda: f'"seq": {screen.current_entry.seq},' in detail.content.plain)
        await until(pilot, lambda: "Prompt cache on" in detail.content.plain)
        await pilot.pause()

    assert snap_compare(viewer(session, config), terminal_size=SIZE, run_before=run_before)


# --- a large file's lazy trajectory marks what a full fold marks ---------------------------------


def test_a_large_files_cache_breaks_are_the_rows_a_full_fold_shows_and_each_rows_mark(tmp_path) -> None:
    """On a generated session (two routes in turn, compactions): the pass finds the requests the
    rows' worker (`Diagnoses`, one request at a time) finds broken, and the lazy trajectory (some segments folded before the marks, the
    others after; classified after them) shows them as the full fold does."""
    path = tmp_path / "20260101-000000-a1a1a1.jsonl"
    write_large_session(path, events=1_500, compaction_every=10)
    routes = list(catalog_from(None))
    requests = Session.open(path).view().requests
    found = cache_breaks(requests, routes, lambda done, total: None, len(requests))
    diagnoses = Diagnoses(requests, routes)
    one_by_one = [(request.index, *diagnoses.of(request.index)) for request in requests]
    assert found == {seq: (index, diagnostic) for index, seq, diagnostic in one_by_one if is_break(diagnostic)}
    causes = {diagnostic.cause for _index, diagnostic in found.values()}
    assert {CacheCause.ROUTE_SWITCHED, CacheCause.HISTORY_REWRITTEN} <= causes
    seqs = sorted(found)

    eager = TrajectoryModel()
    eager.update(Session.open(path).folded_view())
    lazy = IndexedTrajectory(Session.open(path))
    lazy.top_level(PRESETS[0].kinds)  # folds the segments of the turns shown
    folded_before = lazy.segment_number(seqs[len(seqs) // 2])
    lazy.segment(folded_before)
    eager.mark_breaks(seqs)
    lazy.mark_breaks(seqs)
    lazy.classify()  # after the marks: neither pass undoes the other's codes
    for kinds in (CACHE_BREAK, CACHE_BREAK | {"error"}, PRESETS[0].kinds):
        assert [(entry.seq, entry.kinds) for entry in lazy.rows(kinds)] == [
            (entry.seq, entry.kinds) for entry in eager.rows(kinds)
        ], sorted(kinds)
    assert [entry.seq for entry in lazy.rows(CACHE_BREAK)] == seqs


# --- over the chat -------------------------------------------------------------------------------


async def test_the_trajectory_over_the_chat_marks_a_break_and_its_preset_follows_the_next_ones(
    tmp_path, monkeypatch
) -> None:
    """The chat's own session on its route (no tool updates): a plugin switched on breaks the
    prefix; the preset shows it, and a break logged after the pass, with the preset on, appears."""
    bench = make_bench(tmp_path, monkeypatch)
    bench.config_lines += NO_UPDATES
    app = bench.app()
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "hello")
        app.registry.enable_plugin("calculator")
        await send(pilot, "use calculate on 6*7")
        await pilot.press("ctrl+l")
        await loaded(pilot)
        await pilot.press("v", *["f"] * 5)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        (only,) = [line for line in shown(pilot).splitlines() if re.search(r"Request \d", line)]
        assert "Request 2 · offline/demo · ↯ tools changed" in only
        # A turn logged with the trajectory open on the preset (the pass has run).
        app.registry.disable_plugin("calculator")
        app.post_message(PromptSubmitted("thanks"))
        await until(pilot, lambda: len(app.view().requests) == 4 and not app.turn_running)
        await until(pilot, lambda: "Request 4 · offline/demo · ↯" in shown(pilot))
        breaks = [line for line in shown(pilot).splitlines() if re.search(r"Request \d", line)]
        assert len(breaks) == 2 and "Request 4 · offline/demo · ↯ tools changed" in breaks[1]

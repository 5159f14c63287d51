"""Pictures of `toolscope view` (pytest-textual-snapshot), driven by the pilot as a user would, on a
session the real agent wrote (`trajectory_support`): fixed size, fixed ids, times and paths."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.session.listing import list_sessions
from app.trajectory.source import SessionFileSource
from app.ui.trajectory.app import TrajectoryApp
from app.ui.trajectory.detail import TrajectoryDetail
from app.ui.trajectory.labels import entry_label
from app.ui.trajectory.screen import TrajectoryScreen
from app.ui.trajectory.tree import TrajectoryTree
from tests.functional.ui.chat_support import until
from tests.functional.ui.trajectory_support import trajectory_session

pytestmark = pytest.mark.timeout(180)

SIZE = (120, 34)
FIXED_HOME = Path("/tmp/toolscope-view-snapshots")
"""A fixed data dir: the picker's detail line shows the session's path."""


@pytest.fixture
def session(monkeypatch) -> Iterator[Path]:
    """The session in FIXED_HOME, held under a lock: pytest-xdist's workers share /tmp, and one
    worker's clean-up must not remove the session another is painting."""
    import fcntl
    import shutil

    with open(f"{FIXED_HOME}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        monkeypatch.setenv("TZ", "UTC")
        time.tzset()
        shutil.rmtree(FIXED_HOME, ignore_errors=True)
        monkeypatch.setenv("TOOLSCOPE_HOME", str(FIXED_HOME))
        yield trajectory_session(FIXED_HOME)
        shutil.rmtree(FIXED_HOME, ignore_errors=True)
        monkeypatch.undo()
        time.tzset()


async def detail_settled(pilot) -> None:
    """The JSON pane shows the cursor's event (it follows the cursor once it rests)."""
    screen = pilot.app.screen
    detail = screen.query_one(TrajectoryDetail)
    await until(pilot, lambda: f'"seq": {screen.current_entry.seq},' in detail.content.plain)
    await pilot.pause()


def trajectory(path: Path) -> TrajectoryApp:
    return TrajectoryApp(SessionFileSource.open(path))


async def loaded(pilot) -> TrajectoryScreen:
    await until(pilot, lambda: isinstance(pilot.app.screen, TrajectoryScreen) and pilot.app.screen.loaded)
    await pilot.pause()
    return pilot.app.screen


async def expand_turns(pilot, *numbers: int) -> None:
    tree = pilot.app.screen.query_one(TrajectoryTree)
    for node in list(tree.root.children):
        if node.data.subject.number in numbers:
            node.expand()
    await pilot.pause()


def test_the_session_picker_in_view_mode(session, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await pilot.pause()

    assert snap_compare(TrajectoryApp(None, list_sessions()), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("expanded", [False, True], ids=["collapsed", "expanded"])
def test_single_and_multi_tool_context_nodes(session, snap_compare, expanded) -> None:
    async def run_before(pilot) -> None:
        screen = await loaded(pilot)
        await expand_turns(pilot, 2, 3)
        single, multi = (
            next(entry for entry in screen.model.entries if label in entry_label(entry).plain)
            for label in ("Tool added: calculate", "2 tools added")
        )
        screen.go_to(single)
        screen.go_to(multi)
        if expanded:
            await pilot.press("space")
        await detail_settled(pilot)

    assert snap_compare(trajectory(session), terminal_size=SIZE, run_before=run_before)


def test_search_reveals_a_hit_inside_an_unexpanded_turn(session, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await loaded(pilot)
        await pilot.press("slash", *"nope", "enter")
        await pilot.app.workers.wait_for_complete()
        await pilot.press("n")
        await detail_settled(pilot)

    assert snap_compare(trajectory(session), terminal_size=SIZE, run_before=run_before)


def test_the_tool_changes_only_preset(session, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await loaded(pilot)
        await pilot.press("f")
        tree = pilot.app.screen.query_one(TrajectoryTree)
        for node in list(tree.root.children):
            tree.expand_below(node)
        await pilot.pause()
        await pilot.press("c", "c")
        await detail_settled(pilot)

    assert snap_compare(trajectory(session), terminal_size=SIZE, run_before=run_before)


def test_the_flat_list(session, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await loaded(pilot)
        await pilot.press("v", "e")
        await detail_settled(pilot)

    assert snap_compare(trajectory(session), terminal_size=SIZE, run_before=run_before)


def test_the_trajectory_in_chinese(session, chinese, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await loaded(pilot)
        await expand_turns(pilot, 3, 6)
        await pilot.press("e")
        await detail_settled(pilot)

    assert snap_compare(trajectory(session), terminal_size=SIZE, run_before=run_before)


def test_the_trajectory_opens_on_the_latest_turn_of_a_long_session(tmp_path, snap_compare) -> None:
    """A session of 283 turns (grouped by the hundred) opens as a transcript does: the last group
    and the latest turn expanded, its requests and tool calls shown, the cursor on it."""
    from benchmarks.sessions import write_large_session

    path = tmp_path / "20260101-000000-c1c1c1.jsonl"
    write_large_session(path, events=4_000, compaction_every=40)

    async def run_before(pilot) -> None:
        await loaded(pilot)
        await pilot.app.workers.wait_for_complete()
        await detail_settled(pilot)

    assert snap_compare(trajectory(path), terminal_size=SIZE, run_before=run_before)

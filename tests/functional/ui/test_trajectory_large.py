"""The Trajectory of a large session file, read lazily from its line index (issue 12, item 5).

The lazy model is checked against the full fold it replaces, row by row, on a generated session;
the trajectory is driven by the pilot on sessions made "large" by lowering the size at which the
background passes (classification, validation in processes of their own) take over, so they run
here on a few thousand events exactly as they do on a million.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from textual.widgets import Input
from textual.widgets.tree import TreeNode

from app.session.events import UserMessageData, encode_event, make_event
from app.session.line_index import index_path
from app.session.session import Session
from app.session.view import Turn
from app.session.view_items import ToolResultItem, UserItem
from app.trajectory import indexed as trajectory_indexed
from app.trajectory import source as trajectory_source
from app.trajectory.entries import KINDS, PRESETS
from app.trajectory.indexed import IndexedTrajectory
from app.trajectory.model import TrajectoryModel
from app.trajectory.source import SessionFileSource
from app.ui.trajectory import tree as trajectory_tree
from app.ui.trajectory.app import TrajectoryApp
from app.ui.trajectory.flat_list import TrajectoryList
from app.ui.trajectory.labels import entry_label
from app.ui.trajectory.screen import TrajectoryScreen
from app.ui.trajectory.tree import TrajectoryTree
from benchmarks.sessions import write_large_session
from tests.functional.ui.chat_support import until
from tests.support.screen import screen_rows, text_in
from tests.support.spellings import respell_file
from tests.support.told import Told

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(300)]

SIZE = (120, 34)
EVERYTHING = frozenset(KINDS)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 300 turns with failed tool results, request errors, retries, tool changes and
    compactions (new projection sequences) every few dozen turns."""
    path = tmp_path_factory.mktemp("large") / "20260101-000000-a1a1a1.jsonl"
    write_large_session(path, events=4_000, compaction_every=40)
    return path


@pytest.fixture
def large(generated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the generated session, and the trajectory treating anything as large."""
    path = tmp_path / generated.name
    path.write_bytes(generated.read_bytes())
    monkeypatch.setattr(trajectory_source, "CHECK_AT_ONCE", 0)
    return path


def rows_of(model, kinds: frozenset[str]) -> list[tuple[int, frozenset[str], str]]:
    return [(entry.seq, entry.kinds, entry_label(entry).plain) for entry in model.rows(kinds)]


def eager_and_lazy(path: Path) -> tuple[TrajectoryModel, IndexedTrajectory]:
    eager = TrajectoryModel()
    eager.update(Session.open(path).folded_view())
    lazy = IndexedTrajectory(Session.open(path))
    lazy.classify()
    return eager, lazy


# --- the lazy model is the full fold's -----------------------------------------------------------


def test_every_filter_shows_the_rows_a_full_fold_shows(generated) -> None:
    eager, lazy = eager_and_lazy(generated)
    assert lazy.last_seq == eager.last_seq
    for kinds in [*(preset.kinds for preset in PRESETS), frozenset({"error"}), frozenset({"header"})]:
        assert rows_of(lazy, kinds) == rows_of(eager, kinds), sorted(kinds)
    # Both kinds a type code does not tell are there (so the comparison above covers them).
    assert any("sequence" in entry.kinds for entry in eager.entries)
    assert any("tool" in entry.kinds and "error" in entry.kinds for entry in eager.entries)


def test_before_classification_the_rows_are_the_type_codes_and_after_it_the_full_folds(generated) -> None:
    eager, _ = eager_and_lazy(generated)
    lazy = IndexedTrajectory(Session.open(generated))
    errors = frozenset({"error"})
    before = rows_of(lazy, errors)
    lazy.classify_elsewhere(lambda done, total: None)  # the process the trajectory starts for a large log
    assert rows_of(lazy, errors) == rows_of(eager, errors)
    assert len(before) < len(rows_of(lazy, errors))


def test_jumps_search_and_the_nearest_row_agree_with_the_full_fold(generated) -> None:
    eager, lazy = eager_and_lazy(generated)
    kinds = PRESETS[0].kinds
    for seq in range(0, eager.last_seq, 97):
        for kind in ("request", "context", "error"):
            for direction in (1, -1):
                mine, theirs = lazy.find(kind, seq, direction, kinds), eager.find(kind, seq, direction, kinds)
                assert (mine and mine.seq) == (theirs and theirs.seq), (seq, kind, direction)
        assert lazy.nearest(seq, frozenset({"context"})).seq == eager.nearest(seq, frozenset({"context"})).seq
    for query in ("readme", "No such FILE", "projection route", "tool_3", "nothing-like-this", "déclaration"):
        for filter_kinds in (kinds, EVERYTHING - {"turn", "step"}):
            assert lazy.search(query, filter_kinds) == eager.search(query, filter_kinds), query


@pytest.fixture(scope="module")
def respelt(generated: Path) -> Path:
    """The generated session as another program may write it: spaces (`"isError": true`), escaped
    printable characters (`h\\u0065llo`), keys in another order, CRLF."""
    path = generated.with_name("20260101-000000-c1c1c1.jsonl")
    path.write_bytes(respell_file(generated.read_bytes(), random.Random(23)))
    return path


def test_a_respelt_session_shows_and_finds_what_the_full_fold_of_the_writers_shows(generated, respelt) -> None:
    """The failed results are told by their flag's bytes, and a search rules lines out by theirs:
    neither may miss a line spelt otherwise."""
    eager, _ = eager_and_lazy(generated)
    lazy = IndexedTrajectory(Session.open(respelt))
    lazy.classify()
    for kinds in [*(preset.kinds for preset in PRESETS), frozenset({"error"}), frozenset({"header"})]:
        assert rows_of(lazy, kinds) == rows_of(eager, kinds), sorted(kinds)
    for query in ("readme", "No such FILE", "projection route", "tool_3", "a/b", "déclaration"):
        for filter_kinds in (PRESETS[0].kinds, EVERYTHING - {"turn", "step"}):
            assert lazy.search(query, filter_kinds) == eager.search(query, filter_kinds), query
    assert eager.search("readme", PRESETS[0].kinds)


def test_a_session_of_many_turns_groups_them_and_each_turn_is_folded_once_asked(generated) -> None:
    _, lazy = eager_and_lazy(generated)
    top = lazy.top_level(PRESETS[0].kinds)
    turns = len([match for match in Session.open(generated).chain.types if match == ord("T")])
    assert turns > 200
    assert [(group.first, group.stop) for group in top] == [
        (first, min(first + 100, turns)) for first in range(0, turns, 100)
    ]
    children = lazy.group_children(top[-1], PRESETS[0].kinds)
    labels = [entry_label(entry).plain for entry in children[:2]]
    assert labels[0].startswith(f"Turn {top[-1].first + 1} · ") and labels[1].startswith(f"Turn {top[-1].first + 2} · ")


# --- the screen ----------------------------------------------------------------------------------


async def opened(pilot) -> TrajectoryScreen:
    await until(pilot, lambda: isinstance(pilot.app.screen, TrajectoryScreen) and pilot.app.screen.loaded)
    await pilot.pause()
    return pilot.app.screen


def title(screen: TrajectoryScreen) -> str:
    return str(screen.query_one("#trajectory-title").render())


async def test_a_large_session_paints_then_classifies_and_validates_behind_it(large) -> None:
    eager, _ = eager_and_lazy(large)
    turns = sum(1 for entry in eager.entries if entry.kinds == frozenset({"turn"}))
    groups = [f"Turns {first + 1}–{min(first + 100, turns)}" for first in range(0, turns, 100)]
    async with TrajectoryApp(SessionFileSource.open(large)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        tree = screen.query_one(TrajectoryTree)
        assert [node.label.plain for node in tree.root.children] == groups
        await until(pilot, lambda: "finding errors" not in title(screen) and "validating" not in title(screen))
        await pilot.app.workers.wait_for_complete()
        await pilot.press("f", "f", "f", "v")  # errors and retries, in the flat list
        await pilot.pause()
        flat = screen.query_one(TrajectoryList)
        assert [entry.seq for entry in flat.rows] == [seq for seq, _kinds, _label in rows_of(eager, PRESETS[3].kinds)]
        assert "corrupt" not in title(screen)


async def test_a_large_session_opens_on_its_latest_turn_expanded_and_home_goes_to_the_first_group(large) -> None:
    eager, _ = eager_and_lazy(large)
    latest = [entry for entry in eager.entries if isinstance(entry.subject, Turn)][-1]
    prompt = next(item.text for item in latest.subject.items if isinstance(item, UserItem))
    requests = [f"Request {request.index} · " for request in latest.subject.requests]
    async with TrajectoryApp(SessionFileSource.open(large)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        tree = screen.query_one(TrajectoryTree)
        label = tree.cursor_node.label.plain
        assert label.startswith(f"Turn {latest.subject.number} · ") and prompt.startswith(label.split(" · ")[-1].removesuffix("…"))

        def latest_turn_shown() -> bool:
            rows = [line.strip() for line in text_in(screen_rows(pilot.app), tree.content_region).splitlines()]
            at = next((index for index, row in enumerate(rows) if row.endswith(label)), None)
            return at is not None and all(any(request in row for row in rows[at:]) for request in requests)

        assert requests and latest_turn_shown()
        # The classification behind the trajectory applies the filter again: what was open stays open.
        await pilot.app.workers.wait_for_complete()
        await until(pilot, lambda: "finding errors" not in title(screen))
        await pilot.pause()
        assert tree.cursor_node.label.plain == label and latest_turn_shown()
        await pilot.press("home")
        assert tree.cursor_line == 0 and tree.cursor_node.label.plain == "Turns 1–100"


async def test_search_finds_a_hit_inside_a_group_not_yet_expanded_and_jumps_from_there(large) -> None:
    # One word only a late tool result says (and a user message after it, to walk to).
    lines = large.read_bytes().splitlines(keepends=True)
    results = [i for i in range(len(lines)) if lines[i].startswith(b'{"type":"tool/result"') and b"route" in lines[i]]
    for index in (results[len(results) // 2], results[-1]):
        lines[index] = lines[index].replace(b"route", b"Zanzibar", 1)
    large.write_bytes(b"".join(lines))
    eager, _ = eager_and_lazy(large)
    expected = eager.search("zanzibar", PRESETS[0].kinds)
    assert len(expected) == 2
    target = eager.by_seq[expected[0]]
    assert isinstance(target.subject, ToolResultItem) and 100 < target.turn.number <= 200
    query = "zanzibar"
    async with TrajectoryApp(SessionFileSource.open(large)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await pilot.app.workers.wait_for_complete()
        tree = screen.query_one(TrajectoryTree)
        assert all(not node.children for node in tree.root.children[:-1])  # the last: opened on
        await pilot.press("home", "slash")
        screen.query_one("#trajectory-search", Input).value = query
        await pilot.press("enter")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.current_entry.seq == target.seq
        assert tree.cursor_node.data.seq == target.seq
        assert "match 1 of 2" in title(screen)
        await pilot.press("n")
        assert screen.current_entry.seq == expected[1] and "match 2 of 2" in title(screen)
        await pilot.press("E")
        assert screen.current_entry.seq == eager.find("error", expected[1], -1, screen.kinds).seq



def tree_rows(tree: TrajectoryTree) -> list[TreeNode]:
    """The node on each of the tree's rows, top to bottom, on the screen or scrolled past."""
    return [tree.get_node_at_line(line) for line in range(tree.last_line + 1)]


async def test_shift_space_on_a_group_expands_a_bounded_number_of_rows_in_reading_order(large, monkeypatch) -> None:
    """On a million events a group holds a million nodes: Shift+Space builds the first rows below the
    cursor in reading order, says it stopped there, and collapses all it expanded when pressed again."""
    monkeypatch.setattr(trajectory_tree, "EXPAND_ALL_ROWS", 160)
    told = Told()
    async with TrajectoryApp(SessionFileSource.open(large)).run_test(size=SIZE, message_hook=told) as pilot:
        screen = await opened(pilot)
        await pilot.app.workers.wait_for_complete()
        tree = screen.query_one(TrajectoryTree)
        group = tree.root.children[0]
        await pilot.press("home", "shift+space")
        await pilot.pause()
        rows = tree_rows(tree)
        below = rows[1 : rows.index(tree.root.children[1])]
        assert 110 < len(below) <= 160  # the group's 100 turns, then what is inside the first
        # Reading order: every row shown is expanded up to the first that is not, and none after it.
        expandable = [node for node in below if node.allow_expand]
        first_collapsed = next(i for i, node in enumerate(expandable) if not node.is_expanded)
        assert first_collapsed > 2
        assert not any(node.is_expanded for node in expandable[first_collapsed:])
        turn_1 = group.children[0]
        assert turn_1.is_expanded and next(node for node in turn_1.children if node.allow_expand).is_expanded
        assert told.notes() == [
            f"Expanded the first {len(below)} rows below the cursor; the rest stay collapsed (Space expands one)"
        ]
        await pilot.press("shift+space")
        await pilot.pause()
        assert tree_rows(tree)[:2] == list(tree.root.children[:2])
        assert not any(node.is_expanded for node in expandable)


async def test_a_file_without_an_index_is_indexed_with_its_progress_shown(large) -> None:
    index_path(large).unlink(missing_ok=True)
    source = SessionFileSource.open(large)
    assert source.session is None  # not indexed before the interface starts
    async with TrajectoryApp(source).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        assert "Indexing the session" in str(screen.query_one("#trajectory-loading").render())
        assert "100%" in str(screen.query_one("#trajectory-loading").render())
    assert index_path(large).exists()
    assert SessionFileSource.open(large).session is not None  # the next open finds it current


async def test_a_corrupt_line_in_a_large_session_is_a_row_and_the_validation_names_it(large) -> None:
    lines = large.read_bytes().splitlines(keepends=True)
    index = next(i for i in range(3000, len(lines)) if lines[i].startswith(b'{"type":"tool/result"'))
    lines[index] = lines[index].replace(b'"seq":', b'"seq":"x","s":', 1)
    large.write_bytes(b"".join(lines))
    number, seq = index + 1, index - 1  # line 1 is the header
    async with TrajectoryApp(SessionFileSource.open(large)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await until(pilot, lambda: "corrupt" in title(screen))
        assert f"{large}:{number}:" in title(screen)
        await pilot.press("v")
        flat = screen.query_one(TrajectoryList)
        row = flat.rows.position(seq)
        assert row is not None
        assert entry_label(flat.rows[row]).plain.startswith("✗ Unreadable line:")
        flat.cursor = row
        await pilot.pause()
        assert screen.current_entry.seq == seq


async def test_a_step_outside_any_turn_is_a_row_the_list_can_draw(large) -> None:
    """The reducer makes nothing of a step no turn opened (the validation names it): the row the
    type byte counts for it says so instead of breaking the list."""
    lines = large.read_bytes().splitlines(keepends=True)
    first_turn = next(i for i, line in enumerate(lines) if line.startswith(b'{"type":"turn/start"'))
    seq = first_turn - 1
    lines[first_turn] = encode_event(make_event("user/message", seq, 1, UserMessageData(id="u0", text="no turn")))
    large.write_bytes(b"".join(lines))
    async with TrajectoryApp(SessionFileSource.open(large)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        screen.set_kinds(EVERYTHING)
        await pilot.press("v", "home")
        await pilot.pause()
        flat = screen.query_one(TrajectoryList)
        labels = [entry_label(flat.rows[row]).plain for row in range(8)]
        assert labels[seq] == "User: no turn"
        assert labels[seq + 2] == "✗ Unreadable line: not part of any turn the log opened"  # its step
        await until(pilot, lambda: "corrupt" in title(screen))


@pytest.mark.slow(seconds=13)
async def test_paging_through_the_whole_flat_list_keeps_only_the_last_few_segments(tmp_path, monkeypatch) -> None:
    """Every row of a long session passes the screen once, Page Down at a time: the segments
    folded on the way are dropped as the cache's bound says, whatever the session's length."""
    path = tmp_path / "20260101-000000-c2c2c2.jsonl"
    write_large_session(path, events=4_000)  # 281 turns (segments), rows in many runs of ROW_RUN
    monkeypatch.setattr(trajectory_indexed, "SEGMENT_CACHE", 16)
    async with TrajectoryApp(SessionFileSource.open(path)).run_test(size=(100, 200)) as pilot:
        screen = await opened(pilot)
        await pilot.press("v")
        flat = screen.query_one(TrajectoryList)
        model = flat.model
        assert isinstance(model, IndexedTrajectory)
        most = 0
        while flat.cursor < len(flat.rows) - 1:
            await pilot.press("pagedown")
            await pilot.pause()
            most = max(most, len(model._segments))
        assert model.segment_number(model.last_seq) > 16 * 10  # far more segments than the bound
        assert flat.scroll_offset.y + flat.scrollable_content_region.height >= len(flat.rows)
        assert 0 < most <= 16

"""The Trajectory (`toolscope view`, and over the chat), driven by the pilot as a user would, on
sessions the real agent wrote; plus the command's errors through the real console script."""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from app.session.view import Turn
from app.session.view_items import (
    AssistantItem,
    ContextItem,
    RequestErrorItem,
    RetryItem,
    SummaryItem,
    ToolCallItem,
    ToolResultItem,
    UserItem,
)
from app.trajectory.entries import PRESETS
from app.trajectory.source import SessionFileSource
from app.ui.screens.inspector import InspectorScreen
from app.ui.trajectory import flat_list
from app.ui.trajectory.app import TrajectoryApp
from app.ui.trajectory.detail import TrajectoryDetail
from app.ui.trajectory.flat_list import TrajectoryList
from app.ui.trajectory.labels import MATCH_STYLE, entry_label
from app.ui.trajectory.screen import KindsScreen, TrajectoryScreen, TrajectorySessionPicker
from app.ui.trajectory.tree import Part, TrajectoryTree
from app.ui.widgets.conversation.approval import ApprovalPrompt
from benchmarks.sessions import write_large_session
from tests.functional.test_export import HOSTILE, crafted_log
from tests.functional.test_inspect import write_session
from tests.functional.ui.chat_support import make_bench, send, settle, until
from tests.functional.ui.trajectory_support import SESSION_ID, TOOLSCOPE, trajectory_session
from tests.support.screen import screen_rows, text_in
from tests.support.told import Told

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

SIZE = (120, 34)
TURNS = [
    "Turn 1 · hello",
    "Turn 2 · use calculate on 6*7",
    "Turn 3 · use read_file on README.md and then use read_file…",
    "Turn 4 · use lab__swap_tools",
    "Turn 5 · thanks",
    "Turn 6 · failed · are you there?",
]
"""The rows of the session's turns: each starts its prompt."""


@pytest.fixture
def session(tmp_path: Path) -> Path:
    return trajectory_session(tmp_path / "home")


async def opened(pilot) -> TrajectoryScreen:
    await until(pilot, lambda: isinstance(pilot.app.screen, TrajectoryScreen) and pilot.app.screen.loaded)
    await pilot.pause()
    return pilot.app.screen


def tree_labels(app) -> list[str]:
    """The labels of the tree's rows on the screen, top to bottom, without their guides and
    expander icons."""
    return [GUIDES.sub("", row) for row in shown_rows(app) if row]


GUIDES = re.compile(r"^[\s│├└─┬▶▼]*")


async def search(pilot, text: str) -> None:
    """Type `/`, the words and Enter as a user would; wait for the search (it runs in a thread)."""
    await pilot.press("slash", *text, "enter")
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def subject_of(screen: TrajectoryScreen):
    entry = screen.current_entry
    return entry.subject if entry is not None else None


# --- the tree ------------------------------------------------------------------------------------


def first_turns(path: Path, turns: int) -> Path:
    """The session cut after its `turns`-th turn/end: the same log, ended earlier."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    ends = [number for number, line in enumerate(lines) if line.startswith('{"type":"turn/end"')]
    path.write_text("".join(lines[: ends[turns - 1] + 1]), encoding="utf-8")
    return path


def shown_rows(app) -> list[str]:
    """The tree's rows as the screen shows them (the tree's part of each line, stripped)."""
    tree = app.screen.query_one(TrajectoryTree)
    return [line.strip() for line in text_in(screen_rows(app), tree.content_region).splitlines()]


async def test_the_trajectory_opens_on_the_latest_turn_with_its_requests_and_context_nodes_shown(session) -> None:
    """As a transcript or `less +G`: the latest turn expanded with its steps, the cursor on it;
    Home goes to the first row. Each turn's row starts its prompt."""
    async with TrajectoryApp(SessionFileSource.open(first_turns(session, 5))).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        tree = screen.query_one(TrajectoryTree)
        assert tree.cursor_node.label.plain == "Turn 5 · thanks"
        rows = shown_rows(pilot.app)
        latest = next(index for index, row in enumerate(rows) if row.endswith("Turn 5 · thanks"))
        below = rows[latest + 1 :]
        assert any(row.endswith("User: thanks") for row in below)
        assert any(row.endswith("ⓘ 8 tools removed") for row in below)
        assert any("Request 8 · offline/demo" in row for row in below)
        assert any(row.endswith("Turn 1 · hello") for row in rows[:latest])
        await pilot.press("home")
        assert tree.cursor_node.label.plain == "Turn 1 · hello"
        assert tree.cursor_line == 0


async def test_the_tree_starts_with_the_turns_and_builds_children_on_expand(session) -> None:
    async with TrajectoryApp(SessionFileSource.open(session)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        tree = screen.query_one(TrajectoryTree)
        assert [node.label.plain for node in tree.root.children] == TURNS
        # Lazy: only the latest turn, opened on, has its rows built.
        assert all(not node.children for node in tree.root.children[:-1])
        await pilot.press("home", "down", "space")
        await pilot.pause()
        assert tree_labels(pilot.app)[1:5] == [TURNS[1], "User: use calculate on 6*7", "Step 1", "Step 2"]
        await pilot.press("down", "down", "space", "down")
        await pilot.pause()
        assert isinstance(subject_of(screen), ContextItem)
        detail = screen.query_one(TrajectoryDetail)
        await until(pilot, lambda: '"kind": "context"' in detail.content.plain)
        assert '"name": "calculate"' in detail.content.plain
        await pilot.press("down")
        assert isinstance(subject_of(screen), AssistantItem)
        assert screen.selected_request is not None and screen.selected_request.index == 2


async def test_every_tool_change_expands_to_each_tool_with_its_source_and_description(session) -> None:
    async with TrajectoryApp(SessionFileSource.open(session)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        tree = screen.query_one(TrajectoryTree)
        expected = {
            "ⓘ 1 tool added, 1 removed": [
                "+ lab__late · MCP server lab · Appears after swap_tools; doubles n.",
                "− lab__echo · MCP server lab · Return the text unchanged.",
            ],
            "ⓘ Tool added: calculate": ["+ calculate · plugin calculator · Evaluate an arithmetic expression"],
            "ⓘ 2 tools added": ["+ current_time · plugin clock · Get the current date", "+ convert_time · plugin clock"],
            "ⓘ 8 tools removed": [  # in the server's tools' order: sorted by their names
                "− lab__crash · MCP server lab · Exit the process without answering.",
                *["− lab__"] * 6,
                "− lab__swap_tools · MCP server lab · Add `late`, remove `echo`",
            ],
        }
        for summary, lines in expected.items():
            change = next(e for e in screen.model.entries if entry_label(e).plain == summary)
            assert screen.go_to(change)
            assert tree.cursor_node.allow_expand and not tree.cursor_node.children
            await pilot.press("space")
            await pilot.pause()
            shown = [child.label.plain for child in tree.cursor_node.children]
            assert len(shown) == len(lines) and all(
                label.startswith(line) for label, line in zip(shown, lines, strict=True)
            ), shown
            assert all(isinstance(child.data, Part) for child in tree.cursor_node.children)


async def test_the_mouse_expands_and_selects(session) -> None:
    async with TrajectoryApp(SessionFileSource.open(session)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        tree = screen.query_one(TrajectoryTree)
        await pilot.click(TrajectoryTree, offset=(1, 2))  # the ▶ of Turn 3
        await pilot.pause()
        assert tree.root.children[2].is_expanded
        await pilot.click(TrajectoryTree, offset=(8, 3))  # the row below it: its user message
        await pilot.pause()
        assert isinstance(subject_of(screen), UserItem)



def expandable_below(node) -> list:
    """Every built node under `node` (itself included) that expands."""
    found, pending = [], [node]
    while pending:
        current = pending.pop()
        if current.allow_expand:
            found.append(current)
        pending.extend(current.children)
    return found


async def test_shift_space_expands_everything_below_the_cursor_and_collapses_it_again(session) -> None:
    async with TrajectoryApp(SessionFileSource.open(session)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        tree = screen.query_one(TrajectoryTree)
        await pilot.press("home", "down", "down", "down", "shift+space")  # Turn 4, built only now
        await pilot.pause()
        turn = tree.root.children[3]
        below = expandable_below(turn)
        assert len(below) > 3 and all(node.is_expanded for node in below)
        assert any(isinstance(node.data, Part) for node in turn.children[-1].children) or any(
            isinstance(child.data, Part) for node in below for child in node.children
        )
        assert tree_labels(pilot.app)[4] != TURNS[4]  # its rows show between turns 4 and 5
        await pilot.press("asterisk")  # the same, on terminals that send Shift+Space as Space
        await pilot.pause()
        assert not any(node.is_expanded for node in expandable_below(turn))
        assert tree_labels(pilot.app)[:6] == TURNS
        await pilot.press("space")  # expanding it again shows one level, as it did before
        await pilot.pause()
        assert all(not node.is_expanded for node in expandable_below(turn) if node is not turn)


# --- search --------------------------------------------------------------------------------------


async def test_search_finds_a_hit_inside_an_unexpanded_turn_and_n_walks_the_hits(session) -> None:
    async with TrajectoryApp(SessionFileSource.open(session)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        tree = screen.query_one(TrajectoryTree)
        tree.root.children[5].collapse()  # the latest turn, opened on
        await pilot.pause()
        assert not any(node.is_expanded for node in tree.root.children)
        await search(pilot, "overloaded")
        # Only the failed provider said so: inside turn 6, which nobody expanded.
        first = subject_of(screen)
        assert isinstance(first, RequestErrorItem) and first.failure.message.endswith("The service is overloaded")
        assert tree.root.children[5].is_expanded
        assert "match 1 of" in str(screen.query_one("#trajectory-title").render())
        await pilot.press("n")
        second = subject_of(screen)
        assert second is not first and "overloaded" in str(second).lower()
        await pilot.press("N")
        assert subject_of(screen) is first
        await search(pilot, "no such words")
        assert "no match" in str(screen.query_one("#trajectory-title").render())
        assert subject_of(screen) is first


async def test_a_tool_result_hit_opens_its_call(session) -> None:
    async with TrajectoryApp(SessionFileSource.open(session)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await search(pilot, "swapped")
        hit = subject_of(screen)
        assert isinstance(hit, ToolResultItem) and hit.content == "swapped"
        tree = screen.query_one(TrajectoryTree)
        assert isinstance(tree.cursor_node.parent.data.subject, ToolCallItem)


def marked_rows(app) -> list[tuple[str, list[str]]]:
    """Each of the tree's rows on the screen but the cursor's (which shows the cursor instead) with
    the words a search marked in it: the cells on another background than the row's (the theme
    gives the match style's yellow its own shade)."""
    tree = app.screen.query_one(TrajectoryTree)
    region = tree.content_region
    cursor = region.y + tree.cursor_line - tree.scroll_offset.y
    rows = []
    for y, row in enumerate(screen_rows(app)[region.y : region.bottom], region.y):
        if y == cursor:
            continue
        cells = [(char, style.bgcolor if style else None) for char, style in row[region.x : region.right]]
        (background, _count), *_ = Counter(bgcolor for _char, bgcolor in cells).most_common(1)
        marks = "".join(char if bgcolor != background else " " for char, bgcolor in cells)
        rows.append(("".join(char for char, _bgcolor in cells), marks.split()))
    return rows


async def test_the_search_words_are_marked_in_the_tree_and_the_list(session) -> None:
    async with TrajectoryApp(SessionFileSource.open(session)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await search(pilot, "NOPE")
        await pilot.press("home")  # off the match: the cursor's row shows the cursor, not the marks
        await pilot.pause()
        rows = marked_rows(pilot.app)
        shown = [words for text, words in rows if "nope" in text]
        assert shown and all(words == ["nope"] for words in shown)
        assert not any(words for text, words in rows if "nope" not in text)
        await pilot.press("v", "home")
        await pilot.pause()
        flat = screen.query_one(TrajectoryList)
        row = next(index for index, entry in enumerate(flat.rows) if "nope" in entry_label(entry).plain)
        assert row != flat.cursor
        strip = flat.render_line(row - flat.scroll_offset.y)
        assert [segment.text for segment in strip if segment.style and segment.style.bgcolor and segment.style.bgcolor.name == "yellow"] == ["nope"]
        await pilot.press("v", "slash", *["backspace"] * 4, "enter")  # an empty search
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert not any(words for _text, words in marked_rows(pilot.app))


# --- filters and jumps ---------------------------------------------------------------------------


async def test_the_presets_cycle_with_one_key_and_the_kinds_menu_toggles_one_kind(session) -> None:
    async with TrajectoryApp(SessionFileSource.open(session)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await pilot.press("f")
        assert screen.kinds == PRESETS[1].kinds
        await pilot.press("v")
        rows = screen.query_one(TrajectoryList).rows
        assert rows and all(isinstance(row.subject, ContextItem) for row in rows)
        await pilot.press("f", "f")
        rows = screen.query_one(TrajectoryList).rows
        assert {type(row.subject) for row in rows} == {RequestErrorItem, ToolResultItem, RetryItem}
        await pilot.press("f", "f", "f")  # everything, cache breaks, and round to the first
        assert screen.kinds == PRESETS[0].kinds
        await pilot.press("k")
        await until(pilot, lambda: isinstance(pilot.app.screen, KindsScreen))
        # The first kind is "Turn starts": Space takes it out; Escape applies.
        await pilot.press("space", "escape")
        await until(pilot, lambda: pilot.app.screen is screen)
        assert screen.kinds == PRESETS[0].kinds - {"turn"}
        assert "filter: custom" in str(screen.query_one("#trajectory-title").render())
        assert not any(isinstance(row.subject, Turn) for row in screen.query_one(TrajectoryList).rows)


async def test_jumps_go_to_the_next_request_context_node_and_error(session) -> None:
    async with TrajectoryApp(SessionFileSource.open(session)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await pilot.press("home", "r")
        assert screen.selected_request.index == 1
        await pilot.press("r")
        assert screen.selected_request.index == 2
        await pilot.press("c")
        context = subject_of(screen)
        assert isinstance(context, ContextItem) and "ⓘ 2 tools added" == entry_label(screen.current_entry).plain
        await pilot.press("C")
        assert entry_label(screen.current_entry).plain == "ⓘ Tool added: calculate"
        await pilot.press("e")
        error = subject_of(screen)
        assert isinstance(error, ToolResultItem) and error.is_error
        await pilot.press("e")
        failed = subject_of(screen)
        assert isinstance(failed, RequestErrorItem)
        await pilot.press("v", "e")  # the same jumps in the flat list
        again = subject_of(screen)
        assert screen.flat and isinstance(again, RequestErrorItem) and again.seq > failed.seq
        await pilot.press("e")
        assert subject_of(screen) is again  # nothing further: the cursor stays


async def test_i_inspects_the_request_under_the_cursor_and_escape_comes_back(session) -> None:
    async with TrajectoryApp(SessionFileSource.open(session)).run_test(size=(160, 45)) as pilot:
        screen = await opened(pilot)
        await pilot.press("home", "r", "r", "r")
        chosen = screen.selected_request
        assert chosen is not None and chosen.index == 3
        await pilot.press("i")
        await until(pilot, lambda: isinstance(pilot.app.screen, InspectorScreen))
        inspector = pilot.app.screen
        await until(pilot, lambda: inspector.report is not None)
        # The report of that request, for every route of the catalog, not the latest request.
        assert inspector.report.request.index == 3 and not inspector.following
        assert {route.route.id for route in inspector.report.routes} == {route.id for route in pilot.app.catalog}
        await pilot.press("n")
        assert inspector.report.request.index == 4
        await pilot.press("escape")
        await until(pilot, lambda: pilot.app.screen is screen)
        assert screen.selected_request.index == 3


# --- the flat list -------------------------------------------------------------------------------


async def test_the_flat_list_pages_and_draws_only_the_rows_on_screen(tmp_path, monkeypatch) -> None:
    path = tmp_path / "large.jsonl"
    write_large_session(path, events=20_000)
    drawn: list[int] = []
    labels = flat_list.entry_label

    def counting(entry, marks=None):
        drawn.append(entry.seq)
        return labels(entry, marks)

    monkeypatch.setattr(flat_list, "entry_label", counting)
    async with TrajectoryApp(SessionFileSource.open(path)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await pilot.press("v", "home")
        await pilot.pause()
        flat = screen.query_one(TrajectoryList)
        height = flat.scrollable_content_region.height
        assert len(flat.rows) > 10_000
        drawn.clear()
        for _page in range(5):
            await pilot.press("pagedown")
        await pilot.pause()
        assert flat.cursor == 5 * (height - 1)
        assert flat.scroll_offset.y <= flat.cursor < flat.scroll_offset.y + height
        await pilot.press("end")
        await pilot.pause()
        assert flat.cursor == len(flat.rows) - 1
        await pilot.press("up", "home")
        await pilot.pause()
        assert flat.cursor == 0 and flat.scroll_offset.y == 0
        # Paging through five screens and to both ends drew a few screens of rows, not the list.
        assert len(drawn) < 20 * height


async def test_the_flat_list_follows_the_cursor_across_modes(session) -> None:
    async with TrajectoryApp(SessionFileSource.open(session)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await pilot.press("c", "c")
        context = screen.current_entry
        await pilot.press("v")
        assert screen.flat and screen.current_entry is context
        flat = screen.query_one(TrajectoryList)
        flat.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        await pilot.click(TrajectoryList, offset=(10, 3))
        await pilot.pause()
        assert subject_of(screen) is flat.rows[3].subject and isinstance(subject_of(screen), Turn)
        await pilot.press("down", "v")
        assert not screen.flat and isinstance(subject_of(screen), UserItem)


# --- text from the session -----------------------------------------------------------------------


async def test_hostile_text_is_shown_literally(tmp_path) -> None:
    path = write_session(crafted_log(), tmp_path / "sessions")
    async with TrajectoryApp(SessionFileSource.open(path)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await pilot.press("v")
        labels = [entry_label(row).plain for row in screen.query_one(TrajectoryList).rows]
        hostile = [label for label in labels if "[bold red]rich[/]" in label]
        assert hostile and all("\x1b" not in label and "\u202e" not in label for label in labels)
        rows = screen.query_one(TrajectoryList).rows
        screen.go_to(next(row for row in rows if "[bold red]" in entry_label(row).plain and not isinstance(row.subject, Turn)))
        await until(pilot, lambda: "[bold red]" in screen.query_one(TrajectoryDetail).content.plain)
        detail = screen.query_one(TrajectoryDetail).content.plain
        assert "[bold red]rich[/]" in detail and "\x1b" not in detail and "\\u202e" in detail
        assert HOSTILE.split()[0] in detail


# --- the command ---------------------------------------------------------------------------------


def _toolscope(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("LC_ALL", "LC_MESSAGES", "LANG")}
    env.update(TOOLSCOPE_HOME=str(home), LANG="C.UTF-8")
    return subprocess.run([str(TOOLSCOPE), *args], capture_output=True, text=True, env=env, timeout=60)


def test_an_unknown_session_or_a_file_that_is_no_session_is_one_line(tmp_path) -> None:
    result = _toolscope(tmp_path, "view", "no-such-session")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "toolscope: error: no session no-such-session (neither a session id nor a file)\n"
    other = tmp_path / "notes.jsonl"
    other.write_text('{"hello": "world"}\n')
    result = _toolscope(tmp_path, "view", str(other))
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"toolscope: error: {other}:1: ") and "Traceback" not in result.stderr


async def test_a_corrupt_event_is_reported_in_the_trajectory_with_its_line(session) -> None:
    lines = session.read_text().splitlines(keepends=True)
    lines[5] = '{"type": "user/message", "seq": 5, "time": 1, "data": {}}\n'
    session.write_text("".join(lines))
    async with TrajectoryApp(SessionFileSource.open(session)).run_test(size=SIZE) as pilot:
        screen = pilot.app.screen
        await until(pilot, lambda: "Cannot open" in str(screen.query_one("#trajectory-loading").render()))
        assert f"{session}:6:" in str(screen.query_one("#trajectory-loading").render())


async def test_a_log_that_breaks_an_invariant_is_shown_and_validation_reports_its_line(session) -> None:
    """Every line parses, so the trajectory paints before the strict validation behind it ends;
    then the broken invariant is said with its file and line, and what is shown stays."""
    lines = session.read_text().splitlines(keepends=True)
    lines[6] = lines[6].replace('"step":1', '"step":7')  # step/end of a step that is not open
    session.write_text("".join(lines))
    async with TrajectoryApp(SessionFileSource.open(session)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        title = screen.query_one("#trajectory-title")
        await until(pilot, lambda: "corrupt" in str(title.render()))
        assert f"{session}:7: step/end names turn 1 step 7" in str(title.render())
        assert tree_labels(pilot.app)[0] == TURNS[0]
        await pilot.press("home", "r")
        assert screen.selected_request.index == 1


async def test_a_valid_log_ends_its_validation_with_no_note(session) -> None:
    async with TrajectoryApp(SessionFileSource.open(session)).run_test(size=SIZE) as pilot:
        screen = await opened(pilot)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert SessionFileSource.open(session).session.validated is False  # a fresh one has not
        assert screen.source.session.validated
        assert "validating" not in str(screen.query_one("#trajectory-title").render())


async def test_without_a_session_the_picker_opens_it_and_escape_comes_back(session) -> None:
    from app.session.listing import list_sessions

    summaries = list_sessions(session.parent)
    async with TrajectoryApp(None, summaries).run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(pilot.app.screen, TrajectorySessionPicker))
        await pilot.pause()
        await pilot.press("enter")
        screen = await opened(pilot)
        assert screen.source.session_id == SESSION_ID
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(pilot.app.screen, TrajectorySessionPicker))


# --- live, over the chat -------------------------------------------------------------------------


async def test_the_trajectory_over_the_chat_follows_a_turn_as_it_runs(tmp_path, monkeypatch) -> None:
    bench = make_bench(tmp_path, monkeypatch)
    app = bench.app()
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "hello")
        await pilot.press("ctrl+l")
        screen = await opened(pilot)
        tree = screen.query_one(TrajectoryTree)
        turn_one = tree.root.children[0]
        assert turn_one.is_expanded and tree.cursor_node is turn_one  # opened on the latest turn
        assert tree_labels(app)[:2] == ["Turn 1 · hello", "User: hello"]
        # A turn that stops half-way: write_file waits for the user's approval.
        prompt = 'use write_file with {"path": "notes.md", "content": "hi"}'
        from app.ui.messages import PromptSubmitted

        app.post_message(PromptSubmitted(prompt))
        await until(
            pilot,
            lambda: any(isinstance(e.subject, AssistantItem) and e.subject.tool_calls for e in screen.model.entries),
        )
        await until(pilot, lambda: len(tree.root.children) == 2)
        assert tree.root.children[0] is turn_one and turn_one.is_expanded  # appended, not rebuilt
        assert app.turn_running
        await until(pilot, lambda: bool(app.chat.query(ApprovalPrompt)))
        app.chat.query_one(ApprovalPrompt).action_answer("deny")
        await until(pilot, lambda: not app.turn_running)
        await settle(pilot)
        turn_two = tree.root.children[1]
        assert tree.root.children[0] is turn_one
        assert turn_two.label.plain.startswith("Turn 2 · use write_file with")  # its prompt, come after it
        turn_two.expand()
        await pilot.pause()
        step = turn_two.children[-1]
        step.expand()
        await pilot.pause()
        results = [e for e in screen.model.entries if isinstance(e.subject, ToolResultItem)]
        assert results and results[-1].subject.error.code == "APPROVAL_DENIED"
        await pilot.press("escape")
        await until(pilot, lambda: pilot.app.screen is app.chat)


async def test_the_palette_opens_it_and_a_compaction_and_its_new_sequence_appear_live(tmp_path, monkeypatch) -> None:
    from app.ui.messages import PromptSubmitted
    from tests.functional.ui.chat_support import type_text

    bench = make_bench(tmp_path, monkeypatch)
    app = bench.app()
    async with app.run_test(size=SIZE) as pilot:
        await send(pilot, "hello")
        await pilot.press("ctrl+p")
        await type_text(pilot, "Trajectory")
        await pilot.press("enter")
        screen = await opened(pilot)
        app.action_compact()
        await until(pilot, lambda: any(isinstance(e.subject, SummaryItem) for e in screen.model.entries))
        await until(pilot, lambda: not app.turn_running)
        app.post_message(PromptSubmitted("thanks"))
        await until(pilot, lambda: any("sequence" in e.kinds for e in screen.model.entries))
        await until(pilot, lambda: not app.turn_running)
        await settle(pilot)
        await pilot.press("v")
        labels = [entry_label(row).plain for row in screen.query_one(TrajectoryList).rows]
        assert any(label.startswith("Compaction (sequence 1): ") for label in labels)
        assert any(label.startswith("═ New projection sequence 1 · offline/demo") for label in labels)
        assert labels.index(next(l for l in labels if l.startswith("Compaction"))) < labels.index(
            next(l for l in labels if l.startswith("═ New projection"))
        )


async def test_a_file_chosen_in_the_picker_that_turns_out_unreadable_is_reported_and_escape_goes_back(tmp_path) -> None:
    from app.session.listing import list_sessions

    path = trajectory_session(tmp_path / "home")
    summaries = list_sessions(path.parent)
    path.write_text('{"not": "a session"}\n')
    async with TrajectoryApp(None, summaries).run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(pilot.app.screen, TrajectorySessionPicker))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(pilot.app.screen, TrajectoryScreen))
        screen = pilot.app.screen
        await until(pilot, lambda: "Cannot open the session" in str(screen.query_one("#trajectory-loading").render()))
        assert f"{path}:1:" in str(screen.query_one("#trajectory-loading").render())
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(pilot.app.screen, TrajectorySessionPicker))


async def test_the_palette_exports_the_session_being_browsed(session, tmp_path, monkeypatch) -> None:
    import json

    from app.export.view_json import view_json
    from app.session.session import Session
    from tests.functional.ui.test_export_dialog import accept_offered_path
    from tests.functional.ui.test_inspector import exported, palette

    monkeypatch.chdir(tmp_path)
    target = tmp_path / f"toolscope-{SESSION_ID}.json"
    told = Told()
    async with TrajectoryApp(SessionFileSource.open(session)).run_test(size=SIZE, message_hook=told) as pilot:
        await opened(pilot)
        await palette(pilot, "Export as JSON")
        await accept_offered_path(pilot, "JSON")
        await until(pilot, lambda: exported(told))
        assert exported(told) == [f"Exported as JSON to {target}"]
    data = json.loads(target.read_text())
    # The session view, with each request's cache diagnostic per route and the cost per route.
    assert data.pop("cost")["routes"] and all(request.pop("cache") for request in data["requests"])
    assert data == json.loads(json.dumps(view_json(Session.open(session).view())))


async def test_exporting_from_the_picker_asks_for_a_session_first(session, tmp_path, monkeypatch) -> None:
    from app.session.listing import list_sessions
    from tests.functional.ui.test_inspector import palette

    monkeypatch.setenv("TOOLSCOPE_HOME", str(session.parent.parent))
    monkeypatch.chdir(tmp_path)
    told = Told()
    async with TrajectoryApp(None, list_sessions()).run_test(size=SIZE, message_hook=told) as pilot:
        await until(pilot, lambda: isinstance(pilot.app.screen, TrajectorySessionPicker))
        await palette(pilot, "Export as JSON")
        await until(pilot, told.notes)
        notes = told.notes()
    assert notes == ["Open a session first: the export is of the session being browsed."]
    assert not list(tmp_path.glob("toolscope-*"))

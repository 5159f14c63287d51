"""The store and its writer: creation, modes, appends, locking, torn tails, crash repair, forks, durability."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app.session.errors import SessionLockedError, SessionNotFoundError
from app.session.events import ParentRef, ToolCallData, TurnStartData, encode_event
from app.session.invariants import InvalidEventError
from app.session.session import Session
from app.session.store import SessionStore, SessionWriter

REPO_ROOT = Path(__file__).resolve().parents[3]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def run_python(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )


# --- creating and appending ------------------------------------------------------------------------


def test_create_writes_a_private_header_only_file(tmp_path) -> None:
    store = SessionStore(tmp_path / "sessions")

    with store.create(tmp_path / "project") as writer:
        path = writer.path

    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", writer.id)
    assert path == store.path_for(writer.id)
    assert mode(path) == 0o600 and mode(store.directory) == 0o700
    session = Session.open(path)
    assert session.header.cwd == str(tmp_path / "project")
    assert session.header.parent is None and session.events == ()
    assert path.read_bytes().startswith(b'{"type":"session","version":1,')


def test_modes_hold_under_a_permissive_umask(tmp_path, logs) -> None:
    previous = os.umask(0)
    try:
        store = SessionStore(tmp_path / "home" / "data" / "sessions")
        with store.create(tmp_path) as writer:
            writer.append("turn/start", {"turn": 1})
        with writer.path.open("ab") as handle:
            handle.write(b'{"type":"turn/en')
        with store.open_writer(writer.id) as reopened:
            torn_path = reopened.torn_path
    finally:
        os.umask(previous)

    for directory in (tmp_path / "home", tmp_path / "home" / "data", store.directory):
        assert mode(directory) == 0o700, directory
    assert mode(writer.path) == 0o600
    assert torn_path is not None and mode(torn_path) == 0o600


def test_append_assigns_contiguous_seq_and_writes_type_first_lines(tmp_path) -> None:
    store = SessionStore(tmp_path / "sessions")
    with store.create(tmp_path) as writer:
        first = writer.append("turn/start", TurnStartData(turn=1))
        second = writer.append("user/message", {"text": "hi", "id": "u1"})  # key order does not matter

    lines = writer.path.read_bytes().splitlines(keepends=True)[1:]
    assert (first.seq, second.seq) == (0, 1)
    assert isinstance(second.time, int) and second.time >= first.time
    assert lines == [encode_event(first), encode_event(second)]
    assert all(line.startswith(b'{"type":"') for line in lines)  # the writer's own spelling: compact, `type` first
    assert Session.open(writer.path).events == writer.session.events == (first, second)


@pytest.mark.parametrize(
    ("type_", "data", "reason"),
    [
        ("tool/call", {"turn": 1, "step": 1, "callId": "", "name": "read", "arguments": "{}"},
         "data.callId: must not be empty"),
        ("tool/call", ToolCallData.model_construct(turn=1, step=1, call_id="", name="read", arguments="{}"),
         "data.callId: must not be empty"),
        ("tool/result", {"turn": 1, "step": 1, "callId": "", "name": "read", "content": "", "isError": False},
         "data.callId: must not be empty"),
        ("tool/result", {"turn": 1, "step": 1, "callId": "c9", "name": "read", "content": "", "isError": False},
         "tool/result answers callId 'c9', which has no earlier tool/call"),
        ("step/start", {"turn": 2, "step": 1}, "step/start names turn 2, but turn 1 is open"),
        ("step/start", TurnStartData(turn=1), "data.step: required key is missing"),
        ("tool/progress", {}, "unknown event type 'tool/progress'"),
        ("session", {}, "unknown event type 'session'"),
    ],
)
def test_invalid_events_are_refused_and_nothing_is_written(tmp_path, type_, data, reason) -> None:
    store = SessionStore(tmp_path / "sessions")
    with store.create(tmp_path) as writer:
        writer.append("turn/start", {"turn": 1})
        writer.append("step/start", {"turn": 1, "step": 1})
        before = writer.path.read_bytes()

        with pytest.raises(InvalidEventError) as caught:
            writer.append(type_, data)

        assert isinstance(caught.value, ValueError)
        assert caught.value.reason == reason
        assert writer.path.read_bytes() == before
        assert writer.append("step/end", {"turn": 1, "step": 1}).seq == 2


def test_a_closed_writer_refuses_appends(tmp_path) -> None:
    writer = SessionStore(tmp_path / "sessions").create(tmp_path)
    writer.close()
    writer.close()

    assert writer.closed
    with pytest.raises(ValueError, match="closed"):
        writer.append("turn/start", {"turn": 1})


# --- resolving -------------------------------------------------------------------------------------------


def test_resolve_by_id_or_path(tmp_path) -> None:
    store = SessionStore(tmp_path / "sessions")
    with store.create(tmp_path) as writer:
        pass

    assert store.resolve(writer.id) == writer.path
    assert store.resolve(str(writer.path)) == writer.path
    assert store.resolve(writer.path) == writer.path
    assert store.paths() == [writer.path]
    with pytest.raises(SessionNotFoundError):
        store.resolve("20000101-000000-000000")
    with pytest.raises(ValueError):
        store.path_for("../escape")


# --- torn tails and unterminated lines --------------------------------------------------------------------


def test_writer_sets_torn_tails_aside_into_numbered_files(logs) -> None:
    first_torn, second_torn = b'{"type":"user/message","seq":9,"ti', b'{"type":"turn/st\xe2'
    path = logs.write("s", logs.completed_turn(), tail=first_torn)
    complete_size = path.stat().st_size - len(first_torn)
    store = SessionStore(logs.directory)

    with store.open_writer("s") as writer:
        assert writer.torn_path == logs.directory / "s.jsonl.torn-1"
        assert writer.torn_path.read_bytes() == first_torn
        assert mode(writer.torn_path) == 0o600
        assert path.stat().st_size == complete_size
        assert writer.repaired == ()
        writer.append("turn/start", {"turn": 2})
    with path.open("ab") as handle:
        handle.write(second_torn)
    with store.open_writer("s") as writer:
        assert writer.torn_path == logs.directory / "s.jsonl.torn-2"
        assert writer.torn_path.read_bytes() == second_torn

    assert (logs.directory / "s.jsonl.torn-1").read_bytes() == first_torn
    assert Session.open(path).torn is None
    assert [event.type for event in Session.open(path).events[9:]] == ["turn/start", "turn/end"]


def test_writer_adds_a_missing_final_newline(logs) -> None:
    lines = logs.completed_turn()
    path = logs.write("s", lines[:-1], tail=lines[-1])

    with SessionStore(logs.directory).open_writer("s") as writer:
        assert writer.torn_path is None
        event = writer.append("turn/start", {"turn": 2})

    assert path.read_bytes().endswith(lines[-1] + b"\n" + encode_event(event))


# --- crash repair --------------------------------------------------------------------------------------------


def open_turn_lines(logs, *tail: bytes) -> list[bytes]:
    """A completed turn 1, then turn 2 open with step 1 open, then `tail`."""
    return [
        *logs.completed_turn(),
        logs.line("turn/start", 9, {"turn": 2}),
        logs.line("user/message", 10, {"id": "u2", "text": "again"}),
        logs.line("step/start", 11, {"turn": 2, "step": 1}),
        *tail,
    ]


def two_calls(logs) -> bytes:
    content = [{"type": "text", "text": "Reading both."}, logs.call_content("c2"), logs.call_content("c3", "grep")]
    return logs.line("assistant/message", 12, logs.assistant(2, 1, content))


def summary(events) -> list[tuple]:
    rows = []
    for event in events:
        data = event.data
        error = getattr(data, "error", None)
        rows.append((event.type, getattr(data, "call_id", None), error.code if error else None))
    return rows


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        pytest.param(
            [two_calls],
            [
                ("tool/call", "c2", None), ("tool/result", "c2", "TOOL_NOT_STARTED"),
                ("tool/call", "c3", None), ("tool/result", "c3", "TOOL_NOT_STARTED"),
                ("step/end", None, None), ("turn/end", None, None),
            ],
            id="calls never started",
        ),
        pytest.param(
            [two_calls, lambda logs: logs.line("tool/call", 13, logs.call(2, 1, "c2"))],
            [
                ("tool/result", "c2", "TOOL_OUTCOME_UNKNOWN"),
                ("tool/call", "c3", None), ("tool/result", "c3", "TOOL_NOT_STARTED"),
                ("step/end", None, None), ("turn/end", None, None),
            ],
            id="one started without result, one never started",
        ),
        pytest.param(
            [
                two_calls,
                lambda logs: logs.line("tool/call", 13, logs.call(2, 1, "c2")),
                lambda logs: logs.line("tool/result", 14, logs.result(2, 1, "c2")),
                lambda logs: logs.line("tool/call", 15, logs.call(2, 1, "c3", "grep")),
            ],
            [("tool/result", "c3", "TOOL_OUTCOME_UNKNOWN"), ("step/end", None, None), ("turn/end", None, None)],
            id="started call without result",
        ),
        pytest.param([], [("step/end", None, None), ("turn/end", None, None)], id="open step, no assistant message"),
    ],
)
def test_writer_closes_a_turn_left_open_by_a_crash(logs, tail, expected) -> None:
    path = logs.write("s", open_turn_lines(logs, *(make(logs) for make in tail)))
    store = SessionStore(logs.directory)

    with store.open_writer("s") as writer:
        repaired = writer.repaired

    assert summary(repaired) == expected
    assert repaired[0].seq == 12 + len(tail)
    assert repaired[-1].data.turn == 2 and repaired[-1].data.reason == "interrupted"
    assert all(event.data.turn == 2 for event in repaired)
    not_started = [event for event in repaired if event.type == "tool/call"]
    assert all(event.data.arguments == '{"path":"README.md"}' for event in not_started)
    assert Session.open(path).events[-len(repaired):] == repaired
    with store.open_writer("s") as writer:
        assert writer.repaired == ()


def test_open_turn_without_step_gets_only_turn_end(logs) -> None:
    logs.write("s", [*logs.completed_turn(), logs.line("turn/start", 9, {"turn": 2})])

    with SessionStore(logs.directory).open_writer("s") as writer:
        assert summary(writer.repaired) == [("turn/end", None, None)]


# --- locking -------------------------------------------------------------------------------------------------


def test_a_second_writer_in_this_process_is_refused(tmp_path) -> None:
    store = SessionStore(tmp_path / "sessions")
    with store.create(tmp_path) as writer:
        writer.append("turn/start", {"turn": 1})

        with pytest.raises(SessionLockedError) as caught:
            store.open_writer(writer.id)

        message = str(caught.value)
        assert str(writer.path) in message
        assert "open for writing elsewhere" in message and "read-only" in message
        assert len(Session.open(writer.path).events) == 1
        writer.append("step/start", {"turn": 1, "step": 1})

    with store.open_writer(writer.id) as reopened:
        assert [event.type for event in reopened.repaired] == ["step/end", "turn/end"]


LOCK_PROBE = """
    import sys
    from pathlib import Path
    from app.session.errors import SessionLockedError
    from app.session.session import Session
    from app.session.store import SessionStore

    store = SessionStore(Path(sys.argv[1]))
    print(len(Session.open(store.path_for(sys.argv[2])).events))
    try:
        store.open_writer(sys.argv[2]).close()
    except SessionLockedError as error:
        print(error)
        sys.exit(3)
"""


def test_a_writer_in_another_process_is_refused(tmp_path) -> None:
    store = SessionStore(tmp_path / "sessions")
    with store.create(tmp_path) as writer:
        writer.append("turn/start", {"turn": 1})

        probe = run_python(LOCK_PROBE, str(store.directory), writer.id)

        assert probe.returncode == 3, probe.stderr
        count, message = probe.stdout.splitlines()
        assert count == "1"
        assert message.startswith(f"{writer.path}: ") and "read-only" in message

    assert run_python(LOCK_PROBE, str(store.directory), writer.id).returncode == 0


# --- forks -----------------------------------------------------------------------------------------------------


def test_fork_inherits_up_to_seq_and_continues_the_numbering(tmp_path, logs) -> None:
    logs.write("p", logs.completed_turn())
    store = SessionStore(logs.directory)

    with store.fork("p", 8) as child:
        assert child.header.parent == ParentRef(id="p", seq=8)
        assert child.header.cwd == "/work"
        assert child.append("turn/start", {"turn": 2}).seq == 9
        child.append("turn/end", {"turn": 2, "reason": "aborted"})
    with store.open_writer("p") as parent:
        parent.append("turn/start", {"turn": 2})
        parent.append("user/message", {"id": "later", "text": "not inherited"})
    with store.fork(child.id) as grandchild:
        assert grandchild.header.parent == ParentRef(id=child.id, seq=10)
        grandchild.append("user/message", {"id": "g", "text": "grandchild"})

    events = Session.open(grandchild.path).events
    assert [event.seq for event in events] == list(range(12))
    assert [event.type for event in events[8:]] == ["turn/end", "turn/start", "turn/end", "user/message"]
    assert events[-1].data.id == "g"
    assert Session.open(child.path).events == events[:11]


def test_fork_in_the_middle_of_a_turn_closes_it_in_the_child(logs) -> None:
    logs.write("p", logs.completed_turn())

    with SessionStore(logs.directory).fork("p", 4) as child:
        repaired = summary(child.repaired)

    assert repaired == [
        ("tool/call", "c1", None), ("tool/result", "c1", "TOOL_NOT_STARTED"),
        ("step/end", None, None), ("turn/end", None, None),
    ]
    assert len(Session.open(logs.directory / "p.jsonl").events) == 9


def test_fork_and_create_refuse_a_missing_fork_point(tmp_path, logs) -> None:
    logs.write("p", logs.completed_turn())
    logs.write("empty", [])
    store = SessionStore(logs.directory)

    with pytest.raises(ValueError, match=r"events are 0\.\.8"):
        store.fork("p", 9)
    with pytest.raises(ValueError, match="no events"):
        store.fork("empty")
    with pytest.raises(ValueError, match=r"events are 0\.\.8"):
        store.create(tmp_path, ParentRef(id="p", seq=12))
    with pytest.raises(SessionNotFoundError):
        store.create(tmp_path, ParentRef(id="missing", seq=0))
    assert sorted(path.name for path in logs.directory.glob("*.jsonl")) == ["empty.jsonl", "p.jsonl"]


def test_create_with_a_parent(tmp_path, logs) -> None:
    logs.write("p", logs.completed_turn())

    with SessionStore(logs.directory).create(tmp_path, ParentRef(id="p", seq=2)) as child:
        events = child.session.events

    assert [event.seq for event in events] == [0, 1, 2, 3, 4]
    assert [event.type for event in events[3:]] == ["step/end", "turn/end"]


# --- durability -----------------------------------------------------------------------------------------------


KILLED_WRITER = """
    import os, signal, sys
    from pathlib import Path
    from app.session.store import SessionStore

    writer = SessionStore(Path(sys.argv[1])).create("/work")
    print(writer.id, flush=True)
    count = int(sys.argv[2])
    for index in range(count - 5):
        writer.append("user/message", {"id": f"u{index}", "text": "x" * index}, commit=True)
    writer.append("turn/start", {"turn": 1}, commit=True)
    writer.append("step/start", {"turn": 1, "step": 1}, commit=True)
    call = {"type": "tool-call", "callId": "c1", "name": "read", "arguments": "{}"}
    writer.append("assistant/message", {"turn": 1, "step": 1, "route": "r", "model": "m",
                                        "content": [call], "finish": "tool-calls"})
    writer.append("tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "read", "arguments": "{}"})
    writer.append("llm/retry", {"turn": 1, "step": 1, "retry": 1, "maxRetries": 5, "delayMs": 500,
                                "failure": {"code": "SERVER", "message": "busy"}}, commit=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_committed_events_survive_a_killed_writer(tmp_path) -> None:
    store = SessionStore(tmp_path / "sessions")
    count = 60

    killed = run_python(KILLED_WRITER, str(store.directory), str(count))

    assert killed.returncode == -signal.SIGKILL, killed.stderr
    session_id = killed.stdout.strip()
    session = Session.open(store.path_for(session_id))
    assert session.torn is None
    assert [event.seq for event in session.events] == list(range(count))
    with store.open_writer(session_id) as writer:
        assert summary(writer.repaired) == [
            ("tool/result", "c1", "TOOL_OUTCOME_UNKNOWN"), ("step/end", None, None), ("turn/end", None, None),
        ]


def test_writer_session_stays_in_sync_with_the_file(tmp_path) -> None:
    store = SessionStore(tmp_path / "sessions")
    with store.create(tmp_path) as writer:
        writer.append("turn/start", {"turn": 1})
        history = writer.session.tool_history()
        writer.append("user/message", {"id": "u1", "text": "hi"})

        assert writer.session.tool_history().last_seq == history.last_seq + 1
        assert writer.session.events == Session.open(writer.path).events
        assert writer.next_seq == 2
        assert isinstance(writer, SessionWriter)

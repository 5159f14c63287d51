"""The reader: raw reading, torn tails, forks, lazy sessions and their incremental reductions."""

from __future__ import annotations

import pytest

from app.session.chain import open_chain
from app.session.errors import SessionCorruptionError
from app.session.events import RequestHeader, ToolCall, TurnEnd, TurnStart
from app.session.reader import EventLineError, decode_event_line
from app.session.session import Session
from app.session.store import SessionStore
from app.session.tool_history import ToolHistoryReducer


def test_reads_header_and_events_in_order(logs) -> None:
    path = logs.write("s", logs.completed_turn())

    session = Session.open(path)
    events = session.events
    chain = session.chain

    assert chain.header.id == "s" and chain.header.parent is None
    assert chain.torn is None
    assert [segment.path for segment in chain.segments] == [path]
    assert chain.segments[0].first_seq == 0 and chain.segments[0].limit is None
    assert chain.line_number(0) == (path, 2)
    assert [event.seq for event in events] == list(range(9))
    assert isinstance(events[0], TurnStart) and isinstance(events[-1], TurnEnd)
    assert isinstance(events[3], RequestHeader) and events[3].data.tools[1].name == "grep"


def test_torn_last_line_is_reported_not_raised_and_the_file_is_untouched(logs) -> None:
    torn = b'{"type":"turn/start","seq":9,"ti'
    path = logs.write("s", logs.completed_turn(), tail=torn)
    before = logs.digest()

    session = Session.open(path)

    assert session.torn is not None
    assert session.torn.data == torn
    assert session.torn.offset == path.stat().st_size - len(torn)
    assert len(session.events) == 9
    assert logs.digest() == before


def test_unterminated_but_complete_last_line_is_an_event(logs) -> None:
    lines = logs.completed_turn()
    path = logs.write("s", lines[:-1], tail=lines[-1])

    session = Session.open(path)

    assert session.torn is None
    assert isinstance(session.events[-1], TurnEnd)


def test_header_only_file_has_no_events(logs) -> None:
    path = logs.write("s", [])

    assert Session.open(path).events == ()


def test_child_reads_parent_events_up_to_its_fork_point_then_its_own(logs) -> None:
    logs.write("p", logs.completed_turn() + logs.completed_turn(9, turn=2, call_id="c2"))
    child = logs.write("c", logs.completed_turn(9, turn=2, call_id="c9"), parent={"id": "p", "seq": 8})
    grandchild = logs.write(
        "g", [logs.line("user/message", 16, {"id": "u", "text": "fork again"})], parent={"id": "c", "seq": 15}
    )

    child_events = Session.open(child).events
    grandchild_session = Session.open(grandchild)
    grandchild_events = grandchild_session.events

    assert [event.seq for event in child_events] == list(range(18))
    # The parent's own turn 2 (call c2) is past the fork point: not inherited.
    calls = [event.data.call_id for event in child_events if isinstance(event, ToolCall)]
    assert calls == ["c1", "c9"]
    segments = grandchild_session.chain.segments
    assert [segment.path.name for segment in segments] == ["p.jsonl", "c.jsonl", "g.jsonl"]
    assert [segment.limit for segment in segments] == [8, 15, None]
    assert grandchild_session.chain.line_number(12) == (segments[1].path, 5)
    assert [event.seq for event in grandchild_events] == list(range(17))


def test_fork_point_before_the_parents_own_events_inherits_only_the_grandparent(logs) -> None:
    logs.write("p", logs.completed_turn())
    logs.write("c", logs.completed_turn(9, turn=2), parent={"id": "p", "seq": 8})
    grandchild = logs.write("g", [], parent={"id": "c", "seq": 4})

    events = Session.open(grandchild).events

    assert [event.seq for event in events] == [0, 1, 2, 3, 4]


def test_custom_parent_resolver(logs, tmp_path) -> None:
    elsewhere = tmp_path / "archive"
    elsewhere.mkdir()
    (elsewhere / "p.jsonl").write_bytes(logs.header("p") + b"\n" + b"\n".join(logs.completed_turn()) + b"\n")
    child = logs.write("c", [], parent={"id": "p", "seq": 8})

    chain = open_chain(child, resolve_parent=lambda parent_id: elsewhere / f"{parent_id}.jsonl")

    assert chain.segments[0].path == elsewhere / "p.jsonl"
    assert len(Session(chain).events) == 9


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            b'{"type":"developer/message","seq":0,"time":1,"data":{"id":"d","source":"tool-registry",'
            b'"additions":[{"name":"","headerSeq":1}],"removals":[]}}',
            "data.additions[0].name: must not be empty",
        ),
        (
            b'{"type":"assistant/message","seq":0,"time":1,"data":{"turn":1,"step":1,"route":"r","model":"m",'
            b'"content":[{"type":"text"}],"finish":"stop"}}',
            "data.content[0].text: required key is missing",
        ),
        (
            b'{"type":"request/header","seq":0,"time":1,"data":{"reason":"initial","sequence":0,"route":"r",'
            b'"model":"m","system":"","tools":{},"config":{}}}',
            "data.tools: must be an array",
        ),
        (b'{"type":"turn/start","seq":0,"time":1,"data":[]}', "data: must be an object"),
        (b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":true}}', "data.turn: must be an integer"),
        (b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1},"note":1}', "note: unexpected key"),
        (b'{"type":7,"seq":0}', '"type" must be a string'),
    ],
)
def test_validation_errors_become_short_reasons(line: bytes, reason: str) -> None:
    with pytest.raises(EventLineError) as caught:
        decode_event_line(line)

    assert caught.value.reason == reason


def test_tool_history_is_incremental_and_matches_a_full_reduction(logs, tmp_path) -> None:
    store = SessionStore(logs.directory)
    with store.create(tmp_path) as writer:
        for line in logs.completed_turn():
            event = decode_event_line(line)
            writer.append(event.type, event.data)
        first = writer.session.tool_history()
        tools = [{"name": "read", "description": "Read a file.", "parameters": {"type": "object"}}]
        writer.append("turn/start", {"turn": 2})
        writer.append("step/start", {"turn": 2, "step": 1})
        header = writer.append(
            "request/header",
            {"reason": "change", "sequence": 0, "route": "offline/demo", "model": "demo", "system": "Be brief.",
             "tools": tools, "config": {}},
        )
        writer.append(
            "developer/message",
            {"id": "d1", "source": "tool-registry", "additions": [], "removals": ["grep"]},
        )
        second = writer.session.tool_history()

    full = ToolHistoryReducer()
    for event in Session.open(writer.path).events:
        full.apply(event)

    assert first.last_seq == 8 and [tool.name for tool in first.current] == ["read", "grep"]
    assert second == full.snapshot()
    assert second.header_seq == header.seq
    assert [update.removals for update in second.updates] == [("grep",)]


def test_refresh_follows_a_live_writer(logs, tmp_path) -> None:
    store = SessionStore(logs.directory)
    writer = store.create(tmp_path)
    writer.append("turn/start", {"turn": 1})
    follower = Session.open(writer.path)
    assert follower.tool_history().last_seq == 0

    writer.append("user/message", {"id": "u1", "text": "hello"})
    writer.append("step/start", {"turn": 1, "step": 1})
    new = follower.refresh()

    assert [event.seq for event in new] == [1, 2]
    assert [event.seq for event in follower.events] == [0, 1, 2]
    assert follower.tool_history().last_seq == 2
    assert follower.refresh() == ()
    writer.close()


def test_refresh_leaves_a_line_in_progress_for_later(logs) -> None:
    path = logs.write("s", logs.completed_turn())
    session = Session.open(path).load()
    next_line = logs.line("user/message", 9, {"id": "u2", "text": "more"})

    with path.open("ab") as handle:
        handle.write(next_line[:20])
    assert session.refresh() == ()

    with path.open("ab") as handle:
        handle.write(next_line[20:] + b"\n")
    assert [event.seq for event in session.refresh()] == [9]


def test_refresh_after_the_writer_terminated_the_last_line(logs) -> None:
    lines = logs.completed_turn()
    path = logs.write("s", lines[:-1], tail=lines[-1])
    follower = Session.open(path)
    assert len(follower.events) == 9

    with SessionStore(logs.directory).open_writer("s") as writer:
        writer.append("turn/start", {"turn": 2})

    assert [event.seq for event in follower.refresh()] == [9]


def test_refresh_validates_new_lines(logs) -> None:
    path = logs.write("s", logs.completed_turn())
    session = Session.open(path).load()
    with path.open("ab") as handle:
        handle.write(logs.line("turn/start", 9, {"turn": 5}) + b"\n")

    with pytest.raises(SessionCorruptionError) as caught:
        session.refresh()

    assert caught.value.line == 11
    assert caught.value.reason == "turn/start numbers turn 5, expected 2"


def test_view_is_fed_incrementally(logs, tmp_path) -> None:
    pytest.importorskip("app.session.view")
    store = SessionStore(logs.directory)
    with store.create(tmp_path) as writer:
        writer.append("turn/start", {"turn": 1})
        view = writer.session.view()
        writer.append("user/message", {"id": "u1", "text": "hello"})

        assert writer.session.view() is view
        assert Session.open(writer.path).view().messages == view.messages

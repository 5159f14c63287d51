"""Each kind of corrupt session file fails with its own error class, exact line and specific reason,
and reading it changes no byte of any file."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from app.session.errors import SessionCorruptionError, SessionFileError, UnsupportedFormatError
from app.session.session import Session
from app.session.store import SessionWriter

if TYPE_CHECKING:
    from conftest import LogFiles

CORRUPT = SessionCorruptionError
UNSUPPORTED = UnsupportedFormatError

LineMaker = Callable[["LogFiles"], bytes]
FileMaker = Callable[["LogFiles"], Path]


@dataclass(frozen=True)
class Case:
    build: FileMaker
    error: type[SessionFileError]
    line: int
    reason: str  # a regular expression the whole reason must match
    in_file: str = "s.jsonl"  # the file the error names


def event(type_: str, seq: int, data: dict[str, Any] | Callable[[LogFiles], dict[str, Any]]) -> LineMaker:
    """An event line; `data` may need the LogFiles helpers (`logs.call(...)`)."""
    return lambda logs: logs.line(type_, seq, data if isinstance(data, dict) else data(logs))


def replacing(seq: int, new: bytes | LineMaker) -> FileMaker:
    """A completed turn (seq 0..8, event seq on line seq + 2) whose event `seq` is replaced by `new`."""

    def build(logs: LogFiles) -> Path:
        lines = logs.completed_turn()
        lines[seq] = new if isinstance(new, bytes) else new(logs)
        return logs.write("s", lines)

    return build


def appending(*extra: LineMaker) -> FileMaker:
    """A completed turn (seq 0..8) followed by the lines the callables make."""

    def build(logs: LogFiles) -> Path:
        return logs.write("s", logs.completed_turn() + [make(logs) for make in extra])

    return build


def with_header(header: bytes | None = None, **fields: object) -> FileMaker:
    """A completed turn under `header`, or under the default header changed by `fields`."""

    def build(logs: LogFiles) -> Path:
        return logs.write("s", logs.completed_turn(), header=header or logs.header("s", **fields))

    return build


def raw_file(content: bytes) -> FileMaker:
    def build(logs: LogFiles) -> Path:
        path = logs.directory / "s.jsonl"
        path.write_bytes(content)
        return path

    return build


def child_of(parent_lines: Callable[[LogFiles], list[bytes]], fork_seq: int) -> FileMaker:
    def build(logs: LogFiles) -> Path:
        logs.write("p", parent_lines(logs))
        return logs.write("s", [], parent={"id": "p", "seq": fork_seq})

    return build


def registry_update(addition: dict[str, Any]) -> LineMaker:
    return event(
        "developer/message",
        9,
        {"id": "d1", "source": "tool-registry", "additions": [addition], "removals": []},
    )


TURN_START = b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}'

CASES: dict[str, Case] = {
    "malformed JSON mid-file": Case(
        replacing(2, b'{"type":"step/start","seq":2,"time":1,"data":{"turn":1,"step":1}'),
        CORRUPT, 4, r"malformed JSON at column 65: Expecting ',' delimiter",
    ),
    "line not an object": Case(
        replacing(2, b'["step/start",2]'),
        CORRUPT, 4, r"the line is not a JSON object \(found an array\)",
    ),
    "type given twice, spelt as the writer does": Case(
        replacing(2, b'{"type":"step/start","seq":2,"time":1,"data":{"turn":1,"step":1},"type":"step/end"}'),
        CORRUPT, 4, r'the key "type" appears more than once, with different values',
    ),
    "type given twice, spelt otherwise": Case(
        replacing(2, b'{"seq": 2, "type": "step/start", "time": 1, "data": {"turn": 1, "step": 1}, "type": "step/end"}'),
        CORRUPT, 4, r'the key "type" appears more than once, with different values',
    ),
    "type missing": Case(
        replacing(2, b'{"seq":2,"time":1,"data":{"turn":1,"step":1}}'),
        CORRUPT, 4, r'the event has no "type" key',
    ),
    "unknown event type": Case(
        replacing(2, event("tool/progress", 2, {"percent": 50})),
        UNSUPPORTED, 4, r"unknown event type 'tool/progress'",
    ),
    "unknown version": Case(
        with_header(version=2),
        UNSUPPORTED, 1, r"unsupported session format version 2 \(this build reads version 1\)",
    ),
    "missing header": Case(
        raw_file(TURN_START + b"\n"),
        CORRUPT, 1, r'missing session header: line 1 must have "type": "session", found "turn/start"',
    ),
    "empty file": Case(raw_file(b""), CORRUPT, 1, r"missing session header: the file is empty"),
    "header not an object": Case(
        with_header(b'"session"'),
        CORRUPT, 1, r"the session header is not a JSON object \(found a string\)",
    ),
    "header with a wrong value type": Case(
        with_header(createdAt="today"),
        CORRUPT, 1, r"invalid session header: createdAt: must be an integer",
    ),
    "extra data key": Case(
        replacing(0, event("turn/start", 0, {"turn": 1, "title": "x"})),
        CORRUPT, 2, r"data\.title: unexpected key",
    ),
    "missing data key": Case(
        replacing(2, event("step/start", 2, {"turn": 1})),
        CORRUPT, 4, r"data\.step: required key is missing",
    ),
    "wrong value type": Case(
        replacing(1, event("user/message", 1, {"id": "u1", "text": 42})),
        CORRUPT, 3, r"data\.text: must be a string",
    ),
    "number below the minimum": Case(
        replacing(0, event("turn/start", 0, {"turn": 0})),
        CORRUPT, 2, r"data\.turn: must be at least 1",
    ),
    "seq gap": Case(
        replacing(2, event("step/start", 3, {"turn": 1, "step": 1})),
        CORRUPT, 4, r"seq jumps from 1 to 3: events are missing",
    ),
    "seq duplicate": Case(
        replacing(2, event("step/start", 1, {"turn": 1, "step": 1})),
        CORRUPT, 4, r"seq 1 repeats an earlier event \(expected 2\)",
    ),
    "first seq not 0": Case(
        replacing(0, event("turn/start", 5, {"turn": 1})),
        CORRUPT, 2, r"the first event must have seq 0, found 5",
    ),
    "empty callId in tool/call": Case(
        replacing(5, event("tool/call", 5, lambda logs: logs.call(1, 1, ""))),
        CORRUPT, 7, r"data\.callId: must not be empty",
    ),
    "empty callId in tool/result": Case(
        replacing(6, event("tool/result", 6, lambda logs: logs.result(1, 1, ""))),
        CORRUPT, 8, r"data\.callId: must not be empty",
    ),
    "empty callId in an assistant tool call": Case(
        replacing(4, event("assistant/message", 4, lambda logs: logs.assistant(1, 1, [logs.call_content("")]))),
        CORRUPT, 6, r"data\.content\[0\]\.callId: must not be empty",
    ),
    "unknown content type": Case(
        replacing(4, event("assistant/message", 4, lambda logs: logs.assistant(1, 1, [{"type": "image"}]))),
        CORRUPT, 6, r"data\.content\[0\]\.type: must be one of 'text', 'reasoning', 'tool-call'",
    ),
    "bad enum (finish)": Case(
        replacing(4, event("assistant/message", 4, lambda logs: logs.assistant(1, 1, [], finish="done"))),
        CORRUPT, 6, r"data\.finish: must be one of 'stop', 'tool-calls', 'max-tokens' or 'aborted'",
    ),
    "result without call": Case(
        replacing(5, event("user/message", 5, {"id": "u2", "text": "hm"})),
        CORRUPT, 8, r"tool/result answers callId 'c1', which has no earlier tool/call",
    ),
    "result for a call of another turn": Case(
        lambda logs: logs.write(
            "s",
            logs.completed_turn()[:6]
            + [
                logs.line("step/end", 6, {"turn": 1, "step": 1}),
                logs.line("turn/end", 7, {"turn": 1, "reason": "error"}),
                logs.line("turn/start", 8, {"turn": 2}),
                logs.line("step/start", 9, {"turn": 2, "step": 1}),
                logs.line("tool/result", 10, logs.result(2, 1, "c1")),
            ],
        ),
        CORRUPT, 12, r"tool/result in turn 2 answers callId 'c1', a tool/call of turn 1",
    ),
    "duplicate result": Case(
        replacing(7, event("tool/result", 7, lambda logs: logs.result(1, 1, "c1"))),
        CORRUPT, 9, r"callId 'c1' already has a tool/result \(seq 6\)",
    ),
    "result naming another tool": Case(
        replacing(6, event("tool/result", 6, lambda logs: logs.result(1, 1, "c1", name="grep"))),
        CORRUPT, 8, r"tool/result names tool 'grep', but the tool/call 'c1' was to 'read'",
    ),
    "duplicate callId": Case(
        lambda logs: logs.write("s", logs.completed_turn() + logs.completed_turn(9, turn=2, call_id="c1")),
        CORRUPT, 15, r"callId 'c1' was already used at seq 4",
    ),
    "callId twice in one assistant message": Case(
        replacing(
            4,
            event(
                "assistant/message",
                4,
                lambda logs: logs.assistant(1, 1, [logs.call_content("c1"), logs.call_content("c1")]),
            ),
        ),
        CORRUPT, 6, r"callId 'c1' is used twice in this message",
    ),
    "tool/call repeating an earlier tool/call's id": Case(
        appending(
            event("turn/start", 9, {"turn": 2}),
            event("step/start", 10, {"turn": 2, "step": 1}),
            event("tool/call", 11, lambda logs: logs.call(2, 1, "c1")),
        ),
        CORRUPT, 13, r"callId 'c1' was already used by the tool/call at seq 5",
    ),
    "headerSeq pointing at a non-header": Case(
        appending(registry_update({"name": "read", "headerSeq": 2})),
        CORRUPT, 11, r"headerSeq 2 points at a step/start event, not a request/header",
    ),
    "headerSeq header lacking the name": Case(
        appending(registry_update({"name": "time", "headerSeq": 3})),
        CORRUPT, 11, r"tool 'time' is not in the tools of the request/header at seq 3",
    ),
    "instructions headerSeq pointing ahead": Case(
        appending(event("developer/message", 9, {"id": "d1", "source": "instructions", "text": "Hi.", "headerSeq": 40})),
        CORRUPT, 11, r"headerSeq 40 points at no earlier event",
    ),
    "developer message with an unknown source": Case(
        appending(event("developer/message", 9, {"id": "d1", "source": "plugin"})),
        CORRUPT, 11, r"data\.source: must be one of 'tool-registry', 'instructions'",
    ),
    "step outside turn": Case(
        appending(event("step/start", 9, {"turn": 1, "step": 2})),
        CORRUPT, 11, r"step/start outside a turn",
    ),
    "step numbered wrongly": Case(
        replacing(2, event("step/start", 2, {"turn": 1, "step": 2})),
        CORRUPT, 4, r"step/start numbers step 2, expected 1",
    ),
    "turn/start inside an open turn": Case(
        replacing(1, event("turn/start", 1, {"turn": 2})),
        CORRUPT, 3, r"turn/start while turn 1 is still open",
    ),
    "turn numbered wrongly": Case(
        appending(event("turn/start", 9, {"turn": 3})),
        CORRUPT, 11, r"turn/start numbers turn 3, expected 2",
    ),
    "turn/end number mismatch": Case(
        replacing(8, event("turn/end", 8, {"turn": 2, "reason": "completed"})),
        CORRUPT, 10, r"turn/end names turn 2, but turn 1 is open",
    ),
    "turn/end with a step open": Case(
        replacing(7, event("turn/end", 7, {"turn": 1, "reason": "completed"})),
        CORRUPT, 9, r"turn/end while step 1 is still open",
    ),
    "step event outside a step": Case(
        appending(event("tool/call", 9, lambda logs: logs.call(1, 1, "c2"))),
        CORRUPT, 11, r"tool/call outside a step",
    ),
    "step event naming another step": Case(
        replacing(5, event("tool/call", 5, lambda logs: logs.call(1, 2, "c1"))),
        CORRUPT, 7, r"tool/call names turn 1 step 2, but turn 1 step 1 is open",
    ),
    "blank line": Case(replacing(3, b""), CORRUPT, 5, r"blank line"),
    "non-UTF-8 bytes": Case(
        replacing(1, b'{"type":"user/message","seq":1,"time":1,"data":{"id":"u1","text":"caf\xe9"}}'),
        CORRUPT, 3, r"not valid UTF-8 \(byte 0xe9 at column 70\)",
    ),
    "byte order mark": Case(
        replacing(0, b"\xef\xbb\xbf" + TURN_START),
        CORRUPT, 2, r"the line starts with a byte order mark \(BOM\)",
    ),
    "second session header": Case(
        replacing(1, lambda logs: logs.header("t")),
        CORRUPT, 3, r"a second session header: only line 1 may be a header",
    ),
    "parent missing": Case(
        lambda logs: logs.write("s", [], parent={"id": "gone", "seq": 0}),
        CORRUPT, 1, r"parent session gone not found \(looked for .*/gone\.jsonl\)",
    ),
    "parent id that is a path": Case(
        lambda logs: logs.write("s", [], parent={"id": "../gone", "seq": 0}),
        CORRUPT, 1, r"invalid session header: parent\.id: must be a session id: .*",
    ),
    "session id with an escape sequence": Case(
        lambda logs: logs.write("s", [], header=logs.header(id="s\x1b]0;title\x07")),
        CORRUPT, 1, r"invalid session header: id: must be a session id: .*",
    ),
    "parent seq beyond parent": Case(
        child_of(lambda logs: logs.completed_turn(), 9),
        CORRUPT, 1, r"parent\.seq 9 is beyond the last event of parent session p \(seq 8\)",
    ),
    "parent chain loop": Case(
        lambda logs: logs.write("s", logs.completed_turn(), parent={"id": "s", "seq": 0}),
        CORRUPT, 1, r"the parent chain loops back to .*/s\.jsonl",
    ),
    "corrupt line inherited from the parent": Case(
        child_of(lambda logs: [*logs.completed_turn()[:4], b"{}", *logs.completed_turn()[5:]], 8),
        CORRUPT, 6, r'the event has no "type" key', in_file="p.jsonl",
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_corrupt_file_is_refused_precisely_and_left_unchanged(logs: LogFiles, case: Case) -> None:
    path = case.build(logs)
    before = logs.digest()

    with pytest.raises(SessionFileError) as caught:
        Session.open(path).load()

    error = caught.value
    assert type(error) is case.error
    assert error.path.name == case.in_file
    assert error.line == case.line
    assert re.fullmatch(case.reason, error.reason), error.reason
    assert str(error) == f"{error.path}:{case.line}: {error.reason}"
    assert logs.digest() == before


def test_lazy_open_defers_event_errors(logs: LogFiles) -> None:
    path = replacing(3, b"")(logs)
    session = Session.open(path)  # header and bytes only

    assert session.id == "s"
    with pytest.raises(SessionCorruptionError, match="blank line"):
        session.load()


def test_writer_refuses_a_corrupt_file_and_changes_nothing(logs: LogFiles) -> None:
    lines = logs.completed_turn()
    lines[2] = b"{not json"
    # A torn tail too: the writer must not set it aside before it knows the file is sound.
    path = logs.write("s", lines, tail=b'{"type":"turn/st')
    before = logs.digest()

    with pytest.raises(SessionCorruptionError) as caught:
        SessionWriter.open(path)

    assert caught.value.line == 4
    assert logs.digest() == before

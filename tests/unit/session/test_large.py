"""Large sessions (docs/architecture.md §5): the line index and its cache, views built from fold checkpoints,
strict validation in the background — through real files."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from array import array
from collections.abc import Iterator
from pathlib import Path
from unittest.mock import patch

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.session import chain as chain_module
from app.session import structs
from app.session.chain import open_chain
from app.session.errors import SessionCorruptionError
from app.session import invariants
from app.session.events import CompactionSummary, Envelope, Event, encode_event, encode_header
from app.session import line_index
from app.session.line_index import BLOCK_COUNTS, CHUNK_SIZE, COUNT_BLOCK, COUNTED_CODES, INDEX_MAGIC, INDEX_VERSION, index_path
from app.session import event_positions
from app.session.indexed_view import IndexedView
from app.session.invariants import InvariantChecker
from app.session.reader import EventLineError, decode_event_line
from app.session.session import Session
from app.session.store import SessionStore, SessionWriter
from app.session.type_codes import TYPE_CODES
from app.session.view import SessionView
from app.session.view_items import HeaderItem
from tests.support.histories import GeneratedLog, session_logs
from tests.support.index_cache import IndexCache


def _assert_same(view: IndexedView, expected: SessionView) -> None:
    assert len(view.requests) == len(expected.requests)
    assert list(view.requests) == expected.requests
    assert list(view.turns) == expected.turns
    bounds = [(turn.seq, turn.end_seq, turn.end_reason) for turn in expected.turns]
    assert [view.turn_bounds(index) for index in range(len(view.turns))] == bounds
    assert list(view.items) == expected.items
    assert view.items[1:-1] == expected.items[1:-1]
    assert view.messages == expected.messages
    assert view.history == expected.history
    assert view.current_header == expected.current_header
    assert view.open_turn == expected.open_turn
    assert view.open_step == expected.open_step
    assert view.last_seq == expected.last_seq


@st.composite
def logs_with_partial_compactions(draw: st.DrawFn) -> GeneratedLog:
    """Drawn logs whose compactions sometimes keep messages (an `upToSeq` before the summary)."""
    log = draw(session_logs())
    events: list[Envelope] = []
    for event in log.events:
        if isinstance(event, CompactionSummary) and event.seq > 0 and draw(st.booleans()):
            up_to = draw(st.integers(0, event.seq - 1))
            event = event.model_copy(update={"data": event.data.model_copy(update={"up_to_seq": up_to})})
        events.append(event)
    return GeneratedLog(header=log.header, events=tuple(events))


@pytest.mark.slow(seconds=12)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=logs_with_partial_compactions(), every=st.integers(1, 12), data=st.data())
def test_any_request_built_from_a_checkpoint_equals_the_full_fold(
    log: GeneratedLog, every: int, data: st.DataObject
) -> None:
    expected = log.view()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"{log.header.id}.jsonl"
        path.write_bytes(log.jsonl())
        view = IndexedView(open_chain(path), every=every)
        # Any order: from a checkpoint, or on from the state the previous request left.
        order = data.draw(st.permutations(range(len(expected.requests))), label="order")
        for index in order:
            assert view.requests[index] == expected.requests[index]
            assert tuple(view.requests[index].messages) == tuple(expected.requests[index].messages)
        _assert_same(view, expected)
        # Reopened: the checkpoints come from the index cache.
        _assert_same(IndexedView(open_chain(path), every=every), expected)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=session_logs(), data=st.data())
def test_a_view_that_follows_appends_equals_the_full_fold(log: GeneratedLog, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(log.events)), label="cut")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"{log.header.id}.jsonl"
        path.write_bytes(encode_header(log.header) + b"".join(map(encode_event, log.events[:cut])))
        session = Session.open(path)
        session.view()
        with path.open("ab") as handle:
            handle.write(b"".join(map(encode_event, log.events[cut:])))
        session.refresh()
        _assert_same(session.view(), log.view())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=logs_with_partial_compactions(), batch=st.integers(1, 9))
def test_the_folded_view_read_in_batches_equals_the_full_fold(log: GeneratedLog, batch: int) -> None:
    expected = log.view()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"{log.header.id}.jsonl"
        path.write_bytes(log.jsonl())
        folded = Session.open(path).folded_view(batch=batch)
    assert folded.requests == expected.requests
    assert [tuple(request.messages) for request in folded.requests] == [
        tuple(request.messages) for request in expected.requests
    ]
    assert folded.turns == expected.turns and folded.items == expected.items
    assert folded.history == expected.history and folded.last_seq == expected.last_seq


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=logs_with_partial_compactions(), batch=st.integers(1, 9), validated_first=st.booleans())
def test_the_requests_handed_out_one_at_a_time_are_the_full_folds(log: GeneratedLog, batch: int, validated_first: bool) -> None:
    """`folded_requests` keeps nothing: each request, read as it comes, is the full fold's, whether
    the fold is the validation's own pass or one after it."""
    expected = log.view().requests
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"{log.header.id}.jsonl"
        path.write_bytes(log.jsonl())
        session = Session.open(path)
        if validated_first:
            session.load()
        read = [(request, tuple(request.messages)) for request in session.folded_requests(batch=batch)]
        assert session.validated
    assert [request for request, _messages in read] == expected
    assert [messages for _request, messages in read] == [tuple(request.messages) for request in expected]


def _positions_of(log: GeneratedLog) -> list[tuple[int, int, int]]:
    """(turn, step, requests made before) at each seq, counted from the start."""
    found, turn, step, requests = [], 0, 0, 0
    for event in log.events:
        if event.type == "turn/start":
            turn, step = turn + 1, 0
        elif event.type == "step/start":
            step += 1
        found.append((turn, step, requests))
        requests += event.type in ("assistant/message", "agent/request-error")
    return found


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=session_logs(), data=st.data())
def test_the_numbers_of_any_run_of_items_equal_the_full_fold(log: GeneratedLog, data: st.DataObject) -> None:
    """A run of items gets its turn, step and request numbers from running counts over the codes it
    spans (`IndexedView.item_run`, then `position`): any run of them, from any item, as the fold has them."""
    positions = _positions_of(log)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"{log.header.id}.jsonl"
        path.write_bytes(log.jsonl())
        view = Session.open(path).view()
        count = len(view.items)
        start = data.draw(st.integers(0, count - 1))
        stop = data.draw(st.integers(start + 1, count))
        items = view.item_run(start, stop)
        assert [view.position(item.seq) for item in items] == [positions[item.seq] for item in items]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=logs_with_partial_compactions(), block=st.integers(1, 8), tail_span=st.integers(0, 40))
def test_counting_back_from_the_end_and_by_block_totals_equal_the_full_fold(
    log: GeneratedLog, block: int, tail_span: int
) -> None:
    """Items, turns, requests and each item's numbers are found from the end near it (with the code
    counts the index keeps) and by block totals further back (summed from the per-block code counts
    the index keeps): shrunk here, so one log takes both."""
    expected = log.view()
    with (
        tempfile.TemporaryDirectory() as directory,
        patch.object(event_positions, "BLOCK", block),
        patch.object(line_index, "COUNT_BLOCK", block),
        patch.object(event_positions, "TAIL_SPAN", tail_span),
    ):
        path = Path(directory) / f"{log.header.id}.jsonl"
        path.write_bytes(log.jsonl())
        view = Session.open(path).view()
        _assert_same(view, expected)
        positions = _positions_of(log)
        assert [view.position(seq) for seq in range(len(log.events))] == positions
        # Counted on from the last one asked for, or found again (backwards, or a jump past a block).
        order = [*range(len(log.events) - 1, -1, -1), *range(0, len(log.events), 3), *range(1, len(log.events), block + 2)]
        assert [view.position(seq) for seq in order] == [positions[seq] for seq in order]


def test_code_counts_that_do_not_add_up_are_counted_again(logs) -> None:  # type: ignore[no-untyped-def]
    """A cache whose code counts are not its lines' (damaged, or from another build) is not
    believed: the counts are taken from the type codes again, and the view's lists are right."""
    path = logs.write("damaged", logs.completed_turn())
    expected = list(Session.open(path).view().items)
    user = str(TYPE_CODES["user/message"])
    cache = IndexCache.read(path)
    assert cache.meta["codes"][user] == 1
    cache.meta["codes"][user] = 4
    cache.write(path)  # sealed: what only a bug of toolscope's own could write

    view = Session.open(path).view()

    assert len(view.items) == len(expected) and list(view.items) == expected
    assert len(view.requests) == 1


def test_a_line_msgspec_refuses_in_a_window_or_the_tail_gets_the_readers_reason(logs) -> None:  # type: ignore[no-untyped-def]
    """Items and request messages are made from msgspec's Structs; a line it refuses goes through
    the pydantic reader, which names the fault with file and line as before."""
    path = logs.write("refused", logs.completed_turn())
    lines = path.read_bytes().split(b"\n")
    number = next(i for i, line in enumerate(lines) if line.startswith(b'{"type":"user/message"')) + 1
    lines[number - 1] = lines[number - 1].replace(b'"text":"', b'"text":5,"was":"', 1)
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(EventLineError) as reader:
        decode_event_line(lines[number - 1])

    for read in (lambda view: list(view.items), lambda view: list(view.requests[0].messages)):
        with pytest.raises(SessionCorruptionError) as caught:
            read(Session.open(path).view())
        assert (caught.value.path, caught.value.line, caught.value.reason) == (path, number, reader.value.reason)


def test_a_header_nested_past_the_models_bound_is_corrupt_to_validation_and_the_view(logs) -> None:  # type: ignore[no-untyped-def]
    """A request header whose config nests 300 levels: msgspec could parse it, pydantic cannot; it
    is the same corruption, with file and line, to strict validation and to the view's items."""
    path = logs.write("deep", logs.completed_turn())
    lines = path.read_bytes().split(b"\n")
    number = next(i for i, line in enumerate(lines) if line.startswith(b'{"type":"request/header"')) + 1
    lines[number - 1] = lines[number - 1].replace(b'"config":{}', b'"config":{"deep":' + b"[" * 300 + b"]" * 300 + b"}")
    path.write_bytes(b"\n".join(lines))

    for read in (lambda: Session.open(path).load(), lambda: list(Session.open(path).view().items)):
        with pytest.raises(SessionCorruptionError) as caught:
            read()
        assert (caught.value.path, caught.value.line) == (path, number)
        assert "nesting deeper than 200 levels" in caught.value.reason


# --- the index cache ---------------------------------------------------------------------------------


def _cache_meta(path: Path) -> dict:  # type: ignore[type-arg]
    return IndexCache.read(path).meta


def _as_if_unchanged(cache: IndexCache, path: Path) -> IndexCache:
    """`cache` keyed to the file as it is now: what a cache sealed after an edit would hold (a test
    of what the reader does with a record the seal vouches for)."""
    status = path.stat()
    cache.meta.update(size=status.st_size, mtime=status.st_mtime_ns, ctime=status.st_ctime_ns)
    return cache


def test_the_index_is_cached_beside_the_session_and_extended_by_appends(logs) -> None:
    lines = logs.completed_turn()
    path = logs.write("s", lines[:5])
    assert len(Session.open(path).chain) == 5
    assert _cache_meta(path)["count"] == 5 and index_path(path).stat().st_mode & 0o777 == 0o600

    with path.open("ab") as handle:
        handle.write(b"".join(line + b"\n" for line in lines[5:]))
    session = Session.open(path)

    assert _cache_meta(path)["count"] == 9
    assert [event.seq for event in session.events] == list(range(9))
    assert session.chain.own.index.offsets.tolist() == _offsets(path)


def test_a_truncation_to_a_torn_tail_is_followed(logs) -> None:
    lines = logs.completed_turn()
    path = logs.write("s", lines)
    Session.open(path).view()
    cut = len(lines[-1]) // 2
    with path.open("r+b") as handle:
        handle.truncate(path.stat().st_size - cut)

    session = Session.open(path)

    assert session.torn is not None and session.torn.data == (lines[-1] + b"\n")[:-cut]
    assert [event.seq for event in session.events] == list(range(8))
    assert session.view().open_turn is not None


def test_lines_longer_than_the_scans_chunk_are_indexed_whole(logs) -> None:
    """The scan reads 128 KB at a time: a line of several chunks, then a torn tail of several more."""
    lines = logs.completed_turn()
    lines[1] = logs.line("user/message", 1, {"id": "u1", "text": "x" * (CHUNK_SIZE * 3 + 17)})
    path = logs.write("s", lines)
    torn = b'{"type":"turn/start","seq":9,"time":1,"data":{"turn":2,' + b" " * (CHUNK_SIZE * 2)
    with path.open("ab") as handle:
        handle.write(torn)

    session = Session.open(path)

    assert session.torn is not None and session.torn.data == torn
    assert [event.seq for event in session.events] == list(range(9))
    assert session.view().items[0].text == "x" * (CHUNK_SIZE * 3 + 17)


def test_a_valid_line_the_index_cannot_classify_is_validated(logs) -> None:
    """`{"type": "step/start"` (a space after the colon) is a valid event the byte scan marks
    UNKNOWN: validation compares the types it read with the index's and lets that one pass."""
    lines = logs.completed_turn()
    lines[2] = lines[2].replace(b'{"type":"step/start"', b'{"type": "step/start"', 1)
    path = logs.write("s", lines)

    session = Session.open(path).load()

    assert session.validated and [event.type for event in session.events][2] == "step/start"


def _two_completed_turns(logs) -> list[bytes]:  # type: ignore[no-untyped-def]
    return [*logs.completed_turn(), *logs.completed_turn(first_seq=9, turn=2, call_id="c2")]


def _read_by_the_view(path: Path) -> tuple[object, ...]:
    view = Session.open(path).view()
    return list(view.items), [list(request.messages) for request in view.requests]


def test_lines_parsed_in_one_call_equal_those_parsed_one_by_one(logs, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A tail's items and a window's messages close together are parsed by one msgspec call over
    their lines: the same items and messages as parsing each line alone."""
    path = logs.write("s", _two_completed_turns(logs))
    parsed_in_runs: list[int] = []
    decode_run = structs.decode_run
    monkeypatch.setattr(structs, "decode_run", lambda lines: parsed_in_runs.append(1) or decode_run(lines))
    read = _read_by_the_view(path)
    assert parsed_in_runs

    with patch.object(chain_module._Run, "decoded", lambda run: None):  # every line alone
        assert _read_by_the_view(path) == read


def test_a_run_with_a_line_msgspec_cannot_vouch_for_is_read_line_by_line(logs) -> None:  # type: ignore[no-untyped-def]
    """A valid line the index cannot classify (a space after `"type":`) among the lines parsed in one
    call (a tool/call: one of the tail's items, between a window's messages): the run is read line
    by line, and the items and messages are those of the log without it."""
    lines = _two_completed_turns(logs)
    expected = _read_by_the_view(logs.write("clean", lines))
    lines[5] = lines[5].replace(b'{"type":"', b'{"type": "', 1)

    assert _read_by_the_view(logs.write("spaced", lines)) == expected


def test_a_run_spanning_a_header_with_many_shallow_brackets_is_parsed_in_one_call(logs) -> None:  # type: ignore[no-untyped-def]
    """A header with more brackets than the models nest (a long tool list, 2 levels deep) between a
    window's messages and among the tail's items: the runs are still parsed in one call each (only
    a wanted header over the bound is judged alone), with the items and messages of line by line."""
    lines = _two_completed_turns(logs)
    wide = b'"config":{' + b",".join(b'"k%d":[]' % number for number in range(250)) + b"}"
    lines[12] = lines[12].replace(b'"config":{}', wide, 1)
    path = logs.write("wide", lines)
    runs: list[tuple[list[int], object]] = []  # (seqs wanted, what one call gave) of each run of several
    decoded = chain_module._Run.decoded
    with patch.object(chain_module._Run, "decoded", lambda run: runs.append((run.seqs, decoded(run))) or runs[-1][1]):
        view = Session.open(path).view()
        read = list(view.items), list(view.requests[-1].messages)
    spans = [(seqs[0], seqs[-1]) for seqs, _ in runs if len(seqs) > 1]
    assert len(spans) == 2 and spans[0][0] < 12 < spans[0][1]  # the items across the header, a window
    assert all(events is not None for seqs, events in runs if len(seqs) > 1)
    assert isinstance(read[0][6], HeaderItem) and len(read[0][6].header.config) == 250

    with patch.object(chain_module._Run, "decoded", lambda run: None):  # every line alone
        view = Session.open(path).view()
        assert (list(view.items), list(view.requests[-1].messages)) == read


def test_a_corrupt_line_the_view_does_not_read_spoils_no_window(logs) -> None:  # type: ignore[no-untyped-def]
    """Between a window's messages, a corrupt tool/call line (not a message): the window is read as
    before (its lines one by one), the corruption left to strict validation and the items."""
    lines = _two_completed_turns(logs)
    expected = Session.open(logs.write("clean", lines)).view().requests[1].messages
    lines[5] = lines[5].replace(b'"callId":"c1"', b'"callId":""', 1)
    path = logs.write("corrupt", lines)

    assert list(Session.open(path).view().requests[1].messages) == list(expected)
    with pytest.raises(SessionCorruptionError) as caught:
        list(Session.open(path).view().items)
    assert caught.value.line == 7


def test_a_file_replaced_under_its_index_is_indexed_again(logs, tmp_path) -> None:
    path = logs.write("s", logs.completed_turn())
    Session.open(path).view()
    other = tmp_path / "other.jsonl"
    other.write_bytes(
        logs.header("s") + b"\n" + b"".join(line + b"\n" for line in logs.completed_turn(call_id="zz")[:7])
    )
    os.replace(other, path)

    session = Session.open(path)

    assert [event.seq for event in session.events] == list(range(7))
    assert session.chain.own.index.offsets.tolist() == _offsets(path)
    assert session.view().requests[0].outcome.tool_calls[0].call_id == "zz"


def test_a_file_rewritten_in_place_with_the_same_size_is_indexed_again(logs) -> None:
    lines = logs.completed_turn()
    path = logs.write("s", lines)
    Session.open(path).view()
    data = path.read_bytes()
    # Same length, other content: "read the readme" → "READ THE README".
    path.write_bytes(data.replace(b"read the readme", b"READ THE README"))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))

    session = Session.open(path)

    assert session.view().items[0].text == "READ THE README"


def test_a_corrupt_index_cache_is_ignored(logs) -> None:
    path = logs.write("s", logs.completed_turn())
    Session.open(path)
    index_path(path).write_bytes(INDEX_MAGIC + b"{not json\n")

    assert [event.seq for event in Session.open(path).events] == list(range(9))


def test_the_writer_keeps_the_index_current(logs, tmp_path) -> None:
    store = SessionStore(logs.directory)
    with store.create(tmp_path) as writer:
        writer.append("turn/start", {"turn": 1})
        writer.append("user/message", {"id": "u1", "text": "hello"})
        path = writer.path
    meta = _cache_meta(path)

    assert meta["count"] == 2 and meta["size"] == path.stat().st_size
    assert Session.open(path).chain.own.index.offsets.tolist() == _offsets(path)


def _offsets(path: Path) -> list[int]:
    data = path.read_bytes()
    starts, position = [], data.index(b"\n") + 1
    while position < len(data) and data.find(b"\n", position) >= 0:
        starts.append(position)
        position = data.index(b"\n", position) + 1
    return starts


# --- a 100k-event session ------------------------------------------------------------------------


TURN_TEMPLATE = (
    '{{"type":"turn/start","seq":{0},"time":1,"data":{{"turn":{t}}}}}',
    '{{"type":"user/message","seq":{1},"time":1,"data":{{"id":"u{t}","text":"question {t}"}}}}',
    '{{"type":"step/start","seq":{2},"time":1,"data":{{"turn":{t},"step":1}}}}',
    '{{"type":"assistant/message","seq":{3},"time":1,"data":{{"turn":{t},"step":1,"route":"offline/demo",'
    '"model":"demo","content":[{{"type":"tool-call","callId":"c{t}","name":"read","arguments":"{{}}"}}],'
    '"finish":"tool-calls"}}}}',
    '{{"type":"tool/call","seq":{4},"time":1,"data":{{"turn":{t},"step":1,"callId":"c{t}","name":"read",'
    '"arguments":"{{}}"}}}}',
    '{{"type":"tool/result","seq":{5},"time":1,"data":{{"turn":{t},"step":1,"callId":"c{t}","name":"read",'
    '"content":"text of {t}","isError":false}}}}',
    '{{"type":"step/end","seq":{6},"time":1,"data":{{"turn":{t},"step":1}}}}',
    '{{"type":"step/start","seq":{7},"time":1,"data":{{"turn":{t},"step":2}}}}',
    '{{"type":"assistant/message","seq":{8},"time":1,"data":{{"turn":{t},"step":2,"route":"offline/demo",'
    '"model":"demo","content":[{{"type":"text","text":"answer {t}"}}],"finish":"stop"}}}}',
    '{{"type":"step/end","seq":{9},"time":1,"data":{{"turn":{t},"step":2}}}}',
    '{{"type":"turn/end","seq":{10},"time":1,"data":{{"turn":{t},"reason":"completed"}}}}',
)
BIG_TURNS = 9_100  # 100,100 events


@pytest.fixture(scope="session")
def big_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A valid 100k-event log written from a template (seconds, not minutes)."""
    path = tmp_path_factory.mktemp("big") / "big.jsonl"
    width = len(TURN_TEMPLATE)
    with path.open("w") as handle:
        handle.write(json.dumps({"type": "session", "version": 1, "id": "big", "createdAt": 1, "cwd": "/", "parent": None}) + "\n")
        for turn in range(1, BIG_TURNS + 1):
            base = (turn - 1) * width
            seqs = range(base, base + width)
            handle.write("\n".join(line.format(*seqs, t=turn) for line in TURN_TEMPLATE) + "\n")
    yield path


def test_a_corruption_mid_file_is_reported_with_its_line_while_the_tail_is_readable(
    big_log: Path, tmp_path: Path
) -> None:
    path = tmp_path / "big.jsonl"
    lines = big_log.read_bytes().split(b"\n")
    # The first tool/call from line 50,000 on reuses the callId of the first turn's call.
    index = next(i for i in range(49_999, len(lines)) if lines[i].startswith(b'{"type":"tool/call"'))
    number, seq = index + 1, index - 1
    call_id = json.loads(lines[index])["data"]["callId"]
    lines[index] = lines[index].replace(f'"callId":"{call_id}"'.encode(), b'"callId":"c1"')
    path.write_bytes(b"\n".join(lines))
    session = Session.open(path)

    tail = session.view().items[-200:]
    last = session.view().requests[-1]
    progress = session.validation()
    first = next(progress)
    with pytest.raises(SessionCorruptionError) as caught:
        for _count in progress:
            pass

    assert [item.seq for item in tail] == sorted(item.seq for item in tail) and tail[-1].seq == 100_097
    assert last.index == 2 * BIG_TURNS and last.outcome.text == f"answer {BIG_TURNS}"
    assert 0 < first < seq
    assert caught.value.path == path and caught.value.line == number
    assert caught.value.reason == "callId 'c1' was already used by the tool/call at seq 4"
    # What was shown stays readable.
    assert session.view().items[-1].seq == 100_097


# --- the validation record: the writer does not validate the same bytes twice ----------------------


def _two_turns(big_log: Path, tmp_path: Path, turns: int = 2_000) -> Path:
    """The first `turns` turns of the template log, as a session of its own."""
    path = tmp_path / "big.jsonl"
    lines = big_log.read_bytes().split(b"\n")
    path.write_bytes(b"\n".join(lines[: 1 + turns * len(TURN_TEMPLATE)]) + b"\n")
    return path


SIXTH_CALL_LINE = 1 + 5 * len(TURN_TEMPLATE) + 5  # the header, five turns, the sixth's tool/call


def _swap_call_id(path: Path, line_number: int) -> None:
    """Give the tool/call on `line_number` the first turn's callId, keeping the file's size."""
    lines = path.read_bytes().split(b"\n")
    call = lines[line_number - 1]
    assert call.startswith(b'{"type":"tool/call"')
    call_id = json.loads(call)["data"]["callId"].encode()
    lines[line_number - 1] = call.replace(b'"callId":"' + call_id + b'"', b'"callId":"c1' + b"x" * (len(call_id) - 2) + b'"')
    path.write_bytes(b"\n".join(lines))


def test_a_validated_session_keeps_a_record_the_writer_trusts_while_the_file_is_unchanged(
    big_log: Path, tmp_path: Path
) -> None:
    path = _two_turns(big_log, tmp_path)
    Session.open(path).view().items[-1]  # a reader keeps no record: it validated nothing
    assert "validated" not in _cache_meta(path)["sections"]
    Session.open(path).load()  # a full validation keeps its record in the index
    assert "validated" in _cache_meta(path)["sections"]
    # A cache sealed for the file after an edit shows what is trusted: the record, so the old
    # lines are not read again; the writer still appends valid events after them.
    cache = IndexCache.read(path)
    _swap_call_id(path, SIXTH_CALL_LINE)
    _as_if_unchanged(cache, path).write(path)
    with SessionWriter.open(path) as writer:
        assert writer.next_seq == 2_000 * len(TURN_TEMPLATE)
        writer.append("turn/start", {"turn": 2_001})
    assert "validated" in _cache_meta(path)["sections"]


def test_an_edit_that_restores_the_mtime_is_seen_by_the_writer(big_log: Path, tmp_path: Path) -> None:
    """`touch -r` restores the mtime after an edit in place of the same size; the inode's ctime
    still changed, and no user command can set it back: the record no longer holds."""
    path = _two_turns(big_log, tmp_path)
    Session.open(path).load()
    status = path.stat()
    _swap_call_id(path, SIXTH_CALL_LINE)
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    before = path.read_bytes()

    with pytest.raises(SessionCorruptionError) as caught:
        SessionWriter.open(path)

    assert caught.value.path == path and caught.value.line == SIXTH_CALL_LINE
    assert path.read_bytes() == before


def _validated_then_edited_unseen(path: Path) -> IndexCache:
    """Validate `path` (its record kept in the cache), then give its sixth tool/call the first
    turn's callId; the cache, keyed to the file as it is now, is returned to be damaged and
    sealed: only a record that is trusted misses the edit."""
    Session.open(path).load()
    cache = IndexCache.read(path)
    _swap_call_id(path, SIXTH_CALL_LINE)
    return _as_if_unchanged(cache, path)


@pytest.mark.parametrize("damage", ["ids count wrong", "summary not JSON", "summary of another shape"])
def test_a_damaged_validation_record_is_not_trusted(big_log: Path, tmp_path: Path, damage: str) -> None:
    """The record as the cache holds it (a JSON summary line, then the call ids as digests), spoilt:
    the writer validates every line again, so it finds the edit the record would have covered."""
    path = _two_turns(big_log, tmp_path)
    cache = _validated_then_edited_unseen(path)
    record = cache.sections["validated"]
    summary, ids = record.split(b"\n", 1)
    if damage == "ids count wrong":  # it claims one id more than it holds
        spoilt = summary + b"\n" + (int.from_bytes(ids[:8], "little") + 1).to_bytes(8, "little") + ids[8:]
    elif damage == "summary not JSON":
        spoilt = b"{" + summary[1:-1] + b"\n" + ids[:-1]
    else:
        spoilt = summary.replace(b'"checker":{', b'"checker":{"x":[],', 1)[: len(summary)] + b"\n" + ids
    cache.sections["validated"] = spoilt[: len(record)].ljust(len(record), b"\0")
    cache.write(path)  # sealed: what only a bug of toolscope's own could write

    with pytest.raises(SessionCorruptionError) as caught:
        SessionWriter.open(path)

    assert caught.value.line == SIXTH_CALL_LINE


def test_a_previous_version_cache_is_rebuilt_and_its_record_not_trusted(big_log: Path, tmp_path: Path) -> None:
    """A cache of the previous version (without code counts) is indexed again: its validation
    record is not read, so the writer validates every line and finds an edit the record would have
    covered."""
    path = _two_turns(big_log, tmp_path)
    cache = _validated_then_edited_unseen(path)
    cache.meta["version"] = INDEX_VERSION - 1
    cache.write(path)

    with pytest.raises(SessionCorruptionError) as caught:
        SessionWriter.open(path)

    assert caught.value.line == SIXTH_CALL_LINE
    assert _cache_meta(path)["version"] == INDEX_VERSION


@pytest.mark.parametrize(
    "damage",
    [b"not json", b"[1,2]", b'[1024,0,5,[null,null,false,[]],[],0]', b'[1024,999999,null,[null,null,false,[]],[],0]'],
    ids=["not JSON", "another shape", "a header seq that is no header", "a wrong request count"],
)
def test_a_damaged_checkpoint_is_recorded_again(big_log: Path, tmp_path: Path, damage: bytes) -> None:
    path = _two_turns(big_log, tmp_path, turns=300)
    expected = [Session.open(path).view().requests[n] for n in (0, 250, 400)]  # seqs 3, ~1400, 2203
    cache = IndexCache.read(path)
    states = cache.sections["checkpoints"].split(b"\n")
    assert len(states) > 3  # the spacing line, then checkpoints 0, 1, 2, ...
    states[2] = damage  # checkpoint 1 (seq 1024)
    cache.sections["checkpoints"] = b"\n".join(states)
    cache.write(path)  # sealed: what only a bug of toolscope's own could write

    view = Session.open(path).view()

    assert [view.requests[n] for n in (0, 250, 400)] == expected


def test_the_index_keeps_each_blocks_code_counts(big_log: Path) -> None:
    """Beside the type codes, the cache keeps how many lines of each code every complete block of
    `COUNT_BLOCK` lines holds (what a fresh view's block totals are summed from)."""
    Session.open(big_log)
    types = Session.open(big_log).chain.types
    table = array("I", IndexCache.read(big_log).sections[BLOCK_COUNTS])
    blocks = len(types) // COUNT_BLOCK
    assert blocks > 20 and len(table) == blocks * len(COUNTED_CODES)
    expected = [
        types.count(code, block * COUNT_BLOCK, (block + 1) * COUNT_BLOCK) for block in range(blocks) for code in COUNTED_CODES
    ]
    assert table.tolist() == expected


@pytest.mark.parametrize("damage", ["counts that do not add up", "a row short", "more blocks than lines"])
def test_damaged_block_counts_are_counted_again(big_log: Path, tmp_path: Path, damage: str) -> None:
    """Per-block counts that do not agree with the index's code counts (or do not have the table's
    layout) are not believed: the view finds every request, turn and item from the type codes."""
    path = _two_turns(big_log, tmp_path, turns=3_000)
    view = Session.open(path).view()
    picks = (0, 1_500, len(view.requests) - 1)
    expected = ([view.requests[n] for n in picks], [view.turns[n] for n in (0, 1_000, 2_999)], view.items[9_000:9_200])
    cache = IndexCache.read(path)
    table = array("I", cache.sections[BLOCK_COUNTS])
    if damage == "counts that do not add up":
        table[0] += 1
    elif damage == "a row short":
        del table[-1]
    else:  # a row too many, before the others
        table = table[: len(COUNTED_CODES)] + table
    cache.sections[BLOCK_COUNTS] = table.tobytes()
    cache.write(path)  # sealed: what only a bug of toolscope's own could write

    with patch.object(event_positions, "TAIL_SPAN", 0):  # by block totals, not counted back from the end
        view = Session.open(path).view()
        found = ([view.requests[n] for n in picks], [view.turns[n] for n in (0, 1_000, 2_999)], view.items[9_000:9_200])

    assert found == expected


@pytest.mark.parametrize("change", ["rewritten in place", "appended to"])
def test_a_file_changed_since_its_record_is_validated_again_by_the_writer(
    big_log: Path, tmp_path: Path, change: str
) -> None:
    path = _two_turns(big_log, tmp_path)
    Session.open(path).load()
    number = SIXTH_CALL_LINE
    _swap_call_id(path, number)
    if change == "appended to":
        with path.open("ab") as handle:
            handle.write(b'{"type":"turn/start","seq":22000,"time":1,"data":{"turn":2001}}\n')
    before = path.read_bytes()

    with pytest.raises(SessionCorruptionError) as caught:
        SessionWriter.open(path)

    assert caught.value.line == number and "'c1'" in caught.value.reason
    assert path.read_bytes() == before


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=session_logs(), data=st.data())
def test_a_checker_restored_from_its_record_goes_on_like_the_original(
    log: GeneratedLog, data: st.DataObject
) -> None:
    """The record is the JSON state and the call ids as digests; the events before the split are
    read back only when a digest matches (and for a header's tools)."""
    split = data.draw(st.integers(0, len(log.events)))
    whole, first = InvariantChecker(), InvariantChecker()
    for event in log.events:
        whole.feed(event)
    for event in log.events[:split]:
        first.feed(event)
    state = json.loads(json.dumps(first.state_json()))
    types = bytes(TYPE_CODES[event.type] for event in log.events[:split])
    read: list[int] = []

    def event_at(seq: int) -> Event:
        assert seq < split
        read.append(seq)
        return log.events[seq]

    restored = InvariantChecker.restore(state, types, first.ids_record(), event_at)
    for event in log.events[split:]:
        restored.feed(event)

    assert json.dumps(restored.state_json()) == json.dumps(whole.state_json())
    assert restored.ids_record() == whole.ids_record()
    assert restored.pending_calls() == whole.pending_calls()
    for event in log.events[:split]:
        for call_id in getattr(event.data, "call_id", None), *(
            getattr(part, "call_id", None) for part in getattr(event.data, "content", ())
            if not isinstance(event.data.content, str)
        ):
            if call_id is not None:
                assert restored.call_id_taken(call_id)
    assert not restored.call_id_taken("never-used")


def _event(type_: str, seq: int, data: dict[str, object]) -> Event:
    return decode_event_line(json.dumps({"type": type_, "seq": seq, "time": 1, "data": data}).encode())


def _call_event(seq: int, call_id: str, *, turn: int = 1) -> Event:
    return _event("tool/call", seq, {"turn": turn, "step": 1, "callId": call_id, "name": "ls", "arguments": "{}"})


def _turn_with_calls(call_ids: list[str]) -> list[Event]:
    """Turn 1, whose one step calls `call_ids` (an assistant message, then a call and a result each)."""
    content = [{"type": "tool-call", "callId": call_id, "name": "ls", "arguments": "{}"} for call_id in call_ids]
    events = [
        _event("turn/start", 0, {"turn": 1}),
        _event("step/start", 1, {"turn": 1, "step": 1}),
        _event("assistant/message", 2, {
            "turn": 1, "step": 1, "route": "offline/demo", "model": "demo", "content": content, "finish": "tool-calls",
        }),
    ]
    for call_id in call_ids:
        events.append(_call_event(len(events), call_id))
        events.append(_event("tool/result", len(events), {
            "turn": 1, "step": 1, "callId": call_id, "name": "ls", "content": "", "isError": False,
        }))
    events.append(_event("step/end", len(events), {"turn": 1, "step": 1}))
    events.append(_event("turn/end", len(events), {"turn": 1, "reason": "completed"}))
    return events


def test_call_ids_that_share_a_digest_are_told_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """A digest match is confirmed by reading the event: with every id given one digest, a new id
    is still free, and a used one is still refused with the seq that used it."""
    monkeypatch.setattr(invariants, "_digest", lambda call_id: 7)
    first = InvariantChecker()
    events = _turn_with_calls(["a", "b"])
    for event in events:
        first.feed(event)
    restored = InvariantChecker.restore(
        first.state_json(), bytes(TYPE_CODES[event.type] for event in events), first.ids_record(),
        lambda seq: events[seq],
    )
    assert restored.call_id_taken("b") and restored.call_id_taken("a")
    assert not restored.call_id_taken("c")
    restored.feed(_event("turn/start", len(events), {"turn": 2}))
    restored.feed(_event("step/start", len(events) + 1, {"turn": 2, "step": 1}))
    assert restored.check(_call_event(len(events) + 2, "b", turn=2)) == (
        "callId 'b' was already used by the tool/call at seq 5"
    )
    restored.feed(_call_event(len(events) + 2, "c", turn=2))


def test_a_worker_thread_validates_with_progress_while_the_tail_is_read(big_log: Path, tmp_path: Path) -> None:
    """The trajectory's use: `validate(progress)` in a real thread, the view read meanwhile."""
    path = tmp_path / "big.jsonl"
    lines = big_log.read_bytes().split(b"\n")
    index = next(i for i in range(79_999, len(lines)) if lines[i].startswith(b'{"type":"tool/call"'))
    call_id = json.loads(lines[index])["data"]["callId"]
    lines[index] = lines[index].replace(f'"callId":"{call_id}"'.encode(), b'"callId":"c1"')
    path.write_bytes(b"\n".join(lines))
    session = Session.open(path)
    reports: list[tuple[int, int]] = []
    failures: list[BaseException] = []

    def work() -> None:
        try:
            session.validate(lambda done, total: reports.append((done, total)))
        except SessionCorruptionError as error:
            failures.append(error)

    worker = threading.Thread(target=work)
    worker.start()
    tails = [session.view().items[-50:] for _ in range(20)]
    worker.join()

    assert all(tail[-1].seq == 100_097 for tail in tails)
    assert reports and [done for done, _total in reports] == sorted(done for done, _total in reports)
    assert {total for _done, total in reports} == {100_100} and reports[-1][0] < index - 1
    assert len(failures) == 1 and failures[0].line == index + 1
    assert not session.validated


def test_a_forks_record_does_not_cover_a_parent_replaced_since(logs) -> None:
    parent_lines = logs.completed_turn()
    parent = logs.write("p", parent_lines)
    child = logs.write("c", logs.completed_turn(9, turn=2, call_id="c9"), parent={"id": "p", "seq": 8})
    Session.open(child).load()
    assert "validated" in _cache_meta(child)["sections"]
    # The parent replaced by a file whose inherited turn reuses a callId: same lines, same count.
    broken = [line.replace(b'"callId":"c1"', b'"callId":"c9"') for line in parent_lines]
    replacement = parent.with_name("p.new")
    replacement.write_bytes(logs.header("p") + b"\n" + b"".join(line + b"\n" for line in broken))
    os.replace(replacement, parent)

    with pytest.raises(SessionCorruptionError) as caught:
        SessionWriter.open(child)

    assert caught.value.path == child and "'c9'" in caught.value.reason

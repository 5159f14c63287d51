"""Session lines as other writers spell them: the line index's byte prefix against its slow
reference (`declared_type`, a parse), and the strict reader, on every spelling JSON allows."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.session import structs
from app.session.errors import SessionCorruptionError
from app.session.events import encode_event, encode_header
from app.session.line_index import LineIndex
from app.session.reader import EventLineError, decode_event_line
from app.session.session import Session
from app.session.type_codes import AMBIGUOUS, TYPE_CODES, UNKNOWN, declared_type, prefix_code, type_code
from tests.support.histories import GeneratedLog, session_logs
from tests.support.spellings import respell

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _lines(log: GeneratedLog) -> list[bytes]:
    return [encode_event(event).rstrip(b"\n") for event in log.events]


@SETTINGS
@given(log=session_logs(), seed=st.integers(0, 2**32 - 1))
def test_every_spelling_of_a_valid_line_is_classified_and_read_as_the_writers(log: GeneratedLog, seed: int) -> None:
    rng = random.Random(seed)
    for event, line in zip(log.events, _lines(log)):
        for spelt in (line, respell(line, rng), respell(line, rng, escape_rate=1.0)):
            code = TYPE_CODES[event.type]
            assert declared_type(spelt) == event.type
            assert type_code(spelt) == code
            assert prefix_code(spelt) in (UNKNOWN, code)
            assert decode_event_line(spelt) == event
            fast = structs.decode_valid(spelt)
            assert fast is None or structs.event_model(spelt) == event


@SETTINGS
@given(log=session_logs(), seed=st.integers(0, 2**32 - 1))
def test_a_respelt_file_is_indexed_as_the_compact_one(log: GeneratedLog, seed: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The scan classifies each line as the slow reference does, wherever the prefix cannot."""
    rng = random.Random(seed)
    header = encode_header(log.header)
    lines = [respell(line, rng) + b"\n" for line in _lines(log)]
    path = tmp_path_factory.mktemp("spelt") / "s.jsonl"
    path.write_bytes(header + b"".join(lines))
    index = LineIndex(path, len(header), 0, end=len(header))
    with path.open("rb") as handle:
        assert index.scan(handle) == b""
    starts = [len(header) + sum(map(len, lines[:n])) for n in range(len(lines))]
    assert bytes(index.types) == bytes(TYPE_CODES[event.type] for event in log.events)
    assert index.offsets.tolist() == starts


@SETTINGS
@given(log=session_logs(), data=st.data())
def test_where_the_prefix_and_the_parse_disagree_the_reader_refuses_the_line(log: GeneratedLog, data: st.DataObject) -> None:
    """Damage a line anywhere (its first bytes most of all): the prefix may still name a type the
    parse does not see — then the strict reader refuses the line, so no valid line is misread."""
    lines = _lines(log)
    line = data.draw(st.sampled_from(lines))
    position = data.draw(st.one_of(st.integers(0, 20), st.integers(0, len(line))))
    replacement = data.draw(st.binary(max_size=3))
    damaged = line[:position] + replacement + line[position + data.draw(st.integers(0, 3)) :]
    declared = declared_type(damaged)
    slow = TYPE_CODES.get(declared, UNKNOWN) if isinstance(declared, str) else UNKNOWN
    try:
        event = decode_event_line(damaged)
    except EventLineError:
        return
    assert type_code(damaged) == slow == TYPE_CODES[event.type]
    assert prefix_code(damaged) in (UNKNOWN, slow)


def test_a_type_given_twice_is_ambiguous_to_the_reference() -> None:
    line = b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1},"type":"turn/end"}'
    assert declared_type(line) is AMBIGUOUS and type_code(line) == TYPE_CODES["turn/start"]
    assert declared_type(line.replace(b'"turn/end"', b'"turn/start"')) == "turn/start"  # the same twice
    with pytest.raises(EventLineError, match='appears more than once'):
        decode_event_line(line)


@pytest.mark.parametrize("where", ["header", "event"])
def test_a_byte_order_mark_is_refused_with_its_line(tmp_path: Path, where: str) -> None:
    """The format is UTF-8 without a BOM (RFC 8259 forbids adding one): a line that starts with one
    is refused, naming the file and the line, never skipped."""
    header = b'{"type":"session","version":1,"id":"s","createdAt":1,"cwd":"/","parent":null}'
    event = b'{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}'
    bom = b"\xef\xbb\xbf"
    path = tmp_path / "s.jsonl"
    path.write_bytes((bom + header if where == "header" else header) + b"\n" + (bom + event if where == "event" else event) + b"\n")

    with pytest.raises(SessionCorruptionError) as caught:
        Session.open(path).load()

    assert caught.value.path == path and caught.value.line == (1 if where == "header" else 2)
    assert "byte order mark" in caught.value.reason

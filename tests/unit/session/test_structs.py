"""The msgspec mirror of the event models (app/session/structs.py) may only say yes faster: whatever
line the pydantic models refuse, it refuses too, and what it accepts the models accept alike — and
the view item made from its Struct is the one made from the pydantic event."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from app.session.errors import SessionError
from app.session.events import HEADER_ADAPTER, encode_event
from app.session.reader import EventLineError, decode_event_line, parse_header_line
from app.session.structs import decode_header, decode_valid, event_model
from app.session.view_items import (
    AssistantItem,
    ContextItem,
    HeaderItem,
    RequestErrorItem,
    RetryItem,
    ToolResultItem,
    _ModelPart,
    item_of,
    stored_part,
)
from tests.support.histories import session_logs
from tests.unit.session.test_corruption import CASES


def _pydantic_accepts(line: bytes) -> bool:
    try:
        decode_event_line(line)
    except EventLineError:
        return False
    return True


def _msgspec_accepts(line: bytes) -> bool:
    return decode_valid(line) is not None


def _same_event(line: bytes) -> bool:
    """Both decodings of an accepted line hold the same values (None fields left out)."""

    def without_none(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: without_none(item) for key, item in value.items() if item is not None}
        if isinstance(value, (list, tuple)):
            return [without_none(item) for item in value]
        return value

    event = decode_event_line(line)
    return without_none(msgspec.to_builtins(decode_valid(line))) == without_none(
        json.loads(encode_event(event))
    )


def _same_item(line: bytes) -> bool:
    """The item made from the Struct equals the one made from the pydantic event, down to the
    classes of its parts (a repr names them) and their JSON."""
    expected, made = item_of(decode_event_line(line)), item_of(decode_valid(line))  # type: ignore[arg-type]
    if made is None or expected is None:
        return made is expected
    assert _reads_alike_before_any_part_is_read(line, expected)
    parts = [getattr(made, name) for name in made.__slots__]  # type: ignore[union-attr]
    expected_parts = [getattr(expected, name) for name in expected.__slots__]  # type: ignore[union-attr]
    return (
        made == expected
        and repr(made) == repr(expected)
        and [_json(part) for part in parts] == [_json(part) for part in expected_parts]
    )


def _same_model(line: bytes) -> bool:
    """The event model built from the Struct (what `Chain` reads) is the one the models parse: the
    same class, values, repr and JSON."""
    expected, made = decode_event_line(line), event_model(line)
    return (
        type(made) is type(expected)
        and made == expected
        and repr(made) == repr(expected)
        and made.model_dump_json(by_alias=True, exclude_none=True) == expected.model_dump_json(by_alias=True, exclude_none=True)  # type: ignore[union-attr]
    )


def _json(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_json(item) for item in value]
    return value.model_dump_json() if hasattr(value, "model_dump_json") else value


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_every_line_of_the_corrupt_corpus_the_models_refuse_is_refused(  # type: ignore[no-untyped-def]
    logs, case
) -> None:
    path: Path = case.build(logs)
    for line in path.read_bytes().split(b"\n")[1:]:
        if not line.strip():
            continue
        if _msgspec_accepts(line):
            assert _pydantic_accepts(line), line
            assert _same_event(line), line
            assert _same_item(line), line
            assert _same_model(line), line


MUTATIONS: list[Any] = [None, True, False, 0, -1, 1.5, "", "x", [], {}, 2**70]


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for position, item in enumerate(value):
            found += _paths(item, (*path, position))
    return found


def _mutated(obj: Any, path: tuple[Any, ...], action: str, replacement: Any) -> Any:
    if not path:
        return replacement if action == "set" else obj
    *parents, last = path
    node = obj
    for step in parents:
        node = node[step]
    if action == "set":
        node[last] = replacement
    elif action == "delete":
        del node[last]
    elif action == "extra" and isinstance(node, dict):
        node["unexpected"] = replacement
    elif action == "snake" and isinstance(last, str) and any(c.isupper() for c in last):
        snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in last)
        node[snake] = node.pop(last)
    return obj


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    log=session_logs(max_turns=2, max_steps=2),
    data=st.data(),
    action=st.sampled_from(["set", "delete", "extra", "snake"]),
    replacement=st.sampled_from(MUTATIONS),
)
def test_a_mutated_line_the_models_refuse_is_refused(  # type: ignore[no-untyped-def]
    log, data, action, replacement
) -> None:
    event = data.draw(st.sampled_from(log.events))
    obj = json.loads(encode_event(event))
    path = data.draw(st.sampled_from(_paths(obj)[1:]))
    line = json.dumps(_mutated(obj, path, action, replacement), separators=(",", ":")).encode()
    if _msgspec_accepts(line):
        assert _pydantic_accepts(line), line
        assert _same_event(line), line
        assert _same_item(line), line
        assert _same_model(line), line


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=session_logs())
def test_every_valid_line_is_accepted_alike(log) -> None:  # type: ignore[no-untyped-def]
    for event in log.events:
        line = encode_event(event).rstrip(b"\n")
        assert _msgspec_accepts(line), line
        assert _same_event(line), line
        assert _same_item(line), line
        assert _same_model(line), line


@pytest.mark.parametrize("depth", [150, 197, 198, 199, 200, 300, 900, 2_000])
def test_a_header_nested_deeper_than_the_models_parse_is_left_to_them(depth: int) -> None:
    """msgspec parses deeper than pydantic (about 1,000 levels against 200): a header whose
    free-form config nests past pydantic's bound is refused as the models refuse it, so strict
    validation and the view's items give the reader's reason, not an item."""
    nested = "[" * depth + "]" * depth
    data = (
        '{"reason":"initial","sequence":0,"route":"r","model":"m","system":"","tools":[],'
        f'"config":{{"deep":{nested}}}}}'
    )
    line = f'{{"type":"request/header","seq":0,"time":0,"data":{data}}}'.encode()

    if _msgspec_accepts(line):
        assert _pydantic_accepts(line)
        assert _same_event(line) and _same_item(line) and _same_model(line)
    if not _pydantic_accepts(line):
        assert not _msgspec_accepts(line)


# --- the header line -------------------------------------------------------------------------------


def _header_accepted_alike(line: bytes) -> bool:
    """If the reader accepts a header line (from its Struct, when msgspec says yes), the models accept
    it and the header is the one they parse (class, values, fields set, repr, JSON)."""
    try:
        made = parse_header_line(Path("s.jsonl"), line)
    except SessionError:
        return True
    expected = HEADER_ADAPTER.validate_json(line)
    return (
        type(made) is type(expected)
        and made == expected
        and made.model_fields_set == expected.model_fields_set
        and repr(made) == repr(expected)
        and made.model_dump_json(by_alias=True) == expected.model_dump_json(by_alias=True)
    )


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_every_header_of_the_corrupt_corpus_the_models_refuse_is_refused(logs, case) -> None:  # type: ignore[no-untyped-def]
    path: Path = case.build(logs)
    line = path.read_bytes().split(b"\n")[0]
    assert _header_accepted_alike(line), line


HEADERS = [
    {"type": "session", "version": 1, "id": "20260101-120000-a1b2c3", "createdAt": 1, "cwd": "/w", "parent": None},
    {"type": "session", "version": 1, "id": "b.c_d-e", "createdAt": 0, "cwd": "", "parent": {"id": "a", "seq": 7}},
]


@pytest.mark.parametrize("header", HEADERS)
def test_a_valid_header_is_accepted_alike(header: dict[str, Any]) -> None:
    line = json.dumps(header).encode()
    assert decode_header(line) is not None
    assert _header_accepted_alike(line)


@pytest.mark.parametrize("session_id", ["a\n", "\na", "a b", "-a", "a" * 129, "a/b", ""])
def test_a_header_with_an_id_the_models_refuse_is_refused(session_id: str) -> None:
    """msgspec's patterns search with `re`, whose `$` matches before a final newline too."""
    for header in HEADERS:
        for place in ("id", "parent"):
            obj = json.loads(json.dumps(header))
            if place == "id":
                obj["id"] = session_id
            else:
                obj["parent"] = {"id": session_id, "seq": 1}
            line = json.dumps(obj).encode()
            assert decode_header(line) is None, line


@settings(max_examples=200, deadline=None)
@given(
    header=st.sampled_from(HEADERS),
    data=st.data(),
    action=st.sampled_from(["set", "delete", "extra", "snake"]),
    replacement=st.sampled_from([*MUTATIONS, "20260101-120000-a1b2c3", {"id": "a", "seq": 1}]),
)
def test_a_mutated_header_the_models_refuse_is_refused(header, data, action, replacement) -> None:  # type: ignore[no-untyped-def]
    obj = json.loads(json.dumps(header))
    path = data.draw(st.sampled_from(_paths(obj)[1:]))
    line = json.dumps(_mutated(obj, path, action, replacement), separators=(",", ":")).encode()
    assert _header_accepted_alike(line), line


def _hash_or_error(value: object) -> object:
    """The hash, or the kind of error hashing raises (a header's config is a dict: unhashable)."""
    try:
        return hash(value)
    except TypeError as error:
        return type(error)


_FRESH_ITEM_READS: dict[str, Any] = {
    "equality": lambda made, expected: made == expected and expected == made,
    "hash": lambda made, expected: _hash_or_error(made) == _hash_or_error(expected),
    "repr": lambda made, expected: repr(made) == repr(expected),
    "pickle": lambda made, expected: pickle.loads(pickle.dumps(made)) == expected,
    "copy": lambda made, expected: copy.copy(made) == expected and copy.deepcopy(made) == expected,
    "asdict": lambda made, expected: dataclasses.asdict(made) == dataclasses.asdict(expected),
    "replace": lambda made, expected: dataclasses.replace(made, seq=made.seq + 1) == dataclasses.replace(expected, seq=expected.seq + 1),
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=session_logs())
def test_an_item_whose_parts_were_never_read_reads_as_the_one_from_the_models(log) -> None:  # type: ignore[no-untyped-def]
    """An item made from a Struct keeps its parts (content, usage, an error, a message, a header)
    as Structs until one is read; whatever reads it first (equality, hash, repr, pickling, a copy,
    `dataclasses`) sees the models the pydantic event gives, and the part is built once."""
    for event in log.events:
        line = encode_event(event).rstrip(b"\n")
        assert _reads_alike_before_any_part_is_read(line, item_of(event)), line


def _reads_alike_before_any_part_is_read(line: bytes, expected: Any) -> bool:
    """Each way of reading a whole item, on an item fresh from the Struct, gives what it gives on
    the item from the models; each part is held as a Struct until read, then built once."""
    if expected is None:
        return True
    for name, reads_alike in _FRESH_ITEM_READS.items():
        assert reads_alike(item_of(decode_valid(line)), expected), name  # type: ignore[arg-type]
    made = item_of(decode_valid(line))  # type: ignore[arg-type]
    for name in made.__slots__:  # type: ignore[union-attr]
        part = type(made).__dict__[name]
        if isinstance(part, _ModelPart):
            held = part._slot.__get__(made)
            assert not isinstance(held, BaseModel) and not (isinstance(held, tuple) and held and isinstance(held[0], BaseModel))
            assert getattr(made, name) == getattr(expected, name)
            assert getattr(made, name) is getattr(made, name)  # built once, then kept
    return True


def test_every_item_part_is_built_on_first_read() -> None:
    """The parts an item holds as models are the ones `_ModelPart` builds on first read: a new one
    made eagerly again would be caught here."""
    parts = {
        (cls.__name__, name)
        for cls in (AssistantItem, ToolResultItem, ContextItem, HeaderItem, RequestErrorItem, RetryItem)
        for name in cls.__slots__
        if isinstance(cls.__dict__[name], _ModelPart)
    }
    assert parts == {
        ("AssistantItem", "content"), ("AssistantItem", "usage"), ("ToolResultItem", "error"), ("ContextItem", "message"),
        ("HeaderItem", "header"), ("RequestErrorItem", "failure"), ("RetryItem", "failure"),
    }


_EVERY_PART = {
    "assistant/message": {
        "turn": 1, "step": 1, "route": "r/m", "model": "m", "finish": "stop", "interrupted": True,
        "content": [
            {"type": "text", "text": "hi"}, {"type": "reasoning", "text": "so"},
            {"type": "tool-call", "callId": "c1", "name": "read", "arguments": "{}"},
        ],
        "usage": {"input": 5, "output": 2, "cacheRead": 0, "reasoning": 3, "cacheWrite": 4},
    },
    "tool/result": {
        "turn": 1, "step": 1, "callId": "c1", "name": "read", "content": "no", "isError": True,
        "error": {"code": "UNKNOWN_TOOL", "message": "read"},
    },
    "agent/request-error": {
        "turn": 1, "step": 1, "route": "r/m", "failure": {"code": "HTTP", "message": "m", "status": 500, "retryAfterMs": 9},
    },
    "llm/retry": {"turn": 1, "step": 1, "retry": 1, "maxRetries": 3, "delayMs": 10, "failure": {"code": "TIMEOUT", "message": "m"}},
    "developer/message": {"source": "tool-registry", "id": "d1", "additions": [{"name": "read", "headerSeq": 3}], "removals": ["old"]},
}


@pytest.mark.parametrize("type_", _EVERY_PART)
def test_each_kind_of_part_reads_as_the_models_before_and_after_it_is_built(type_: str) -> None:
    """Every part built on first read (content and usage, a tool error, a failure, a developer
    message; a header is in every generated log), its optional fields present."""
    line = json.dumps({"type": type_, "seq": 4, "time": 1, "data": _EVERY_PART[type_]}, separators=(",", ":")).encode()
    assert _msgspec_accepts(line) and _pydantic_accepts(line)
    assert _same_item(line)


def _fields(part: Any) -> Any:
    """A part's fields and values, whichever kind holds them (a Struct or a model)."""
    if isinstance(part, tuple):
        return [_fields(item) for item in part]
    if isinstance(part, msgspec.Struct):
        names = [field.name for field in msgspec.structs.fields(part)]
    elif isinstance(part, BaseModel):
        names = list(type(part).model_fields)
    else:
        return part
    tag = {name: getattr(part, name) for name in ("type", "source") if hasattr(part, name)}
    return {**tag, **{name: _fields(getattr(part, name)) for name in names}}


@pytest.mark.parametrize("type_", _EVERY_PART)
def test_what_the_chat_draws_of_an_item_is_read_from_its_struct_as_from_the_models(type_: str) -> None:
    """A resumed chat draws its blocks from an item's text, reasoning, tool calls, tool change and
    stored parts (`stored_part`) without building any model: each gives what the item from the
    models gives, and every part is still the Struct afterwards."""
    line = json.dumps({"type": type_, "seq": 4, "time": 1, "data": _EVERY_PART[type_]}, separators=(",", ":")).encode()
    made, expected = item_of(decode_valid(line)), item_of(decode_event_line(line))  # type: ignore[arg-type]
    if isinstance(expected, AssistantItem):
        assert (made.text, made.reasoning) == (expected.text, expected.reasoning) == ("hi", "so")  # type: ignore[union-attr]
        assert _fields(made.call_parts) == _fields(expected.tool_calls) != []  # type: ignore[union-attr]
    if isinstance(expected, ContextItem):
        assert made.is_tool_change is expected.is_tool_change is True  # type: ignore[union-attr]
    for name in made.__slots__:  # type: ignore[union-attr]
        if isinstance(type(made).__dict__[name], _ModelPart):
            assert _fields(stored_part(made, name)) == _fields(getattr(expected, name)), name
            assert isinstance(stored_part(made, name), (msgspec.Struct, tuple, type(None))), name
    assert made == expected


@pytest.mark.parametrize("value", [4, 0, None, -1, "4", 4.5, True, [4], {"n": 4}])
def test_a_usages_cache_write_is_judged_alike(value: object) -> None:
    """`cacheWrite` (the Anthropic wire's cache writes) is optional: a count, or absent, or null."""
    usage = {"input": 5, "output": 2, "cacheRead": 0, "reasoning": 3, "cacheWrite": value}
    data = {**_EVERY_PART["assistant/message"], "usage": usage}
    line = json.dumps({"type": "assistant/message", "seq": 4, "time": 1, "data": data}, separators=(",", ":")).encode()
    assert _pydantic_accepts(line) is (value is None or (type(value) is int and value >= 0))
    if _msgspec_accepts(line):
        assert _pydantic_accepts(line) and _same_event(line) and _same_model(line)
    else:
        assert not _pydantic_accepts(line)

"""The wire types and the translator agree: the translator never rejects a chunk the types accept,
and reads it the way the typed model does. The types admit `null` identity (seed 004)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llm_stream_support import translate
from pydantic import ValidationError

from app.llm.deepseek.wire import WireChunk, WireToolCallDelta
from app.llm.errors import MALFORMED_RESPONSE
from app.llm.stream import BlockDelta, BlockEnd, BlockStart, Finish

ABSENT = object()


def _members(**members: object) -> dict:
    return {key: value for key, value in members.items() if value is not ABSENT}


# Each chunk draws its members either from values the types accept or from anything at all, so
# both sides of the agreement are exercised often.
VALID = {
    "text": [ABSENT, None, "", "a", "call_1", "grep", "流"],
    "index": [0, 0, 1, 2],
    "choice_index": [0, 0, 1, ABSENT],
    "finish": [ABSENT, None, "stop"],
    "usage": [ABSENT, None, {"prompt_tokens": 3}, {"prompt_tokens_details": {"cached_tokens": 2}}],
}
ANY = {
    "text": [*VALID["text"], 0, True, 1.0, [], {}],
    "index": [*VALID["index"], ABSENT, None, "1", 1.0, True],
    "choice_index": [*VALID["choice_index"], "0", None],
    "finish": [*VALID["finish"], 3],
    "usage": [*VALID["usage"], 5],
}


@st.composite
def chunks(draw: st.DrawFn) -> dict:
    pool = draw(st.sampled_from([VALID, ANY]))

    def pick(kind: str) -> object:
        return draw(st.sampled_from(pool[kind]))

    def fragment() -> object:
        function = _members(name=pick("text"), arguments=pick("text"))
        item = _members(index=pick("index"), id=pick("text"), type="function", function=function)
        return item if pool is VALID else draw(st.sampled_from([item, item, item, "x", 3, {"index": 0, "function": "f"}]))

    tool_calls = [fragment() for _ in range(draw(st.integers(0, 3)))]
    delta = _members(content=pick("text"), reasoning_content=pick("text"), reasoning=pick("text"), tool_calls=tool_calls if draw(st.booleans()) else ABSENT)
    choice = _members(index=pick("choice_index"), delta=delta, finish_reason=pick("finish"))
    choices = [choice] if pool is VALID else draw(st.sampled_from([[choice], [choice, choice], [], None, "x", ["x"]]))
    return _members(choices=choices, usage=pick("usage"))


def typed_reading(model: WireChunk) -> tuple[list[tuple[str, str]], list[tuple[str | None, str | None, str]]]:
    """What one chunk says, read through the typed model with seed 004's identity rule."""
    deltas: list[tuple[str, str]] = []
    calls: dict[int, list] = {}
    for choice in model.choices or []:
        if choice.index != 0 or choice.delta is None:
            continue
        reasoning = choice.delta.reasoning_content or choice.delta.reasoning
        if reasoning:
            deltas.append(("reasoning", reasoning))
        if choice.delta.content:
            deltas.append(("text", choice.delta.content))
        for position, fragment in enumerate(choice.delta.tool_calls or []):
            name = fragment.function.name if fragment.function else None
            arguments = fragment.function.arguments if fragment.function else None
            index = position if fragment.index is None else fragment.index
            if index not in calls:
                if not (fragment.id or name or arguments):
                    continue
                calls[index] = [None, None, ""]
            call = calls[index]
            call[0] = fragment.id or call[0]
            call[1] = name or call[1]
            if arguments:
                call[2] += arguments
                deltas.append(("tool-call", arguments))
    return deltas, [tuple(call) for call in calls.values()]


def translator_reading(events: list) -> tuple[list[tuple[str, str]], list[tuple[str | None, str | None, str]]]:
    kinds = {event.index: event.kind for event in events if isinstance(event, BlockStart)}
    deltas = [(kinds[event.index], event.text) for event in events if isinstance(event, BlockDelta)]
    ends = {event.index: event for event in events if isinstance(event, BlockEnd)}
    calls = []
    for start in (event for event in events if isinstance(event, BlockStart) and event.kind == "tool-call"):
        end = ends.get(start.index)
        arguments = "".join(e.text for e in events if isinstance(e, BlockDelta) and e.index == start.index)
        calls.append((end.call_id, end.name, end.arguments) if end else (None, None, arguments))
    return deltas, calls


@pytest.mark.slow(seconds=9)
@settings(max_examples=1500, deadline=None)
@given(chunks())
def test_the_translator_accepts_what_the_wire_types_accept_and_reads_it_alike(chunk):
    events = translate([json.dumps(chunk), "[DONE]"])
    finish = events[-1]
    assert isinstance(finish, Finish)
    try:
        model = WireChunk.model_validate(chunk)
    except ValidationError:
        return  # the translator may be more lenient (non-string identity is ignored, not fatal)
    assert finish.failure is None or finish.failure.code != MALFORMED_RESPONSE, (chunk, finish)
    deltas, calls = typed_reading(model)
    ours_deltas, ours_calls = translator_reading(events)
    assert ours_deltas == deltas
    if finish.reason == "error":  # a call without identity is never closed: compare arguments only
        calls = [(None, None, arguments) for _id, _name, arguments in calls]
        ours_calls = [(None, None, arguments) for _id, _name, arguments in ours_calls]
    assert ours_calls == calls


@pytest.mark.parametrize("member", ["id", "name", "arguments"])
def test_the_types_admit_null_identity_and_arguments(member):
    fragment = {"index": 0, "id": "call_1", "function": {"name": "grep", "arguments": "{}"}}
    if member == "id":
        fragment["id"] = None
    else:
        fragment["function"][member] = None
    assert WireToolCallDelta.model_validate(fragment).index == 0


def test_the_types_keep_unknown_members_and_refuse_a_loose_index():
    model = WireChunk.model_validate({"choices": [{"delta": {"content": "x", "logprobs": None}}], "system_fingerprint": "fp"})
    assert model.model_extra == {"system_fingerprint": "fp"}
    with pytest.raises(ValidationError):
        WireToolCallDelta.model_validate({"index": "0"})

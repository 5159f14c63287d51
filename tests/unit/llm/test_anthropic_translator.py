"""AnthropicTranslator: the Messages stream under the same contract and identity rules (seed 004),
then a fuzz of odd values and odd events that must never break the contract."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llm_stream_support import assemble

from app.llm.anthropic.translator import AnthropicTranslator
from app.llm.errors import (
    CONTEXT_WINDOW_EXCEEDED,
    EMPTY_RESPONSE,
    MALFORMED_RESPONSE,
    MALFORMED_TOOL_CALL,
    RATE_LIMIT,
    SERVER,
    STREAM_CLOSED,
)
from app.llm.stream import BlockDelta, BlockEnd, BlockStart, Finish, StreamEvent, UsageReport, check_stream

Event = tuple[str, str]


def sse(kind: str, **fields: Any) -> Event:
    return kind, json.dumps({"type": kind, **fields})


def message_start(**usage: int) -> Event:
    return sse("message_start", message={"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": usage})


def block_start(index: int, block: dict) -> Event:
    return sse("content_block_start", index=index, content_block=block)


def delta(index: int, **fields: Any) -> Event:
    return sse("content_block_delta", index=index, delta=fields)


def stop(index: int) -> Event:
    return sse("content_block_stop", index=index)


def message_delta(stop_reason: str | None, **usage: int) -> Event:
    return sse("message_delta", delta={"stop_reason": stop_reason, "stop_sequence": None}, usage=usage)


MESSAGE_STOP = sse("message_stop")


def text_block(index: int, *pieces: str) -> list[Event]:
    return [block_start(index, {"type": "text", "text": ""}), *(delta(index, type="text_delta", text=p) for p in pieces), stop(index)]


def tool_block(index: int, id: Any, name: Any, *pieces: str) -> list[Event]:
    return [
        block_start(index, {"type": "tool_use", "id": id, "name": name, "input": {}}),
        *(delta(index, type="input_json_delta", partial_json=p) for p in pieces),
        stop(index),
    ]


def translate(events: list[Event], *, eof: bool = True) -> list[StreamEvent]:
    translator = AnthropicTranslator()
    out: list[StreamEvent] = []
    for name, data in events:
        out += translator.feed(name, data)
    if eof:
        out += translator.end_of_stream()
    return out


def test_a_full_response_with_thinking_text_and_a_tool_call():
    events = translate(
        [
            message_start(input_tokens=100, output_tokens=1, cache_read_input_tokens=50, cache_creation_input_tokens=10),
            sse("ping"),
            block_start(0, {"type": "thinking", "thinking": ""}),
            delta(0, type="thinking_delta", thinking="Let me "),
            delta(0, type="thinking_delta", thinking="think."),
            delta(0, type="signature_delta", signature="EqQBCgIYAhIM"),
            stop(0),
            *text_block(1, "I'll ", "look."),
            *tool_block(2, "toolu_01", "grep", '{"pattern"', ': "x"}'),
            message_delta("tool_use", output_tokens=30),
            MESSAGE_STOP,
        ]
    )
    assert events == [
        BlockStart(0, "reasoning"),
        BlockDelta(0, "Let me "),
        BlockDelta(0, "think."),
        BlockEnd(0),
        BlockStart(1, "text"),
        BlockDelta(1, "I'll "),
        BlockDelta(1, "look."),
        BlockEnd(1),
        BlockStart(2, "tool-call", "toolu_01", "grep"),
        BlockDelta(2, '{"pattern"'),
        BlockDelta(2, ': "x"}'),
        BlockEnd(2, "toolu_01", "grep", '{"pattern": "x"}'),
        UsageReport(input=160, output=30, cache_read=50, reasoning=0, cache_write=10),
        Finish("tool-calls"),
    ]


def test_an_empty_text_block_opens_nothing_and_alone_is_an_empty_response():
    events = translate([message_start(input_tokens=5), *text_block(0), message_delta("end_turn", output_tokens=0), MESSAGE_STOP])
    result = assemble(events)
    assert result.starts == []
    assert result.code == EMPTY_RESPONSE
    assert events[-2] == UsageReport(5, 0, 0, 0)


@pytest.mark.parametrize(
    ("tool_id", "name", "missing"),
    [("", "grep", "id"), (None, "grep", "id"), ("toolu_1", "", "name"), ("toolu_1", None, "name"), (None, None, "id / name"), (7, ["grep"], "id / name")],
)
def test_a_tool_use_without_identity_fails_at_message_stop(tool_id, name, missing):
    translator = AnthropicTranslator()
    before: list[StreamEvent] = []
    for event in [message_start(input_tokens=10), *text_block(0, "Looking."), *tool_block(1, tool_id, name, "{}"), message_delta("tool_use", output_tokens=4)]:
        before += translator.feed(*event)
    at_stop = translator.feed(*MESSAGE_STOP)
    result = assemble(before + at_stop)
    assert result.code == MALFORMED_TOOL_CALL
    assert result.finish.failure.message == f"Tool call 1 ended without a non-empty {missing}."
    assert at_stop == [UsageReport(10, 4, 0, 0), result.finish]
    assert [end.index for end in result.ends] == [0]  # the text's; never the call's


def test_parallel_tool_uses_each_keep_their_identity():
    result = assemble(
        translate([message_start(), *tool_block(0, "toolu_a", "read", '{"p":1}'), *tool_block(1, "toolu_b", "grep"), message_delta("tool_use"), MESSAGE_STOP])
    )
    assert result.calls == [("toolu_a", "read", '{"p":1}'), ("toolu_b", "grep", "{}")]


def test_input_given_whole_at_the_start_is_the_arguments():
    events = [message_start(), block_start(0, {"type": "tool_use", "id": "t", "name": "now", "input": {"tz": "UTC"}}), stop(0), message_delta("tool_use"), MESSAGE_STOP]
    assert assemble(translate(events)).calls == [("t", "now", '{"tz": "UTC"}')]


@pytest.mark.parametrize(
    ("stop_reason", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "max-tokens"),
        ("model_context_window_exceeded", "max-tokens"),
        ("pause_turn", "stop"),
        ("refusal", "stop"),
        (None, "stop"),
    ],
)
def test_stop_reasons(stop_reason, finish):
    assert assemble(translate([message_start(), *text_block(0, "x"), message_delta(stop_reason), MESSAGE_STOP])).finish == Finish(finish)


def test_tool_use_stop_reason_with_calls_is_tool_calls_and_without_them_is_stop():
    with_call = translate([message_start(), *tool_block(0, "t", "now"), message_delta("tool_use"), MESSAGE_STOP])
    without = translate([message_start(), *text_block(0, "x"), message_delta("tool_use"), MESSAGE_STOP])
    assert (with_call[-1], without[-1]) == (Finish("tool-calls"), Finish("stop"))


@pytest.mark.parametrize(
    ("error", "code"),
    [
        ({"type": "overloaded_error", "message": "Overloaded"}, SERVER),
        ({"type": "api_error", "message": "Internal server error"}, SERVER),
        ({"type": "rate_limit_error", "message": "Number of requests has exceeded your rate limit"}, RATE_LIMIT),
        ({"type": "invalid_request_error", "message": "prompt is too long: 208000 tokens > 200000 maximum"}, CONTEXT_WINDOW_EXCEEDED),
    ],
)
def test_an_error_event_ends_with_its_mapped_failure(error, code):
    events = translate([message_start(input_tokens=3), *text_block(0, "par"), sse("error", error=error), *text_block(1, "ignored")])
    result = assemble(events)
    assert result.code == code
    assert error["message"] in result.finish.failure.message
    assert events[-2] == UsageReport(3, 0, 0, 0)


def test_eof_before_message_stop_is_stream_closed():
    events = translate([message_start(input_tokens=7), block_start(0, {"type": "text", "text": ""}), delta(0, type="text_delta", text="cut")])
    result = assemble(events)
    assert result.code == STREAM_CLOSED
    assert events[-2:] == [UsageReport(7, 0, 0, 0), result.finish]


@pytest.mark.parametrize(
    "bad",
    [
        ("message_start", "{oops"),
        ("content_block_delta", "[1, 2]"),
        delta(5, type="text_delta", text="no such block"),
        block_start(0, {"type": "text", "text": ""}),  # a second start for index 0
        delta(0, type="input_json_delta", partial_json="{}"),  # arguments for a text block
        sse("content_block_stop"),  # no index
        sse("message_delta", delta="end_turn"),
    ],
)
def test_malformed_events(bad):
    result = assemble(translate([message_start(), block_start(0, {"type": "text", "text": ""}), bad]))
    assert result.code == MALFORMED_RESPONSE


def test_other_block_types_are_skipped_with_their_deltas():
    events = [
        message_start(),
        block_start(0, {"type": "redacted_thinking", "data": "EmwKAhgB"}),
        delta(0, type="thinking_delta", thinking="hidden"),
        stop(0),
        *text_block(1, "Hi"),
        message_delta("end_turn"),
        MESSAGE_STOP,
    ]
    result = assemble(translate(events))
    assert (result.text, result.reasoning, [s.kind for s in result.starts]) == ("Hi", "", ["text"])


def test_server_tool_blocks_mixed_with_tool_use_are_skipped_and_only_the_client_call_closes():
    # Shaped like a tool-search stream: the provider's own tool runs between two texts, then a client call.
    events = [
        message_start(input_tokens=40),
        *text_block(0, "Searching."),
        block_start(1, {"type": "server_tool_use", "id": "srvtoolu_01", "name": "tool_search_tool_regex", "input": {}}),
        delta(1, type="input_json_delta", partial_json='{"pattern": "rate"}'),
        stop(1),
        block_start(2, {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_01", "content": {"type": "tool_search_tool_search_result", "tool_references": []}}),
        stop(2),
        *text_block(3, "Found it."),
        *tool_block(4, "toolu_02", "get_rate", '{"from": "USD"', ', "to": "EUR"}'),
        message_delta("tool_use", output_tokens=20),
        MESSAGE_STOP,
    ]
    result = assemble(translate(events))
    assert result.text == "Searching.Found it."
    assert result.calls == [("toolu_02", "get_rate", '{"from": "USD", "to": "EUR"}')]
    assert result.finish == Finish("tool-calls")


def test_redacted_thinking_blocks_show_nothing_and_keep_the_text():
    events = [
        message_start(input_tokens=9),
        block_start(0, {"type": "redacted_thinking", "data": "EqkECkYIBxgC"}),
        stop(0),
        block_start(1, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3"}),
        stop(1),
        *text_block(2, "The answer ", "is 4."),
        message_delta("end_turn", output_tokens=88),
        MESSAGE_STOP,
    ]
    result = assemble(translate(events))
    assert (result.reasoning, result.text, result.finish) == ("", "The answer is 4.", Finish("stop"))


def test_a_tool_use_whose_only_fragment_is_empty_has_empty_object_arguments():
    events = [message_start(), *text_block(0, "Updating."), *tool_block(1, "toolu_03", "update_list", ""), message_delta("tool_use"), MESSAGE_STOP]
    assert assemble(translate(events)).calls == [("toolu_03", "update_list", "{}")]


def test_max_tokens_mid_tool_json_closes_the_call_cut_off_and_finishes_max_tokens():
    # No `content_block_stop` for the call: the output limit cut it mid-JSON.
    events = [
        message_start(input_tokens=30),
        *text_block(0, "Writing the file."),
        block_start(1, {"type": "tool_use", "id": "toolu_04", "name": "make_file", "input": {}}),
        delta(1, type="input_json_delta", partial_json=""),
        delta(1, type="input_json_delta", partial_json='{"filename": "taxes.txt'),
        delta(1, type="input_json_delta", partial_json='", "lines": ["Filing'),
        message_delta("max_tokens", output_tokens=124),
        MESSAGE_STOP,
    ]
    result = assemble(translate(events))
    assert result.finish == Finish("max-tokens")
    (end,) = [end for end in result.ends if end.call_id]
    assert (end.call_id, end.arguments, end.cut_off) == ("toolu_04", '{"filename": "taxes.txt", "lines": ["Filing', True)


def test_max_tokens_right_after_a_tool_use_starts_is_cut_off_even_with_object_arguments():
    events = [message_start(), block_start(0, {"type": "tool_use", "id": "toolu_05", "name": "run", "input": {}}), message_delta("max_tokens"), MESSAGE_STOP]
    (end,) = assemble(translate(events)).ends
    assert (end.arguments, end.cut_off) == ("{}", True)


def test_max_tokens_after_a_finished_tool_use_keeps_it_whole():
    events = [message_start(), *tool_block(0, "toolu_06", "run", "{}"), message_delta("max_tokens"), MESSAGE_STOP]
    result = assemble(translate(events))
    assert result.finish == Finish("max-tokens") and [end.cut_off for end in result.ends] == [False]


@pytest.mark.parametrize("kind", ["text", "thinking", "tool_use"])
def test_a_surrogate_pair_split_across_deltas_is_joined_and_a_lone_one_replaced(kind):
    if kind == "tool_use":
        start = block_start(0, {"type": "tool_use", "id": "toolu_07", "name": "say", "input": {}})
        pieces = ['{"t": "\\ud83d', '\\ude00 \\ude00"}']
        fragments = [("content_block_delta", '{"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "%s"}}' % p.replace('"', '\\"')) for p in pieces]
    else:
        field, delta_type = ("text", "text_delta") if kind == "text" else ("thinking", "thinking_delta")
        start = block_start(0, {"type": kind, field: ""})
        pieces = ["a\\ud83d", "\\ude00 \\ude00"]
        fragments = [("content_block_delta", '{"type": "content_block_delta", "index": 0, "delta": {"type": "%s", "%s": "%s"}}' % (delta_type, field, p)) for p in pieces]
    result = assemble(translate([message_start(), start, *fragments, stop(0), message_delta("end_turn"), MESSAGE_STOP]))
    produced = result.calls[0][2] if result.calls else result.text + result.reasoning
    assert produced == ('{"t": "\U0001f600 \ufffd"}' if kind == "tool_use" else "a\U0001f600 \ufffd")


def test_unknown_events_and_delta_kinds_are_ignored():
    events = [
        message_start(),
        sse("future_event", x=1),
        block_start(0, {"type": "text", "text": ""}),
        delta(0, type="citations_delta", citation={}),
        delta(0, type="text_delta", text="ok"),
        stop(0),
        message_delta("end_turn"),
        MESSAGE_STOP,
    ]
    assert assemble(translate(events)).text == "ok"


def test_the_event_name_is_used_when_the_payload_has_no_type():
    events = [("message_start", json.dumps({"message": {"usage": {"input_tokens": 2}}})), *text_block(0, "x"), ("message_stop", "{}")]
    out = translate(events)
    assert out[-2:] == [UsageReport(2, 0, 0, 0), Finish("stop")]


def test_text_in_the_block_start_counts():
    events = [message_start(), block_start(0, {"type": "text", "text": "Hello"}), delta(0, type="text_delta", text="!"), stop(0), MESSAGE_STOP]
    assert assemble(translate(events)).text == "Hello!"


def test_nothing_follows_the_finish():
    translator = AnthropicTranslator()
    for event in [message_start(), *text_block(0, "x"), MESSAGE_STOP]:
        translator.feed(*event)
    assert translator.finished
    assert translator.feed(*sse("error", error={"type": "api_error", "message": "late"})) == []
    assert translator.end_of_stream() == []


# --- fuzz: odd values inside well-ordered blocks, and odd events anywhere ----------------------------

ODD = [None, "", 0, 7, -1, [], {}, "x", ["a"], {"type": "text"}]
odd = st.sampled_from(ODD)
event_names = st.sampled_from(["message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop", "error", "ping", "other"])
text_blocks = st.builds(lambda text: {"type": "text", "text": text}, st.sampled_from(["", "hi", None]))
thinking_blocks = st.builds(lambda text: {"type": "thinking", "thinking": text}, st.sampled_from(["", "hm", 3]))
tool_blocks = st.builds(
    lambda id_, name: {"type": "tool_use", "id": id_, "name": name, "input": {}},
    st.sampled_from(["toolu_1", "toolu_1", "", None, 5]),
    st.sampled_from(["grep", "grep", "", None, []]),
)
other_blocks = st.builds(lambda kind: {"type": kind}, st.sampled_from(["redacted_thinking", "server_tool_use", 3, ["text"]]))
text_deltas = st.builds(lambda text: {"type": "text_delta", "text": text}, st.sampled_from(["a", "", None, 1]))
thinking_deltas = st.builds(lambda text: {"type": "thinking_delta", "thinking": text}, st.sampled_from(["b", ""]))
json_deltas = st.builds(lambda text: {"type": "input_json_delta", "partial_json": text}, st.sampled_from(['{"a":', "1}", "", None]))
other_deltas = st.builds(lambda kind: {"type": kind}, st.sampled_from(["signature_delta", "citations_delta", [], None]))
blocks = st.one_of(text_blocks, thinking_blocks, tool_blocks, other_blocks, odd)
deltas = st.one_of(text_deltas, thinking_deltas, json_deltas, other_deltas, odd)
BLOCKS_WITH_DELTAS = [(text_blocks, text_deltas), (thinking_blocks, thinking_deltas), (tool_blocks, json_deltas), (other_blocks, other_deltas)]


@st.composite
def odd_events(draw: st.DrawFn) -> Event:
    kind = draw(event_names)
    fields: dict[str, Any] = {"index": draw(st.sampled_from([0, 1, 5, "0", None])), "content_block": draw(blocks), "delta": draw(deltas)}
    if kind == "message_start":
        fields = {"message": draw(st.sampled_from([{"usage": {"input_tokens": 4, "cache_read_input_tokens": 2}}, {"usage": 3}, {}, "x"]))}
    elif kind == "message_delta":
        fields = {"delta": draw(st.sampled_from([{"stop_reason": r} for r in ("end_turn", "tool_use", "max_tokens", None, 4)] + ["x"])), "usage": draw(st.sampled_from([{"output_tokens": 9}, None, 2]))}
    elif kind == "error":
        fields = {"error": draw(st.sampled_from([{"type": "overloaded_error", "message": "Overloaded"}, {"type": ["x"]}, "boom", None]))}
    payload = {"type": kind, **fields} if draw(st.integers(0, 5)) else draw(st.sampled_from(ODD))
    return kind, draw(st.sampled_from([json.dumps(payload)] * 5 + ["{", ""]))


@st.composite
def anthropic_streams(draw: st.DrawFn) -> list[Event]:
    """Well-ordered blocks with odd values inside, and now and then an odd event anywhere."""
    events = [message_start(input_tokens=draw(st.sampled_from([0, 12])))]
    for index in range(draw(st.integers(0, 3))):
        block_kind, delta_kind = draw(st.sampled_from(BLOCKS_WITH_DELTAS))
        events.append(block_start(index, draw(block_kind)))
        for _ in range(draw(st.integers(0, 3))):
            events.append(sse("content_block_delta", index=index, delta=draw(delta_kind if draw(st.integers(0, 9)) else deltas)))
        if draw(st.integers(0, 9)):
            events.append(stop(index))
    events.append(message_delta(draw(st.sampled_from(["end_turn", "tool_use", "max_tokens", None])), output_tokens=3))
    if draw(st.integers(0, 9)):
        events.append(MESSAGE_STOP)
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):
        events.insert(draw(st.integers(0, len(events))), draw(odd_events()))
    return events


@pytest.mark.slow(seconds=10)
@settings(max_examples=2000, deadline=None)
@given(anthropic_streams())
def test_any_event_sequence_keeps_the_contract(events):
    out = translate(events)
    check_stream(out)
    for event in out:
        if isinstance(event, BlockEnd) and event.call_id is not None:
            assert (event.call_id, event.name) == ("toolu_1", "grep")

"""DeepSeekTranslator: every case of seed 004 and of docs/architecture.md §9."""

from __future__ import annotations

import json

import pytest
from llm_stream_support import assemble, call, chunk, translate, usage_chunk

from app.llm.deepseek.translator import DeepSeekTranslator
from app.llm.errors import (
    EMPTY_RESPONSE,
    MALFORMED_RESPONSE,
    MALFORMED_TOOL_CALL,
    RATE_LIMIT,
    SERVER,
    STREAM_CLOSED,
)
from app.llm.stream import BlockDelta, BlockEnd, BlockStart, Finish, UsageReport

DONE = "[DONE]"
USAGE = usage_chunk(prompt_tokens=100, completion_tokens=20, prompt_cache_hit_tokens=60)


# --- seed 004: identity --------------------------------------------------------------------------


def test_empty_continuation_deltas_keep_the_identity():
    result = assemble(
        translate(
            [
                call(0, id="call_1", name="grep", arguments=""),
                call(0, id="", name="", arguments='{"pattern":'),
                call(0, id="", name="", arguments=' "x"}'),
                chunk(finish="tool_calls"),
                DONE,
            ]
        )
    )
    assert result.calls == [("call_1", "grep", '{"pattern": "x"}')]
    assert result.finish == Finish("tool-calls")


def test_null_continuation_deltas_keep_the_identity():
    result = assemble(
        translate(
            [
                call(0, id="call_1", name="Glob", arguments="{"),
                call(0, null_id=True, null_name=True, arguments="}"),
                call(0, null_id=True, null_name=True, null_arguments=True),
                chunk(finish="tool_calls"),
                DONE,
            ]
        )
    )
    assert result.calls == [("call_1", "Glob", "{}")]  # not "Globnull", not ""


def test_a_repeated_identical_identity_is_not_concatenated():
    result = assemble(
        translate(
            [
                call(0, id="call_1", name="grep", arguments='{"a"'),
                call(0, id="call_1", name="grep", arguments=":1}"),
                call(0, id="call_1", name="grep"),
                chunk(finish="tool_calls"),
                DONE,
            ]
        )
    )
    assert result.calls == [("call_1", "grep", '{"a":1}')]


@pytest.mark.parametrize("odd", [0, 7, True, [], ["x"], {}, {"a": 1}, 1.5])
def test_non_string_identity_keeps_the_established_value(odd):
    result = assemble(
        translate(
            [
                call(0, id="call_1", name="grep", arguments="{"),
                json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": odd, "function": {"name": odd, "arguments": "}"}}]}}]}),
                chunk(finish="tool_calls"),
                DONE,
            ]
        )
    )
    assert result.calls == [("call_1", "grep", "{}")]


def test_parallel_calls_each_keep_their_identity_under_empty_continuations():
    result = assemble(
        translate(
            [
                call(0, id="call_a", name="read", arguments=""),
                call(1, id="call_b", name="grep", arguments=""),
                call(0, id="", name="", arguments='{"p":1}'),
                call(1, null_id=True, null_name=True, arguments='{"q":2}'),
                call(2, id="call_c", name="time", arguments="{}"),
                call(1, id="", name="", arguments=""),
                call(0, null_id=True, name=""),
                chunk(finish="tool_calls"),
                DONE,
            ]
        )
    )
    assert result.calls == [("call_a", "read", '{"p":1}'), ("call_b", "grep", '{"q":2}'), ("call_c", "time", "{}")]


def test_parallel_calls_in_one_chunk_are_told_apart_by_index():
    both = json.dumps(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {"index": 1, "id": "call_b", "function": {"name": "grep", "arguments": "{}"}},
                            {"index": 0, "id": "call_a", "function": {"name": "read", "arguments": "{}"}},
                        ]
                    },
                }
            ]
        }
    )
    result = assemble(translate([both, call(0, id="", name="", arguments=""), chunk(finish="tool_calls"), DONE]))
    assert result.calls == [("call_b", "grep", "{}"), ("call_a", "read", "{}")]


@pytest.mark.parametrize(
    ("first", "missing"),
    [
        (call(0, name="grep", arguments='{"a":1}'), "id"),
        (call(0, id="call_1", arguments='{"a":1}'), "name"),
        (call(0, id="", name="", arguments='{"a":1}'), "id / name"),
        (call(0, null_id=True, null_name=True, arguments='{"a":1}'), "id / name"),
    ],
)
def test_a_call_whose_identity_never_arrives_is_never_closed(first, missing):
    translator = DeepSeekTranslator()
    before = []
    for payload in [chunk({"content": "Let me look."}), first, call(0, id="", name="", arguments=""), chunk(finish="tool_calls"), USAGE]:
        before += translator.feed(payload)
    at_done = translator.feed(DONE)
    result = assemble(before + at_done)
    assert result.finish.reason == "error"
    assert result.code == MALFORMED_TOOL_CALL
    assert f"without a non-empty {missing}" in result.finish.failure.message
    assert "Tool call 0 " in result.finish.failure.message
    # At [DONE]: the usage first, then the failure, and no block-end for any open block.
    assert at_done == [UsageReport(100, 20, 60, 0), result.finish]
    # The only block-end ever sent is the text's, closed when the call started; never the call's.
    assert result.ends == [BlockEnd(0)]


def test_the_missing_identity_names_the_index_of_the_call_that_lacks_it():
    events = translate(
        [call(0, id="call_a", name="read", arguments="{}"), call(3, id="call_d", arguments="{}"), chunk(finish="tool_calls"), DONE]
    )
    result = assemble(events)
    assert result.code == MALFORMED_TOOL_CALL
    assert result.finish.failure.message == "Tool call 3 ended without a non-empty name."
    assert result.ends == []  # call_a had its identity, yet nothing is closed once one call lacks it


def test_an_identity_may_arrive_after_the_arguments():
    result = assemble(
        translate([call(0, arguments='{"a"'), call(0, name="grep", arguments=":1}"), call(0, id="call_late"), chunk(finish="tool_calls"), DONE])
    )
    assert result.starts[0] == BlockStart(0, "tool-call", None, None)
    assert result.calls == [("call_late", "grep", '{"a":1}')]


def test_a_later_different_identity_replaces_the_earlier_one():
    # Rejecting a conflicting identity mid-stream was deferred by seed 004; the last non-empty wins.
    result = assemble(translate([call(0, id="call_1", name="grep_files"), call(0, id="call_2"), chunk(finish="tool_calls"), DONE]))
    assert result.calls == [("call_2", "grep_files", "")]


def test_a_first_fragment_with_nothing_usable_opens_nothing():
    events = translate([call(0, id="", name="", arguments=""), call(0, bare=True), chunk({"content": "ok"}, "stop"), DONE])
    result = assemble(events)
    assert [start.kind for start in result.starts] == ["text"]
    assert result.finish == Finish("stop")


# --- docs/architecture.md §9 -------------------------------------------------------------------------------------


def test_an_empty_first_reasoning_chunk_opens_nothing():
    events = translate(
        [chunk({"role": "assistant", "content": "", "reasoning_content": ""}), chunk({"reasoning_content": "Think"}), chunk({"content": "Hi"}, "stop"), DONE]
    )
    assert events == [
        BlockStart(0, "reasoning"),
        BlockDelta(0, "Think"),
        BlockEnd(0),
        BlockStart(1, "text"),
        BlockDelta(1, "Hi"),
        BlockEnd(1),
        Finish("stop"),
    ]


def test_blocks_open_and_close_in_order_when_the_kind_switches():
    events = translate(
        [
            chunk({"reasoning_content": "a"}),
            chunk({"content": "b"}),
            chunk({"reasoning_content": "c"}),
            call(0, id="call_1", name="t", arguments="{}"),
            chunk({"content": "d"}),
            chunk(finish="tool_calls"),
            DONE,
        ]
    )
    result = assemble(events)
    assert [(s.index, s.kind) for s in result.starts] == [(0, "reasoning"), (1, "text"), (2, "reasoning"), (3, "tool-call"), (4, "text")]
    assert [end.index for end in result.ends] == [0, 1, 2, 4, 3]
    assert result.text == "bd" and result.reasoning == "ac"


def test_reasoning_and_content_in_one_delta_keep_reasoning_first():
    result = assemble(translate([chunk({"reasoning_content": "why", "content": "what"}, "stop"), DONE]))
    assert [s.kind for s in result.starts] == ["reasoning", "text"]
    assert (result.reasoning, result.text) == ("why", "what")


@pytest.mark.parametrize(
    "payloads",
    [
        [chunk({"content": ""}, "stop"), DONE],
        [chunk({"role": "assistant", "content": None, "reasoning_content": None}), chunk(finish="stop"), USAGE, DONE],
        [DONE],
        [chunk(finish="tool_calls"), DONE],
    ],
)
def test_stop_with_no_block_is_an_empty_response(payloads):
    result = assemble(translate(payloads))
    assert result.code == EMPTY_RESPONSE


def test_length_with_no_block_is_still_max_tokens():
    assert assemble(translate([chunk(finish="length"), DONE])).finish == Finish("max-tokens")


@pytest.mark.parametrize(
    ("reason", "finish"),
    [("stop", "stop"), ("length", "max-tokens"), ("content_filter", "stop"), (None, "stop"), ("something_new", "stop")],
)
def test_finish_reasons_of_a_text_response(reason, finish):
    assert assemble(translate([chunk({"content": "x"}, reason), DONE])).finish == Finish(finish)


@pytest.mark.parametrize(("reason", "finish"), [("tool_calls", "tool-calls"), ("stop", "tool-calls"), ("length", "max-tokens")])
def test_finish_reasons_of_a_tool_call_response(reason, finish):
    result = assemble(translate([call(0, id="c", name="t", arguments="{}"), chunk(finish=reason), DONE]))
    assert result.finish == Finish(finish)
    assert result.calls == [("c", "t", "{}")]


def test_insufficient_system_resource_is_a_server_failure():
    result = assemble(translate([chunk({"content": "partial"}, "insufficient_system_resource"), DONE]))
    assert result.code == SERVER


def test_eof_without_done_is_stream_closed_with_usage_first():
    events = translate([chunk({"content": "Hello"}, "stop"), USAGE], eof=True)
    result = assemble(events)
    assert result.code == STREAM_CLOSED
    assert events[-2] == UsageReport(100, 20, 60, 0)
    assert not any(isinstance(event, BlockEnd) for event in events)


@pytest.mark.parametrize("junk", ["{not json", '{"choices": [', "nul", "\x00", "[" * 5000 + "]" * 5000])
def test_bad_json_is_a_malformed_response(junk):
    result = assemble(translate([chunk({"content": "Hi"}), junk, DONE]))
    assert result.code == MALFORMED_RESPONSE
    assert result.text == "Hi"


@pytest.mark.parametrize("payload", ["[]", '"text"', "42", "null", "true", '[{"choices": []}]'])
def test_a_non_object_chunk_is_a_malformed_response(payload):
    assert assemble(translate([payload, DONE])).code == MALFORMED_RESPONSE


@pytest.mark.parametrize(
    ("chunk_object", "member"),
    [
        ({"choices": {"index": 0}}, "choices"),
        ({"choices": ["x"]}, "choices[]"),
        ({"choices": [{"index": "0", "delta": {"content": "x"}}]}, "choices[].index"),
        ({"choices": [{"delta": "text"}]}, "choices[].delta"),
        ({"choices": [{"delta": {"tool_calls": {"index": 0}}}]}, "choices[].delta.tool_calls"),
        ({"choices": [{"delta": {"tool_calls": ["x"]}}]}, "tool_calls[]"),
        ({"choices": [{"delta": {"tool_calls": [{"index": "0", "id": "c"}]}}]}, "tool_calls[].index"),
        ({"choices": [{"delta": {"tool_calls": [{"index": 1.0, "id": "c"}]}}]}, "tool_calls[].index"),
        ({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": "t"}]}}]}, "tool_calls[].function"),
        ({"choices": [], "usage": [1, 2]}, "usage"),
    ],
)
def test_mis_shaped_members_are_a_malformed_response_naming_the_member(chunk_object, member):
    result = assemble(translate([json.dumps(chunk_object), DONE]))
    assert result.code == MALFORMED_RESPONSE
    assert f"({member})" in result.finish.failure.message


def test_null_members_are_absent_members():
    payload = json.dumps(
        {"choices": [{"index": 0, "delta": {"content": "x", "reasoning_content": None, "tool_calls": None, "role": None}, "finish_reason": None}], "usage": None, "error": None}
    )
    assert assemble(translate([payload, chunk(finish="stop"), DONE])).text == "x"


def test_usage_after_the_finish_reason_is_reported_once_before_the_finish():
    events = translate(
        [
            chunk({"content": "Hi"}),
            chunk({"content": ""}, "stop"),
            usage_chunk(
                prompt_tokens=1000,
                completion_tokens=300,
                prompt_cache_hit_tokens=800,
                prompt_cache_miss_tokens=200,
                completion_tokens_details={"reasoning_tokens": 120},
            ),
            DONE,
        ]
    )
    assert events[-3:] == [BlockEnd(0), UsageReport(1000, 300, 800, 120), Finish("stop")]


def test_cache_hits_from_openai_style_details_and_junk_counts():
    events = translate(
        [chunk({"content": "x"}, "stop"), usage_chunk(prompt_tokens=50, completion_tokens=-3, prompt_tokens_details={"cached_tokens": 40}), DONE]
    )
    assert events[-2] == UsageReport(50, 0, 40, 0)


def test_the_last_usage_wins_and_is_reported_once():
    events = translate([usage_chunk(prompt_tokens=1), chunk({"content": "x"}, "stop"), usage_chunk(prompt_tokens=9, completion_tokens=2), DONE])
    assert [e for e in events if isinstance(e, UsageReport)] == [UsageReport(9, 2, 0, 0)]


def test_nothing_follows_the_finish():
    translator = DeepSeekTranslator()
    assert translator.feed(chunk({"content": "x"}, "stop"))
    assert translator.feed(DONE)[-1] == Finish("stop")
    assert translator.feed(chunk({"content": "more"})) == []
    assert translator.feed(DONE) == []
    assert translator.end_of_stream() == []


def test_an_error_chunk_ends_with_its_mapped_failure():
    error = json.dumps({"error": {"message": "Rate limit reached, slow down", "type": "rate_limit_error", "code": 429}})
    events = translate([chunk({"content": "Hi"}), USAGE, error, chunk({"content": "ignored"}), DONE])
    result = assemble(events)
    assert result.code == RATE_LIMIT
    assert "slow down" in result.finish.failure.message
    assert result.text == "Hi"


def test_other_choices_are_ignored():
    other = json.dumps({"choices": [{"index": 1, "delta": {"content": "not me"}}, {"index": 0, "delta": {"content": "me"}}]})
    assert assemble(translate([other, chunk(finish="stop"), DONE])).text == "me"


@pytest.mark.parametrize("done", [" [DONE]", "[DONE] ", "[DONE]\n"])
def test_done_with_stray_whitespace_is_done(done):
    assert assemble(translate([chunk({"content": "x"}, "stop"), done])).finish == Finish("stop")


def test_an_empty_payload_is_not_a_chunk():
    assert assemble(translate([chunk({"content": "x"}), "", "  ", chunk(finish="stop"), DONE])).finish == Finish("stop")


def test_abort_and_fail_report_held_usage_and_leave_blocks_open():
    translator = DeepSeekTranslator()
    translator.feed(chunk({"content": "x"}))
    translator.feed(USAGE)
    events = translator.abort()
    assert events == [UsageReport(100, 20, 60, 0), Finish("aborted")]
    assert translator.abort() == [] and translator.end_of_stream() == []


# --- streams as real providers send them (issue 9; hand-written, shaped like the recordings) -------


def bare_call(id: object, name: object, arguments: object) -> dict:
    """A tool-call fragment as Mistral's API sends it: no `index` member."""
    return {"id": id, "function": {"name": name, "arguments": arguments}}


def test_a_call_without_index_is_placed_by_its_position_in_the_array():
    # Mistral: the whole call in one fragment without `index`, finish and usage in the same chunk.
    last = json.loads(chunk({"content": None, "tool_calls": [bare_call("gSIMJiOk", "weather", '{"city": "Oslo"}')]}, "tool_calls"))
    last["usage"] = {"prompt_tokens": 12, "completion_tokens": 3}
    result = assemble(translate([chunk({"role": "assistant", "content": ""}), json.dumps(last), DONE]))
    assert result.finish == Finish("tool-calls")
    assert result.calls == [("gSIMJiOk", "weather", '{"city": "Oslo"}')]
    assert result.usage == UsageReport(12, 3, 0, 0)


def test_calls_without_index_keep_seed_004_identity_rules_by_position():
    result = assemble(
        translate(
            [
                chunk({"tool_calls": [bare_call("call_a", "read", ""), bare_call("call_b", "grep", "")]}),
                chunk({"tool_calls": [bare_call("", None, '{"path":'), bare_call(None, "", '{"q":')]}),
                chunk({"tool_calls": [bare_call(None, None, ' "a"}'), bare_call("", "", ' "b"}')]}),
                chunk(finish="tool_calls"),
                DONE,
            ]
        )
    )
    assert result.calls == [("call_a", "read", '{"path": "a"}'), ("call_b", "grep", '{"q": "b"}')]


def test_a_call_at_index_1_is_the_first_and_only_call():
    # Anthropic's OpenAI-compatible gateway numbers its first call 1 (index 0 was the text).
    result = assemble(
        translate(
            [
                chunk({"role": "assistant", "content": "Reading."}),
                call(1, id="toolu_x", name="read_file", arguments=""),
                call(1, arguments='{"path": "a.txt"}'),
                chunk(finish="tool_calls"),
                DONE,
            ]
        )
    )
    assert result.text == "Reading." and result.calls == [("toolu_x", "read_file", '{"path": "a.txt"}')]


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_comes_from_reasoning_content_or_reasoning(field):
    result = assemble(
        translate(
            [
                chunk({"role": "assistant", "content": "", field: ""}),
                chunk({field: "Two plus two"}),
                chunk({field: " is four.", "channel": "analysis"}),
                chunk({"content": "4"}),
                chunk(finish="stop"),
                DONE,
            ]
        )
    )
    assert (result.reasoning, result.text) == ("Two plus two is four.", "4")
    assert [start.kind for start in result.starts] == ["reasoning", "text"]


def test_openrouter_reasoning_and_reasoning_details_say_the_same_once():
    def both(text: str | None, detail: str) -> str:
        details = [{"type": "reasoning.text", "text": detail, "format": "anthropic-claude-v1", "index": 0}]
        return chunk({"role": "assistant", "content": "", "reasoning": text, "reasoning_details": details})

    signature = [{"type": "reasoning.text", "signature": "Et0BCkgI", "format": "anthropic-claude-v1", "index": 0}]
    result = assemble(
        translate(
            [
                chunk({"role": "assistant", "content": "", "reasoning": None, "reasoning_details": []}),
                both(None, ""),
                both("Simple ", "Simple "),
                both("arithmetic.", "arithmetic."),
                chunk({"content": "", "reasoning": None, "reasoning_details": signature}),
                chunk({"content": "2 + 2 = 4", "reasoning": None, "reasoning_details": []}),
                chunk({"content": ""}, "stop"),
                DONE,
            ]
        )
    )
    assert (result.reasoning, result.text) == ("Simple arithmetic.", "2 + 2 = 4")


def test_reasoning_details_alone_give_their_text_and_summaries():
    details = [
        {"type": "reasoning.summary", "summary": "Plan: ", "index": 0},
        {"type": "reasoning.encrypted", "data": "gAAAAB", "index": 1},
        {"type": "reasoning.text", "text": "add.", "index": 2},
    ]
    result = assemble(translate([chunk({"reasoning_details": details}), chunk({"content": "4"}, "stop"), DONE]))
    assert (result.reasoning, result.text) == ("Plan: add.", "4")


def test_explicit_nulls_and_empty_choices_chunks_are_absent_members():
    # Azure: a first chunk with `choices: []` and empty id/model; DeepSeek on Azure: `null` everywhere.
    first = json.dumps({"id": "", "model": "", "choices": [], "prompt_filter_results": [{"prompt_index": 0}]})
    nulls = {"role": None, "content": "Hi", "reasoning_content": None, "tool_calls": None, "function_call": None, "refusal": None}
    usage = json.dumps({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 1, "completion_tokens_details": None}})
    result = assemble(
        translate([first, chunk(nulls, logprobs=None), chunk({"content": None}, "stop", usage=None), usage, DONE])
    )
    assert result.text == "Hi" and result.finish == Finish("stop") and result.usage == UsageReport(5, 1, 0, 0)


def test_length_with_a_complete_call_closes_it_whole():
    result = assemble(translate([call(0, id="call_1", name="read", arguments="{}"), chunk(finish="length"), DONE]))
    assert result.finish == Finish("max-tokens")
    assert [(end.arguments, end.cut_off) for end in result.ends] == [("{}", False)]


def test_length_mid_arguments_closes_the_call_cut_off():
    result = assemble(
        translate(
            [
                call(0, id="call_1", name="read", arguments='{"path": "a"}'),
                call(1, id="call_2", name="write", arguments='{"path": "b", "content": "lo'),
                call(2, id="call_3", name="list", arguments=""),
                chunk(finish="length"),
                USAGE,
                DONE,
            ]
        )
    )
    assert result.finish == Finish("max-tokens")
    assert [(end.call_id, end.arguments, end.cut_off) for end in result.ends] == [
        ("call_1", '{"path": "a"}', False),
        ("call_2", '{"path": "b", "content": "lo', True),
        ("call_3", "", True),
    ]


# --- UTF-16 surrogates from JSON escapes (issue 8 item 8) ----------------------------------------

HIGH, LOW = "\\ud83d", "\\ude00"
"""The JSON escapes of U+1F600's surrogate pair, as JavaScript gateways split them."""


def raw_chunk(delta_json: str) -> str:
    return '{"choices": [{"index": 0, "delta": %s}]}' % delta_json


@pytest.mark.parametrize("field", ["content", "reasoning_content", "reasoning"])
def test_a_surrogate_pair_split_across_deltas_is_joined(field):
    result = assemble(
        translate(
            [
                raw_chunk('{"%s": "smile %s"}' % (field, HIGH)),
                raw_chunk('{"%s": "%s!"}' % (field, LOW)),
                chunk(finish="stop"),
                DONE,
            ]
        )
    )
    assert result.text + result.reasoning == "smile \U0001f600!"


def test_a_split_pair_in_tool_arguments_is_joined_in_deltas_and_arguments():
    events = translate(
        [
            raw_chunk('{"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "say", "arguments": "{\\"t\\": \\"%s"}}]}' % HIGH),
            raw_chunk('{"tool_calls": [{"index": 0, "function": {"arguments": "%s\\"}"}}]}' % LOW),
            chunk(finish="tool_calls"),
            DONE,
        ]
    )
    result = assemble(events)
    assert result.calls == [("call_1", "say", '{"t": "\U0001f600"}')]
    assert "".join(e.text for e in events if isinstance(e, BlockDelta)) == '{"t": "\U0001f600"}'


def test_lone_surrogates_become_replacement_characters_and_nothing_is_lost():
    result = assemble(
        translate(
            [
                raw_chunk('{"content": "a%sb"}' % LOW),
                raw_chunk('{"content": "c%s"}' % HIGH),
                raw_chunk('{"reasoning_content": "then %s"}' % HIGH),
                raw_chunk('{"content": "%s%s"}' % (HIGH, HIGH)),
                raw_chunk('{"content": "%sz"}' % LOW),
                chunk(finish="stop"),
                DONE,
            ]
        )
    )
    assert result.text == "a\ufffdbc\ufffd\ufffd\U0001f600z"
    assert result.reasoning == "then \ufffd"


def test_a_held_surrogate_is_released_when_the_stream_fails():
    result = assemble(translate([raw_chunk('{"content": "x%s"}' % HIGH)], eof=True))
    assert result.code == STREAM_CLOSED and result.text == "x\ufffd"


def test_surrogates_in_identity_and_error_messages_are_replaced():
    result = assemble(
        translate([raw_chunk('{"tool_calls": [{"index": 0, "id": "c%s", "function": {"name": "n%s", "arguments": "{}"}}]}' % (HIGH, LOW)), chunk(finish="tool_calls"), DONE])
    )
    assert result.calls == [("c\ufffd", "n\ufffd", "{}")]
    failed = assemble(translate(['{"error": {"message": "bad %s", "type": "server_error"}}' % HIGH]))
    assert failed.finish.failure.message.endswith("bad \ufffd")

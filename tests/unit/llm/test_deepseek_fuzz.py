"""Fuzz: whatever chunks arrive, the DeepSeek translator keeps the stream contract (seed 004).

Two thousand generated streams (ten thousand with `TOOLSCOPE_FUZZ_EXAMPLES=10000`, as before a
release) mix well-formed and odd deltas — `null` and `""` identity, non-string
members, parallel calls, usage before and after the finish reason, every finish reason, error
chunks, junk JSON, `[DONE]` early, late or never. For each: `check_stream` passes (one finish, last;
usage before it; only error/aborted leave blocks open; no tool-call end without identity; declared
codes only), and every closed call's identity is one value that was sent, never a concatenation.
"""

from __future__ import annotations

import json
import os
from itertools import product

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.llm.deepseek.translator import DeepSeekTranslator
from app.llm.stream import BlockEnd, BlockStart, StreamEvent, check_stream

IDS = ["call_a", "call_b", "call_c"]
NAMES = ["grep", "read_file", "Glob"]
ABSENT = object()

ID_VALUES = [ABSENT, None, "", 7, {}, *IDS, *IDS]
NAME_VALUES = [ABSENT, None, "", ["grep"], *NAMES, *NAMES]
TEXT_VALUES = [ABSENT, None, "", "a", "hello ", "流式", "🙂", '{"q":', '"x"}', 3]
FINISH_REASONS = [*[None] * 8, "stop", "tool_calls", "tool_calls", "length", "content_filter", "insufficient_system_resource", "odd", 5]
COUNTS = [None, 0, 3, 120, -1, "12", 2.5]


def _member_dict(**members: object) -> dict:
    return {key: value for key, value in members.items() if value is not ABSENT}


# Every combination is built once and drawn by position, so one cheap draw picks a whole fragment
# or delta: hypothesis spends its time on streams, not on members, and 10,000 streams fit in time.
FUNCTIONS = [_member_dict(name=n, arguments=a) for n, a in product(NAME_VALUES, TEXT_VALUES)] + [ABSENT, None]
FRAGMENTS = [_member_dict(index=i, id=c, function=f) for i, c, f in product([0, 0, 1, 2], ID_VALUES, FUNCTIONS)]
DELTAS = [_member_dict(reasoning_content=r, content=c) for r, c in product(TEXT_VALUES, TEXT_VALUES)] + [None]
USAGES = [
    _member_dict(prompt_tokens=p, completion_tokens=c, prompt_cache_hit_tokens=h, prompt_tokens_details=d, completion_tokens_details=r)
    for p, c, h, d, r in product(
        COUNTS, COUNTS[:3], [ABSENT, 5, None], [ABSENT, None, {"cached_tokens": 4}, 3], [ABSENT, {"reasoning_tokens": 9}, {}, "x"]
    )
] + [None, 7]


fragment_lists = st.lists(st.integers(0, len(FRAGMENTS) - 1).map(FRAGMENTS.__getitem__), max_size=3)
deltas = st.integers(0, len(DELTAS) - 1).map(DELTAS.__getitem__)
finish_reasons = st.sampled_from(FINISH_REASONS)


@st.composite
def choice_chunks(draw: st.DrawFn) -> str:
    delta = draw(deltas)
    if isinstance(delta, dict) and draw(st.booleans()):
        delta = {**delta, "tool_calls": draw(fragment_lists)}
    chunk = {"id": "0b7c", "choices": [{"index": 0, "delta": delta, "finish_reason": draw(finish_reasons)}]}
    return json.dumps(chunk)


usage_chunks = st.builds(
    lambda usage, choices: json.dumps({"choices": choices, "usage": usage}),
    st.integers(0, len(USAGES) - 1).map(USAGES.__getitem__),
    st.sampled_from([[], None]),
)

odd_payloads = st.sampled_from(
    [
        '{"choices": [{"index": 1, "delta": {"content": "other choice"}}]}',
        "{",
        "not json",
        "",
        "[]",
        "null",
        '"text"',
        "12",
        '{"choices": "x"}',
        '{"choices": [{"index": 0, "delta": "x"}]}',
        '{"choices": [{"index": 0, "delta": 1}]}',
        '{"choices": [1]}',
        '{"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}',
        '{"error": {"message": "This model\'s maximum context length is 65536 tokens", "code": 400}}',
        '{"error": "overloaded"}',
        '{"error": {"type": ["x"], "code": {}, "message": 5}}',
        '{"choices": [{"delta": {"tool_calls": [{"index": "0", "id": "call_a"}]}}]}',
        '{"choices": [{"delta": {"tool_calls": [{"id": "call_a", "function": {"name": "grep"}}]}}]}',
        '{"choices": [{"delta": {"tool_calls": [{"index": 0, "function": "grep"}]}}]}',
        '{"choices": [{"delta": {"tool_calls": {"index": 0}}}]}',
        "[DONE]",
        " [DONE] ",
    ]
)


@st.composite
def payloads(draw: st.DrawFn) -> str:
    """Mostly choice chunks; one in twenty a usage chunk, one in twenty something odd."""
    kind = draw(st.integers(0, 19))
    if kind == 18:
        return draw(usage_chunks)
    if kind == 19:
        return draw(odd_payloads)
    return draw(choice_chunks())


streams = st.tuples(st.lists(payloads(), max_size=14), st.sampled_from(["done", "done", "done", "eof", "done-then-more"]))


def run(chunks: list[str], ending: str) -> list[StreamEvent]:
    translator = DeepSeekTranslator()
    events: list[StreamEvent] = []
    for payload in chunks:
        events += translator.feed(payload)
    if ending.startswith("done"):
        events += translator.feed("[DONE]")
    if ending == "done-then-more":
        events += translator.feed('{"choices": [{"index": 0, "delta": {"content": "late"}}]}')
    events += translator.end_of_stream()
    return events


# 10,000 held one of CI's two workers for 1–3 minutes; the deeper run is kept for an explicit ask.
EXAMPLES = int(os.environ.get("TOOLSCOPE_FUZZ_EXAMPLES", "2000"))


@pytest.mark.slow(seconds=39)
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams)
def test_any_stream_keeps_the_contract(stream):
    chunks, ending = stream
    events = run(chunks, ending)
    check_stream(events)
    for event in events:
        if isinstance(event, BlockEnd) and event.call_id is not None:
            assert event.call_id in IDS and event.name in NAMES  # one value that was sent, never a concatenation
        if isinstance(event, BlockStart) and event.kind == "tool-call":
            assert event.call_id in (None, *IDS) and event.name in (None, *NAMES)

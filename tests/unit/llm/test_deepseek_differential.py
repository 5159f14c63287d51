"""Differential: the DeepSeek translator against the openai package's `ChatCompletionStreamState`.

On well-formed streams both must assemble the same text, reasoning and calls. Where the official
accumulator concatenates identity (a continuation delta repeating `id`/`name`), the test pins what
it produces and that the translator does not (seed 004).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llm_stream_support import assemble, translate
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

ENVELOPE = {"id": "0b7c", "object": "chat.completion.chunk", "created": 1767225600, "model": "deepseek-v4-flash"}


def chunk(delta: dict, finish: str | None = None) -> dict:
    return {**ENVELOPE, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def openai_result(chunks: list[dict]) -> tuple[str, str, list[tuple[str, str, str]]]:
    state: ChatCompletionStreamState = ChatCompletionStreamState()
    for item in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(item))
    message = state.get_final_completion().choices[0].message
    calls = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]
    return message.content or "", (message.model_extra or {}).get("reasoning_content") or "", calls


def our_result(chunks: list[dict]) -> tuple[str, str, list[tuple[str, str, str]]]:
    result = assemble(translate([json.dumps(item) for item in chunks] + ["[DONE]"]))
    assert result.finish.failure is None, result.finish
    return result.text, result.reasoning, result.calls


pieces = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
names = st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True)


@st.composite
def well_formed_streams(draw: st.DrawFn) -> list[dict]:
    chunks = [chunk({"role": "assistant", "content": "", "reasoning_content": ""})]
    chunks += [chunk({"reasoning_content": piece}) for piece in draw(st.lists(pieces, max_size=5))]
    chunks += [chunk({"content": piece}) for piece in draw(st.lists(pieces, min_size=1, max_size=5))]
    call_count = draw(st.integers(0, 3))
    continuations = []
    for index in range(call_count):
        head = {"index": index, "id": f"call_{index}_{draw(st.integers(0, 10**6))}", "type": "function",
                "function": {"name": draw(names), "arguments": ""}}  # fmt: skip
        chunks.append(chunk({"tool_calls": [head]}))
        continuations += [(index, piece) for piece in draw(st.lists(pieces, max_size=4))]
    # Continuations of parallel calls, interleaved in any order; identity absent, null or empty.
    for index, piece in draw(st.permutations(continuations)):
        fragment: dict = {"index": index, "function": {"arguments": piece}}
        style = draw(st.sampled_from(["absent", "null", "empty"]))
        if style != "absent":
            fragment["id"] = None if style == "null" else ""
            fragment["function"]["name"] = None if style == "null" else ""
        chunks.append(chunk({"tool_calls": [fragment]}))
    chunks.append(chunk({}, "tool_calls" if call_count else "stop"))
    chunks.append({**ENVELOPE, "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}})
    return chunks


@pytest.mark.slow(seconds=8)
@settings(max_examples=300, deadline=None)
@given(well_formed_streams())
def test_well_formed_streams_assemble_like_the_official_accumulator(chunks):
    assert our_result(chunks) == openai_result(chunks)


def test_a_repeated_identity_is_concatenated_by_the_official_accumulator_but_not_here():
    chunks = [
        chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "grep", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "grep", "arguments": '{"q":'}}]}),
        chunk({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "grep", "arguments": '"x"}'}}]}),
        chunk({}, "tool_calls"),
    ]
    assert openai_result(chunks)[2] == [("call_1call_1call_1", "grepgrepgrep", '{"q":"x"}')]
    assert our_result(chunks)[2] == [("call_1", "grep", '{"q":"x"}')]


def test_parallel_calls_repeating_identity_stay_apart_here():
    chunks = [
        chunk({"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "read", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "grep", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "grep", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "read", "arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
    ]
    assert openai_result(chunks)[2] == [("call_acall_a", "readread", "{}"), ("call_bcall_b", "grepgrep", "{}")]
    assert our_result(chunks)[2] == [("call_a", "read", "{}"), ("call_b", "grep", "{}")]

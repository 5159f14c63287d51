"""Streams as real providers send them, through `toolscope run` and a loopback server (issue 9,
issue 8 item 8). Every fixture here is hand-written in the shape of a recorded stream of
`shared/real_streams` (whose replay is `tests/functional/llm/test_real_streams.py`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.agent.loop import ARGUMENTS_CUT_OFF
from app.session.events import ReasoningContent, TextContent, ToolCallContent
from tests.functional.e2e.harness import (
    RouteSpec,
    RunResult,
    Workbench,
    answer,
    events_of,
    frame,
    of_type,
    request_bodies,
    run,
    toolscope_run,
)
from tests.functional.llm.sse_server import Reply, SSEServer, split_every
from tests.support.oracles import assert_valid_anthropic_body

CHAT = RouteSpec("e2e/chat")
ANTHROPIC = RouteSpec("e2e/anthropic", dialect="anthropic-messages")
SMILE = "\U0001f600"
HIGH, LOW = "\ud83d", "\ude00"
"""U+1F600's UTF-16 halves: `json.dumps` writes them as the escapes `\\ud83d` and `\\ude00`."""


def delta_chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": "gen-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def chat_stream(*payloads: dict[str, Any] | str) -> Reply:
    """Each payload one SSE event, the body cut into small pieces (reads end mid-event)."""
    body = b"".join(frame(payload) for payload in payloads) + frame("[DONE]")
    return Reply(pieces=split_every(body, [37, 5, 101]))


def anthropic_stream(*payloads: dict[str, Any]) -> Reply:
    body = b"".join(f"event: {p['type']}\ndata: {json.dumps(p)}\n\n".encode() for p in payloads)
    return Reply(pieces=split_every(body, [37, 5, 101]))


def message_start() -> dict[str, Any]:
    return {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 9, "output_tokens": 1}}}


def block(index: int, content_block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": content_block}


def piece(index: int, **delta: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_end(stop_reason: str) -> list[dict[str, Any]]:
    return [{"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 20}}, {"type": "message_stop"}]


ANTHROPIC_DONE = anthropic_stream(
    message_start(), block(0, {"type": "text", "text": ""}), piece(0, type="text_delta", text="Done."), block_stop(0), *message_end("end_turn")
)


async def turn(bench: Workbench, route: RouteSpec, *replies: Reply, args: tuple[str, ...] = ()) -> tuple[RunResult, SSEServer]:
    async with SSEServer(*replies) as server:
        bench.write_config(server.base_url, [route])
        result = await toolscope_run(bench, *args, "Go.")
    return result, server


def first_message(bench: Workbench) -> tuple[str, str, list[ToolCallContent], str]:
    message = of_type(events_of(bench.only_session()), "assistant/message")[0].data
    text = "".join(p.text for p in message.content if isinstance(p, TextContent))
    reasoning = "".join(p.text for p in message.content if isinstance(p, ReasoningContent))
    return text, reasoning, [p for p in message.content if isinstance(p, ToolCallContent)], message.finish


# --- issue 8 item 8: UTF-16 surrogate pairs split across chunks ------------------------------------


SPLIT_CHAT = chat_stream(
    delta_chunk({"role": "assistant", "content": "", "reasoning_content": f"think {HIGH}"}),
    delta_chunk({"reasoning_content": f"{LOW} hard"}),
    delta_chunk({"content": f"smile {HIGH}"}),
    delta_chunk({"content": f"{LOW}, lone {LOW} and {HIGH}"}),
    delta_chunk({"content": "!"}),
    delta_chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "say", "arguments": f'{{"t": "{HIGH}'}}]}),
    delta_chunk({"tool_calls": [{"index": 0, "function": {"arguments": f'{LOW}"}}'}}]}),
    delta_chunk({}, "tool_calls"),
)
SPLIT_ANTHROPIC = anthropic_stream(
    message_start(),
    block(0, {"type": "thinking", "thinking": ""}),
    piece(0, type="thinking_delta", thinking=f"think {HIGH}"),
    piece(0, type="thinking_delta", thinking=f"{LOW} hard"),
    block_stop(0),
    block(1, {"type": "text", "text": ""}),
    piece(1, type="text_delta", text=f"smile {HIGH}"),
    piece(1, type="text_delta", text=f"{LOW}, lone {LOW} and {HIGH}"),
    piece(1, type="text_delta", text="!"),
    block_stop(1),
    block(2, {"type": "tool_use", "id": "toolu_1", "name": "say", "input": {}}),
    piece(2, type="input_json_delta", partial_json=f'{{"t": "{HIGH}'),
    piece(2, type="input_json_delta", partial_json=f'{LOW}"}}'),
    block_stop(2),
    *message_end("tool_use"),
)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("route", "reply", "follow_up"), [(CHAT, SPLIT_CHAT, answer("Done.")), (ANTHROPIC, SPLIT_ANTHROPIC, ANTHROPIC_DONE)], ids=["chat", "anthropic"])
def test_split_surrogate_pairs_are_joined_and_lone_ones_replaced(bench: Workbench, route, reply, follow_up) -> None:
    result, _server = run(turn(bench, route, reply, follow_up))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert f"smile {SMILE}, lone \ufffd and \ufffd!" in result.stdout
    text, reasoning, calls, finish = first_message(bench)
    assert (text, reasoning, finish) == (f"smile {SMILE}, lone \ufffd and \ufffd!", f"think {SMILE} hard", "tool-calls")
    assert [json.loads(call.arguments) for call in calls] == [{"t": SMILE}]
    (logged_call,) = of_type(events_of(bench.only_session()), "tool/call")
    assert json.loads(logged_call.data.arguments) == {"t": SMILE}


# --- issue 9 item 1: a tool call cut off by the output limit ----------------------------------------


CUT_CHAT = chat_stream(
    delta_chunk({"role": "assistant", "content": "Writing both files."}),
    delta_chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "write_file", "arguments": '{"path": "a.txt", "content": "whole"}'}}]}),
    delta_chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "write_file", "arguments": '{"path": "b.txt", "content": "ha'}}]}),
    delta_chunk({}, "length"),
    {"id": "gen-1", "choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 20}},
)
CUT_ANTHROPIC = anthropic_stream(
    message_start(),
    block(0, {"type": "text", "text": ""}),
    piece(0, type="text_delta", text="Writing both files."),
    block_stop(0),
    block(1, {"type": "tool_use", "id": "toolu_a", "name": "write_file", "input": {}}),
    piece(1, type="input_json_delta", partial_json=""),
    piece(1, type="input_json_delta", partial_json='{"path": "a.txt", "content": "whole"}'),
    block_stop(1),
    block(2, {"type": "tool_use", "id": "toolu_b", "name": "write_file", "input": {}}),
    piece(2, type="input_json_delta", partial_json='{"path": "b.txt", "content": "ha'),
    *message_end("max_tokens"),
)


@pytest.mark.timeout(90)
@pytest.mark.parametrize(("route", "reply", "follow_up"), [(CHAT, CUT_CHAT, answer("Done.")), (ANTHROPIC, CUT_ANTHROPIC, ANTHROPIC_DONE)], ids=["chat", "anthropic"])
def test_a_call_cut_off_by_the_output_limit_is_answered_never_run(bench: Workbench, route, reply, follow_up) -> None:
    result, _server = run(turn(bench, route, reply, args=("--approve",)))
    assert result.returncode == 0, result.stderr
    assert (bench.workspace / "a.txt").read_text() == "whole"
    assert not (bench.workspace / "b.txt").exists()
    _text, _reasoning, calls, finish = first_message(bench)
    assert finish == "max-tokens"
    cut = calls[1]
    assert cut.arguments == '{"path": "b.txt", "content": "ha'  # kept as the model wrote it
    events = events_of(bench.only_session())
    results = {event.data.call_id: event.data for event in of_type(events, "tool/result")}
    assert [event.data.call_id for event in of_type(events, "tool/call")] == [calls[0].call_id, cut.call_id]
    assert results[calls[0].call_id].error is None
    assert results[cut.call_id].is_error and results[cut.call_id].error.code == ARGUMENTS_CUT_OFF
    assert "output token limit" in results[cut.call_id].content
    assert of_type(events, "turn/end")[-1].data.reason == "max-tokens"

    # The next turn sends a history the provider accepts: the cut call as `{}` with its answer.
    async def again() -> tuple[RunResult, SSEServer]:
        async with SSEServer(follow_up) as server:
            bench.write_config(server.base_url, [route])
            return await toolscope_run(bench, "--session", bench.only_session().stem, "Go on."), server

    second, server = run(again())
    assert second.returncode == 0, second.stderr
    (body,) = request_bodies(server)
    if route is ANTHROPIC:
        assert_valid_anthropic_body(body)
        (assistant,) = [m for m in body["messages"] if m["role"] == "assistant"]
        assert [b.get("input") for b in assistant["content"] if b["type"] == "tool_use"] == [{"path": "a.txt", "content": "whole"}, {}]
    else:
        (assistant,) = [m for m in body["messages"] if m["role"] == "assistant"]
        assert [c["function"]["arguments"] for c in assistant["tool_calls"]] == ['{"path": "a.txt", "content": "whole"}', "{}"]
        assert [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"] == ["call_a", "call_b"]


# --- issue 9 items 2-4: what the corpus shows, in one chat stream ------------------------------------


def test_comments_empty_choices_nulls_reasoning_fields_and_calls_without_index(bench: Workbench) -> None:
    body = b"".join(
        [
            b": OPENROUTER PROCESSING\n\n",
            frame({"id": "", "model": "", "object": "", "choices": [], "prompt_filter_results": [{"prompt_index": 0}]}),
            frame(delta_chunk({"role": "assistant", "content": "", "reasoning": None, "reasoning_details": []})),
            b": OPENROUTER PROCESSING\n\n",
            frame(delta_chunk({"content": "", "reasoning": "Weather ", "reasoning_details": [{"type": "reasoning.text", "text": "Weather ", "index": 0}]})),
            frame(delta_chunk({"content": None, "reasoning": None, "reasoning_details": [{"type": "reasoning.text", "text": "needed.", "index": 0}]})),
            frame(delta_chunk({"content": "Checking.", "refusal": None, "tool_calls": None}, logprobs=None)),
            frame(delta_chunk({"content": None, "tool_calls": [{"id": "gSIMJiOkT", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}]}, "tool_calls", usage={"prompt_tokens": 12, "completion_tokens": 9})),
            frame("[DONE]"),
        ]
    )
    result, _server = run(turn(bench, CHAT, Reply(pieces=split_every(body, [53, 7])), answer("Sunny.")))
    assert result.returncode == 0, result.stderr
    text, reasoning, calls, finish = first_message(bench)
    assert (text, reasoning, finish) == ("Checking.", "Weather needed.", "tool-calls")
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [("gSIMJiOkT", "weather", '{"city": "Oslo"}')]
    assert result.stdout.rstrip().endswith("Sunny.")


def test_reasoning_from_the_reasoning_field_is_sent_back_as_reasoning_content(bench: Workbench) -> None:
    # Groq's gpt-oss: `reasoning` (with `channel`), then a one-chunk call; the tool loop's next request
    # carries the reasoning back, as DeepSeek's thinking mode requires.
    reply = chat_stream(
        delta_chunk({"role": "assistant", "content": ""}),
        delta_chunk({"reasoning": "Call the tool.", "channel": "analysis"}),
        delta_chunk({"tool_calls": [{"id": "fc_1", "type": "function", "function": {"name": "list_dir", "arguments": '{"path": "."}'}, "index": 0}]}),
        delta_chunk({}, "tool_calls"),
    )
    result, server = run(turn(bench, CHAT, reply, answer("Empty.")))
    assert result.returncode == 0, result.stderr
    _first, second = request_bodies(server)
    (assistant,) = [m for m in second["messages"] if m["role"] == "assistant"]
    assert assistant["reasoning_content"] == "Call the tool."


def test_anthropic_server_tools_redacted_thinking_and_an_empty_json_fragment(bench: Workbench) -> None:
    # Pings, padded JSON, redacted thinking, a server tool with its result between two texts, then a
    # client call whose only fragment is "": only the client call runs, with `{}`.
    events = [
        message_start(),
        {"type": "ping"},
        block(0, {"type": "redacted_thinking", "data": "EqkECkYIBxgCKkA8"}),
        block_stop(0),
        block(1, {"type": "text", "text": ""}),
        piece(1, type="text_delta", text="Searching. "),
        block_stop(1),
        block(2, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
        piece(2, type="input_json_delta", partial_json='{"query": "weather"}'),
        block_stop(2),
        block(3, {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}),
        block_stop(3),
        block(4, {"type": "text", "text": ""}),
        piece(4, type="citations_delta", citation={"type": "web_search_result_location", "url": "https://example.com"}),
        piece(4, type="text_delta", text="Listing."),
        block_stop(4),
        block(5, {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {}}),
        piece(5, type="input_json_delta", partial_json=""),
        block_stop(5),
        *message_end("tool_use"),
    ]
    body = b"".join(f"event: {p['type']}\ndata: {json.dumps(p, separators=(',', ':'))}{' ' * 7}\n\n".encode() for p in events)
    result, server = run(turn(bench, ANTHROPIC, Reply(pieces=split_every(body, [29, 2, 97])), ANTHROPIC_DONE))
    assert result.returncode == 0, result.stderr
    text, reasoning, calls, finish = first_message(bench)
    assert (text, reasoning, finish) == ("Searching. Listing.", "", "tool-calls")
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [("toolu_1", "list_dir", "{}")]
    (logged,) = of_type(events_of(bench.only_session()), "tool/result")
    assert logged.data.call_id == "toolu_1" and not logged.data.is_error
    assert_valid_anthropic_body(request_bodies(server)[1])


def test_the_anthropic_wires_cache_reads_and_writes_are_logged_with_the_answer(bench: Workbench) -> None:
    """`input_tokens` counts only what was neither read from nor written to the cache: the logged
    `input` is all three, `cacheRead` and `cacheWrite` its parts."""
    start = message_start()
    start["message"]["usage"].update(cache_read_input_tokens=30, cache_creation_input_tokens=6)
    reply = anthropic_stream(start, block(0, {"type": "text", "text": ""}), piece(0, type="text_delta", text="Hi."), block_stop(0), *message_end("end_turn"))
    result, _server = run(turn(bench, ANTHROPIC, reply))
    assert result.returncode == 0, result.stderr
    (message,) = of_type(events_of(bench.only_session()), "assistant/message")
    usage = message.data.usage
    assert (usage.input, usage.cache_read, usage.cache_write, usage.output) == (45, 30, 6, 20)
    assert b'"cacheRead":30,"reasoning":0,"cacheWrite":6}' in bench.only_session().read_bytes()


@pytest.mark.parametrize(
    ("settings", "asked"),
    [
        ((("cache_control", True), ("cache_write", "1h")), {"type": "ephemeral", "ttl": "1h"}),
        ((("cache_control", True),), {"type": "ephemeral", "ttl": "5m"}),
        ((), None),  # another host than Anthropic's: the field may be unknown there
    ],
)
def test_an_anthropic_route_asks_for_prompt_caching_with_its_write_lifetime(
    bench: Workbench, settings: tuple[tuple[str, str | bool], ...], asked: dict[str, str] | None
) -> None:
    """The request-level `cache_control` asks the API to cache up to the last block of every
    request: each one reads what the one before wrote (what the cost estimate assumes)."""
    route = RouteSpec("e2e/anthropic", dialect="anthropic-messages", settings=settings)
    call = anthropic_stream(
        message_start(),
        block(0, {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {}}),
        piece(0, type="input_json_delta", partial_json="{}"),
        block_stop(0),
        *message_end("tool_use"),
    )
    result, server = run(turn(bench, route, call, ANTHROPIC_DONE))
    assert result.returncode == 0, result.stderr
    bodies = request_bodies(server)
    assert [body.get("cache_control") for body in bodies] == [asked, asked]
    for body in bodies:
        assert_valid_anthropic_body(body)
    assert b"cache_control" not in bench.only_session().read_bytes()  # the log is the same on every route

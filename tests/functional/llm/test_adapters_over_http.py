"""The real adapters against a real HTTP server on 127.0.0.1 (`sse_server`): framing split anywhere,
keep-alives, HTTP errors, resets, stalls, aborts, cancellation, a missing key. No internet."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable
from email.utils import formatdate
from typing import Any, TypeVar

import httpx
import pytest
from sse_server import Reply, SSEServer, split_at, split_every, unused_port

from app.llm.anthropic.adapter import AnthropicAdapter
from app.llm.deepseek.adapter import DeepSeekAdapter
from app.llm.errors import (
    AUTH,
    MISSING_CREDENTIAL,
    RATE_LIMIT,
    SERVER,
    STREAM_CLOSED,
    TIMEOUT,
    TRANSPORT,
)
from app.llm.http import StreamingAdapter
from app.llm.stream import BlockDelta, BlockEnd, BlockStart, Finish, StreamEvent, UsageReport, check_stream

KEY_ENV = "TOOLSCOPE_FUNCTIONAL_TEST_KEY"
KEY = "sk-functional-test-key-42"
TEST_LIMIT = 10.0
T = TypeVar("T")


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def run(coroutine: Awaitable[T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, TEST_LIMIT)

    return asyncio.run(bounded())


async def exchange(
    adapter_class: type[StreamingAdapter],
    *replies: Reply,
    idle_timeout: float = 5.0,
    body: dict | None = None,
    headers: dict | None = None,
) -> tuple[list[StreamEvent], SSEServer]:
    async with SSEServer(*replies) as server, httpx.AsyncClient(trust_env=False) as client:
        adapter = adapter_class(server.base_url, KEY_ENV, "test-model", http_client=client, idle_timeout=idle_timeout)
        events = [event async for event in adapter.stream(body or {"messages": []}, headers or {})]
    check_stream(events)
    return events, server


def summary(events: list[StreamEvent]) -> dict[str, Any]:
    kinds = {e.index: e.kind for e in events if isinstance(e, BlockStart)}
    text = "".join(e.text for e in events if isinstance(e, BlockDelta) and kinds[e.index] == "text")
    reasoning = "".join(e.text for e in events if isinstance(e, BlockDelta) and kinds[e.index] == "reasoning")
    calls = [(e.call_id, e.name, e.arguments) for e in events if isinstance(e, BlockEnd) and kinds[e.index] == "tool-call"]
    usage = next((e for e in events if isinstance(e, UsageReport)), None)
    finish = events[-1]
    assert isinstance(finish, Finish)
    return {"text": text, "reasoning": reasoning, "calls": calls, "usage": usage, "finish": finish}


def code_of(events: list[StreamEvent]) -> str | None:
    finish = events[-1]
    assert isinstance(finish, Finish)
    return finish.failure.code if finish.failure else None


# --- the DeepSeek stream --------------------------------------------------------------------------


def deepseek_body(*, done: bool = True, newline: str = "\n") -> bytes:
    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [
        chunk({"role": "assistant", "content": "", "reasoning_content": ""}),
        chunk({"reasoning_content": "想一想，"}),
        chunk({"reasoning_content": "再回答。"}),
        chunk({"content": "Héllo 🙂 "}),
        chunk({"content": "流式！"}),
        chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "grep", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "id": "", "function": {"name": "", "arguments": '{"path": "文件.md"}'}}]}),
        chunk({"tool_calls": [{"index": 1, "id": None, "function": {"name": None, "arguments": '{"q": "é"}'}}]}),
        chunk({"content": ""}, "tool_calls"),
        {"id": "x", "choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 40, "prompt_cache_hit_tokens": 100, "completion_tokens_details": {"reasoning_tokens": 12}}},
    ]
    lines = [f"data: {json.dumps(c, ensure_ascii=False)}" for c in chunks] + (["data: [DONE]"] if done else [])
    return "".join(line + newline + newline for line in lines).encode()


EXPECTED_DEEPSEEK = {
    "text": "Héllo 🙂 流式！",
    "reasoning": "想一想，再回答。",
    "calls": [("call_a", "read_file", '{"path": "文件.md"}'), ("call_b", "grep", '{"q": "é"}')],
    "usage": UsageReport(120, 40, 100, 12),
    "finish": Finish("tool-calls"),
}


def mid_character_offsets(body: bytes) -> list[int]:
    """Offsets inside multi-byte UTF-8 characters (after a lead byte), inside `data:` and `\\n\\n`."""
    inside_chars = [i for i in range(1, len(body)) if body[i] & 0xC0 == 0x80 and body[i - 1] & 0xC0 == 0xC0]
    inside_prefix = [i + 3 for i in range(len(body)) if body.startswith(b"data:", i)]
    between_newlines = [i + 1 for i in range(len(body)) if body.startswith(b"\n\n", i)]
    return sorted(set(inside_chars + inside_prefix + between_newlines))


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_deepseek_stream_split_everywhere(newline):
    body = deepseek_body(newline=newline)
    events, server = run(exchange(DeepSeekAdapter, Reply(pieces=split_every(body, [1, 2, 3, 5, 7]), delay=0.0005)))
    assert summary(events) == EXPECTED_DEEPSEEK
    request = server.received[0]
    assert (request.method, request.path) == ("POST", "/chat/completions")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert json.loads(request.body)["stream_options"] == {"include_usage": True}


def test_deepseek_stream_split_inside_characters_prefixes_and_blank_lines():
    body = deepseek_body()
    offsets = mid_character_offsets(body)
    assert len(offsets) > 30
    events, _ = run(exchange(DeepSeekAdapter, Reply(pieces=split_at(body, offsets), delay=0.001)))
    assert summary(events) == EXPECTED_DEEPSEEK


def test_comments_and_keep_alives_are_ignored_and_keep_the_stream_alive():
    body = deepseek_body()
    half = body.index(b"data: ", len(body) // 2)
    # Five keep-alives 0.1 s apart: 0.5 s of no data, but never 0.3 s without a byte.
    pieces = [b": connected\n\n", body[:half], *[b": keep-alive\n\n"] * 5, b":ping\r\n\r\n" + body[half:]]
    events, _ = run(exchange(DeepSeekAdapter, Reply(pieces=pieces, delay=0.1), idle_timeout=0.3))
    assert summary(events) == EXPECTED_DEEPSEEK


def test_a_body_without_done_is_stream_closed():
    events, _ = run(exchange(DeepSeekAdapter, Reply(pieces=[deepseek_body(done=False)])))
    assert code_of(events) == STREAM_CLOSED
    assert summary(events)["usage"] == UsageReport(120, 40, 100, 12)


@pytest.mark.parametrize("retry_after", ["2", "date"])
def test_429_with_retry_after(retry_after):
    value = formatdate(time.time() + 3, usegmt=True) if retry_after == "date" else retry_after
    error = json.dumps({"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}).encode()
    reply = Reply(status=429, pieces=[error], headers={"content-type": "application/json", "retry-after": value})
    events, _ = run(exchange(DeepSeekAdapter, reply))
    (finish,) = events
    assert (finish.failure.code, finish.failure.status) == (RATE_LIMIT, 429)
    if retry_after == "date":
        assert 1000 <= finish.failure.retry_after_ms <= 3000  # the date has whole seconds
    else:
        assert finish.failure.retry_after_ms == 2000


def test_500_is_a_server_failure():
    reply = Reply(status=500, pieces=[b"upstream ", b"exploded"], headers={"content-type": "text/plain"})
    (finish,), _ = run(exchange(DeepSeekAdapter, reply))
    assert (finish.failure.code, finish.failure.status) == (SERVER, 500)
    assert "upstream exploded" in finish.failure.message


def test_401_is_auth_and_never_shows_the_key():
    error = json.dumps({"error": {"message": f"Authentication Fails ({KEY})", "type": "authentication_error"}}).encode()
    (finish,), _ = run(exchange(DeepSeekAdapter, Reply(status=401, pieces=[error], headers={"content-type": "application/json"})))
    assert finish.failure.code == AUTH
    assert KEY not in finish.failure.message


def test_a_connection_reset_mid_stream_is_transport():
    body = deepseek_body()
    events, _ = run(exchange(DeepSeekAdapter, Reply(pieces=[body[: len(body) // 2]], then="reset")))
    assert code_of(events) == TRANSPORT
    assert summary(events)["reasoning"] == "想一想，再回答。"


def test_a_refused_connection_is_transport():
    async def scenario() -> list[StreamEvent]:
        port = await unused_port()
        async with httpx.AsyncClient(trust_env=False) as client:
            adapter = DeepSeekAdapter(f"http://127.0.0.1:{port}", KEY_ENV, "m", http_client=client)
            return [event async for event in adapter.stream({}, {})]

    assert code_of(run(scenario())) == TRANSPORT


def test_a_stalled_stream_hits_the_idle_timeout():
    body = deepseek_body()
    started = time.monotonic()
    events, server = run(exchange(DeepSeekAdapter, Reply(pieces=[body[:200]], then="stall"), idle_timeout=0.3))
    assert code_of(events) == TIMEOUT
    assert time.monotonic() - started < 2.5
    assert "0.3 s" in events[-1].failure.message


def test_a_missing_key_sends_nothing(monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    (finish,), server = run(exchange(DeepSeekAdapter, Reply(pieces=[deepseek_body()])))
    assert finish.failure.code == MISSING_CREDENTIAL
    assert KEY_ENV in finish.failure.message
    assert server.received == []


# --- stopping ---------------------------------------------------------------------------------------


def test_abort_ends_a_stalled_stream_at_once_with_an_aborted_finish():
    body = deepseek_body()

    async def scenario() -> tuple[list[StreamEvent], float, bool]:
        abort = asyncio.Event()
        async with SSEServer(Reply(pieces=[body[: body.index("Héllo".encode())]], then="stall")) as server:
            async with httpx.AsyncClient(trust_env=False) as client:
                adapter = DeepSeekAdapter(server.base_url, KEY_ENV, "m", http_client=client, idle_timeout=5)
                events: list[StreamEvent] = []
                asyncio.get_running_loop().call_later(0.3, abort.set)
                started = time.monotonic()
                async for event in adapter.stream({}, {}, abort=abort):
                    events.append(event)
                elapsed = time.monotonic() - started
                await asyncio.wait_for(server.disconnected.wait(), 2)
                return events, elapsed, server.disconnected.is_set()

    events, elapsed, disconnected = run(scenario())
    check_stream(events)
    assert events[-1] == Finish("aborted")
    assert summary(events)["reasoning"] == "想一想，再回答。"
    assert elapsed < 1.5 and disconnected


def test_abort_between_events_stops_before_the_next_read():
    async def scenario() -> list[StreamEvent]:
        abort = asyncio.Event()
        async with SSEServer(Reply(pieces=[deepseek_body()])) as server, httpx.AsyncClient(trust_env=False) as client:
            adapter = DeepSeekAdapter(server.base_url, KEY_ENV, "m", http_client=client)
            events: list[StreamEvent] = []
            async for event in adapter.stream({}, {}, abort=abort):
                events.append(event)
                abort.set()  # the consumer stops after the first event
            return events

    events = run(scenario())
    check_stream(events)
    assert events == [BlockStart(0, "reasoning"), BlockDelta(0, "想一想，"), Finish("aborted")]


def test_cancelling_the_consumer_closes_the_connection_and_propagates():
    body = deepseek_body()

    async def scenario() -> tuple[list[StreamEvent], bool]:
        async with SSEServer(Reply(pieces=[body[:300]], then="stall")) as server, httpx.AsyncClient(trust_env=False) as client:
            adapter = DeepSeekAdapter(server.base_url, KEY_ENV, "m", http_client=client, idle_timeout=5)
            events: list[StreamEvent] = []

            async def consume() -> None:
                async for event in adapter.stream({}, {}):
                    events.append(event)

            task = asyncio.create_task(consume())
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.wait_for(server.disconnected.wait(), 2)
            return events, server.disconnected.is_set()

    events, disconnected = run(scenario())
    assert disconnected
    assert not any(isinstance(event, Finish) for event in events)  # a cancellation yields no finish


# --- the Anthropic stream ------------------------------------------------------------------------


def anthropic_body(*, stop: bool = True, error: dict | None = None) -> bytes:
    events: list[tuple[str, dict]] = [
        ("message_start", {"message": {"id": "msg_1", "usage": {"input_tokens": 50, "cache_read_input_tokens": 30, "output_tokens": 1}}}),
        ("content_block_start", {"index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        ("content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": "思考中…"}}),
        ("content_block_delta", {"index": 0, "delta": {"type": "signature_delta", "signature": "c2ln"}}),
        ("content_block_stop", {"index": 0}),
        ("ping", {}),
        ("content_block_start", {"index": 1, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"index": 1, "delta": {"type": "text_delta", "text": "Voilà 🙂"}}),
        ("content_block_stop", {"index": 1}),
        ("content_block_start", {"index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {}}}),
        ("content_block_delta", {"index": 2, "delta": {"type": "input_json_delta", "partial_json": '{"q": '}}),
        ("content_block_delta", {"index": 2, "delta": {"type": "input_json_delta", "partial_json": '"ü"}'}}),
        ("content_block_stop", {"index": 2}),
    ]
    if error is not None:
        events.append(("error", {"error": error}))
    events.append(("message_delta", {"delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {"output_tokens": 25}}))
    if stop:
        events.append(("message_stop", {}))
    return "".join(f"event: {kind}\ndata: {json.dumps({'type': kind, **fields}, ensure_ascii=False)}\n\n" for kind, fields in events).encode()


def test_anthropic_stream_split_everywhere():
    body = anthropic_body()
    events, server = run(exchange(AnthropicAdapter, Reply(pieces=split_every(body, [1, 4, 2, 6]), delay=0.0005)))
    assert summary(events) == {
        "text": "Voilà 🙂",
        "reasoning": "思考中…",
        "calls": [("toolu_1", "grep", '{"q": "ü"}')],
        "usage": UsageReport(80, 25, 30, 0),
        "finish": Finish("tool-calls"),
    }
    request = server.received[0]
    assert (request.path, request.headers["x-api-key"], request.headers["anthropic-version"]) == ("/v1/messages", KEY, "2023-06-01")
    assert json.loads(request.body) == {"model": "test-model", "messages": [], "stream": True}


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (Reply(pieces=[anthropic_body(error={"type": "overloaded_error", "message": "Overloaded"})]), SERVER),
        (Reply(pieces=[anthropic_body(stop=False)]), STREAM_CLOSED),
        (Reply(status=529, pieces=[b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'], headers={"content-type": "application/json"}), SERVER),
        (Reply(status=401, pieces=[b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}'], headers={"content-type": "application/json"}), AUTH),
        (Reply(pieces=[anthropic_body()[:400]], then="reset"), TRANSPORT),
        (Reply(pieces=[anthropic_body()[:400]], then="stall"), TIMEOUT),
    ],
)
def test_anthropic_failures(reply, code):
    events, _ = run(exchange(AnthropicAdapter, reply, idle_timeout=0.3))
    assert code_of(events) == code

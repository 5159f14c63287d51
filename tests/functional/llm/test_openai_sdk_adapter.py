"""The `openai-sdk` adapter (the official `openai` client) against the real loopback SSE server: the
same streams and failures as the DeepSeek adapter must give the same events and codes, and every
produced stream must satisfy `check_stream`. No internet."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from sse_server import Reply, SSEServer, split_every, unused_port
from test_adapters_over_http import (
    EXPECTED_DEEPSEEK,
    KEY,
    KEY_ENV,
    code_of,
    deepseek_body,
    exchange,
    run,
    summary,
)

from app.llm.deepseek.body import build_chat_request
from app.llm.dispatch import connect
from app.llm.errors import (
    AUTH,
    CONTEXT_WINDOW_EXCEEDED,
    INVALID_REQUEST,
    MALFORMED_RESPONSE,
    MALFORMED_TOOL_CALL,
    MISSING_CREDENTIAL,
    QUOTA,
    RATE_LIMIT,
    SERVER,
    STREAM_CLOSED,
    TIMEOUT,
    TRANSPORT,
)
from app.llm.openai_sdk.adapter import OpenAISdkAdapter
from app.llm.projection import project_tool_updates
from app.llm.routes import load_catalog
from app.llm.stream import BlockEnd, BlockStart, Finish, StreamEvent, UsageReport, check_stream
from app.session.view import SessionView
from tests.support.builder import LogBuilder, tool

JSON = {"content-type": "application/json"}


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


def sse(*payloads: dict | str) -> bytes:
    """An event stream of `payloads` (dicts as JSON, strings as they are)."""
    return b"".join(
        b"data: " + (p if isinstance(p, str) else json.dumps(p, ensure_ascii=False)).encode() + b"\n\n"
        for p in payloads
    )


def chunk(delta: dict, finish: str | None = None) -> dict:
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def call(index: int, call_id: str | None, name: str | None, arguments: str) -> dict:
    return {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


USAGE = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
         "usage": {"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37,
                   "prompt_tokens_details": {"cached_tokens": 16}}}


def sdk_exchange(*replies: Reply, **options) -> tuple[list[StreamEvent], SSEServer]:
    """One request through `OpenAISdkAdapter`; `exchange` checks the stream contract."""
    return run(exchange(OpenAISdkAdapter, *replies, **options))


# --- well-formed streams ----------------------------------------------------------------------------


def test_the_deepseek_stream_gives_the_same_events_as_the_deepseek_adapter():
    """Reasoning, text, two parallel calls with empty and null continuation identity, cache usage:
    the body the DeepSeek adapter's tests use, split into small pieces."""
    events, server = sdk_exchange(Reply(pieces=split_every(deepseek_body(), [1, 2, 3, 5, 7]), delay=0.0005))
    assert summary(events) == EXPECTED_DEEPSEEK
    request = server.received[0]
    assert (request.method, request.path) == ("POST", "/chat/completions")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["x-stainless-retry-count"] == "0"
    sent = json.loads(request.body)
    assert (sent["stream"], sent["stream_options"], sent["model"]) == (True, {"include_usage": True}, "test-model")


def test_text_only_stream_stops_with_openai_usage():
    body = sse(chunk({"role": "assistant", "content": ""}), chunk({"content": "Bonjour "}),
               chunk({"content": "à tous"}), chunk({}, "stop"), USAGE, "[DONE]")
    events, _ = sdk_exchange(Reply(pieces=[body]))
    assert summary(events) == {"text": "Bonjour à tous", "reasoning": "", "calls": [],
                               "usage": UsageReport(30, 7, 16, 0), "finish": Finish("stop")}


def test_interleaved_parallel_calls_keep_their_own_identity():
    body = sse(
        chunk({"tool_calls": [call(0, "call_a", "read_file", ""), call(1, "call_b", "grep", "")]}),
        chunk({"tool_calls": [call(1, None, None, '{"q":'), call(0, "", "", '{"path":')]}),
        chunk({"tool_calls": [call(0, None, None, '"a"}'), call(1, "", None, '"b"}')]}),
        chunk({}, "tool_calls"), USAGE, "[DONE]",
    )
    events, _ = sdk_exchange(Reply(pieces=[body]))
    assert summary(events)["calls"] == [("call_a", "read_file", '{"path":"a"}'), ("call_b", "grep", '{"q":"b"}')]
    assert events[-1] == Finish("tool-calls")


def test_continuation_deltas_repeating_the_identity_do_not_concatenate_it():
    """The client's own accumulator would give `call_acall_acall_a`; identity is not accumulated."""
    body = sse(
        chunk({"tool_calls": [call(0, "call_a", "read_file", "")]}),
        chunk({"tool_calls": [call(0, "call_a", "read_file", '{"path": ')]}),
        chunk({"tool_calls": [call(0, "call_a", "read_file", '"x.md"}')]}),
        chunk({}, "tool_calls"), "[DONE]",
    )
    events, _ = sdk_exchange(Reply(pieces=[body]))
    assert summary(events)["calls"] == [("call_a", "read_file", '{"path": "x.md"}')]


def test_a_call_that_never_gets_a_name_is_malformed_after_the_usage_and_is_never_closed():
    body = sse(chunk({"tool_calls": [call(0, "call_a", None, "{}")]}), chunk({}, "tool_calls"), USAGE, "[DONE]")
    events, _ = sdk_exchange(Reply(pieces=[body]))
    assert code_of(events) == MALFORMED_TOOL_CALL
    assert isinstance(events[-2], UsageReport)
    assert not any(isinstance(event, BlockEnd) for event in events)


def test_a_length_finish_is_max_tokens():
    events, _ = sdk_exchange(Reply(pieces=[sse(chunk({"content": "cut"}), chunk({}, "length"), "[DONE]")]))
    assert events[-1] == Finish("max-tokens")


def test_provider_shapes_mistral_calls_without_index_and_reasoning_fields():
    # As on the deepseek-chat route: a call without `index`, Groq's `reasoning`, OpenRouter's comments.
    body = b": OPENROUTER PROCESSING\n\n" + sse(
        {"id": "", "object": "", "created": 0, "model": "", "choices": []},
        chunk({"role": "assistant", "content": "", "reasoning": "Weather ", "channel": "analysis"}),
        chunk({"reasoning": None, "reasoning_details": [{"type": "reasoning.text", "text": "needed.", "index": 0}]}),
        chunk({"content": None, "tool_calls": [{"id": "gSIMJiOkT", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}]}, "tool_calls"),
        "[DONE]",
    )
    events, _ = sdk_exchange(Reply(pieces=split_every(body, [41, 3])))
    result = summary(events)
    assert (result["reasoning"], result["calls"], result["finish"]) == (
        "Weather needed.", [("gSIMJiOkT", "weather", '{"city": "Oslo"}')], Finish("tool-calls")
    )


def test_split_surrogate_pairs_are_joined_on_the_openai_sdk_route_too():
    """The client's chunk models cannot serialise a lone surrogate; the adapter must not crash."""
    pieces = [
        json.dumps(chunk({"reasoning_content": "think \ud83d"})),
        json.dumps(chunk({"reasoning_content": "\ude00"})),
        json.dumps(chunk({"content": "smile \ud83d"})),
        json.dumps(chunk({"content": "\ude00 lone \ude00"})),
        json.dumps(chunk({"tool_calls": [call(0, "call_1", "say", '{"t": "\ud83d')]})),
        json.dumps(chunk({"tool_calls": [call(0, None, None, '\ude00"}')]})),
        json.dumps(chunk({}, "tool_calls")),
    ]
    events, _ = sdk_exchange(Reply(pieces=[sse(*pieces, "[DONE]")]))
    result = summary(events)
    assert (result["reasoning"], result["text"]) == ("think \U0001f600", "smile \U0001f600 lone \ufffd")
    assert result["calls"] == [("call_1", "say", '{"t": "\U0001f600"}')]


# --- the end of the stream ------------------------------------------------------------------------


def test_an_eof_before_the_finish_reason_is_stream_closed():
    events, _ = sdk_exchange(Reply(pieces=[sse(chunk({"content": "half"}))]))
    assert code_of(events) == STREAM_CLOSED


def test_an_eof_after_the_finish_reason_completes_the_response():
    """The client hides `[DONE]`; a reported finish reason is what makes the response complete."""
    events, _ = sdk_exchange(Reply(pieces=[sse(chunk({"content": "whole"}), chunk({}, "stop"), USAGE)]))
    assert summary(events)["usage"] == UsageReport(30, 7, 16, 0)
    assert events[-1] == Finish("stop")


@pytest.mark.parametrize("payload", ["{not json", "42", '{"choices": "many"}'])
def test_a_malformed_chunk_is_malformed_response(payload):
    events, _ = sdk_exchange(Reply(pieces=[sse(chunk({"content": "a"}), payload, "[DONE]")]))
    assert code_of(events) == MALFORMED_RESPONSE


def test_an_error_member_in_the_stream_is_mapped():
    events, _ = sdk_exchange(Reply(pieces=[sse(chunk({"content": "a"}), {"error": {"message": "Overloaded", "type": "server_error"}})]))
    assert code_of(events) == SERVER
    assert "Overloaded" in events[-1].failure.message


# --- HTTP failures ----------------------------------------------------------------------------------


def error_reply(status: int, message: str, type_: str, headers: dict | None = None) -> Reply:
    payload = json.dumps({"error": {"message": message, "type": type_, "code": None}}).encode()
    return Reply(status=status, pieces=[payload], headers={**JSON, **(headers or {})})


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (error_reply(401, f"Incorrect API key provided: {KEY}", "invalid_request_error"), AUTH),
        (error_reply(403, "Project does not have access to model", "permission_error"), AUTH),
        (error_reply(429, "You exceeded your current quota, please check your plan and billing details.", "insufficient_quota"), QUOTA),
        (error_reply(400, "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.", "invalid_request_error"), CONTEXT_WINDOW_EXCEEDED),
        (error_reply(400, "Invalid value for 'temperature'", "invalid_request_error"), INVALID_REQUEST),
        (error_reply(500, "The server had an error while processing your request.", "server_error"), SERVER),
        (error_reply(503, "Service unavailable", "server_error"), SERVER),
    ],
)
def test_http_failures_map_to_the_same_codes(reply, code):
    (finish,), server = sdk_exchange(reply)
    assert (finish.failure.code, finish.failure.status) == (code, reply.status)
    assert KEY not in finish.failure.message
    assert len(server.received) == 1  # the client never retries


def test_429_carries_retry_after():
    (finish,), _ = sdk_exchange(error_reply(429, "Rate limit reached for requests", "requests", {"retry-after": "2"}))
    assert (finish.failure.code, finish.failure.retry_after_ms) == (RATE_LIMIT, 2000)


def test_a_connection_reset_mid_stream_is_transport():
    body = deepseek_body()
    events, _ = sdk_exchange(Reply(pieces=[body[: len(body) // 2]], then="reset"))
    assert code_of(events) == TRANSPORT
    assert summary(events)["reasoning"] == "想一想，再回答。"


def test_a_refused_connection_is_transport():
    async def scenario() -> list[StreamEvent]:
        port = await unused_port()
        async with httpx.AsyncClient(trust_env=False) as client:
            adapter = OpenAISdkAdapter(f"http://127.0.0.1:{port}", KEY_ENV, "m", http_client=client)
            return [event async for event in adapter.stream({"messages": []}, {})]

    events = run(scenario())
    check_stream(events)
    assert code_of(events) == TRANSPORT


def test_a_stalled_stream_hits_the_idle_timeout():
    started = time.monotonic()
    events, _ = sdk_exchange(Reply(pieces=[deepseek_body()[:200]], then="stall"), idle_timeout=0.3)
    assert code_of(events) == TIMEOUT
    assert "0.3 s" in events[-1].failure.message
    assert time.monotonic() - started < 2.5


# --- credentials ------------------------------------------------------------------------------------


def test_a_missing_key_names_the_variable_and_sends_nothing(monkeypatch):
    monkeypatch.delenv(KEY_ENV)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-be-used")
    (finish,), server = sdk_exchange(Reply(pieces=[deepseek_body()]))
    assert finish.failure.code == MISSING_CREDENTIAL
    assert KEY_ENV in finish.failure.message
    assert server.received == []


def test_a_route_without_credential_sends_no_authorization_and_ignores_openai_api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-be-used")

    async def scenario() -> tuple[list[StreamEvent], SSEServer]:
        async with SSEServer(Reply(pieces=[deepseek_body()])) as server, httpx.AsyncClient(trust_env=False) as client:
            adapter = OpenAISdkAdapter(server.base_url, None, "m", http_client=client)
            return [event async for event in adapter.stream({"messages": []}, {"Authorization": "Bearer forged"})], server

    events, server = run(scenario())
    check_stream(events)
    assert summary(events) == EXPECTED_DEEPSEEK
    assert "authorization" not in server.received[0].headers


# --- what is sent -----------------------------------------------------------------------------------


def test_the_body_is_sent_as_built_and_the_credential_only_from_the_environment():
    """Keys `create()` does not name (`thinking`) travel in `extra_body`; a caller's Authorization
    header never replaces the key from the environment."""
    body = {
        "model": "body-model",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"},
                     {"role": "assistant", "content": "", "reasoning_content": "hm",
                      "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": "c1", "content": "ok"}],
        "tools": [{"type": "function", "function": {"name": "t", "description": "T.", "parameters": {"type": "object", "properties": {}}}}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.2,
        "max_tokens": 100,
        "thinking": {"type": "enabled"},
        "reasoning_effort": "high",
    }
    headers = {"x-trace": "1", "Authorization": "Bearer forged"}
    _, server = run(exchange(OpenAISdkAdapter, Reply(pieces=[deepseek_body()]), body=body, headers=headers))
    request = server.received[0]
    assert json.loads(request.body) == body
    assert (request.headers["x-trace"], request.headers["authorization"]) == ("1", f"Bearer {KEY}")


# --- stopping ---------------------------------------------------------------------------------------


def test_abort_ends_a_stalled_stream_at_once_and_hangs_up():
    body = deepseek_body()

    async def scenario() -> tuple[list[StreamEvent], float]:
        abort = asyncio.Event()
        async with SSEServer(Reply(pieces=[body[: body.index("Héllo".encode())]], then="stall")) as server:
            async with httpx.AsyncClient(trust_env=False) as client:
                adapter = OpenAISdkAdapter(server.base_url, KEY_ENV, "m", http_client=client, idle_timeout=5)
                asyncio.get_running_loop().call_later(0.3, abort.set)
                started = time.monotonic()
                events = [event async for event in adapter.stream({"messages": []}, {}, abort=abort)]
                elapsed = time.monotonic() - started
                await asyncio.wait_for(server.disconnected.wait(), 2)
                return events, elapsed

    events, elapsed = run(scenario())
    check_stream(events)
    assert events[-1] == Finish("aborted")
    assert summary(events)["reasoning"] == "想一想，再回答。"
    assert elapsed < 1.5


def test_cancelling_the_consumer_closes_the_connection_and_propagates():
    async def scenario() -> list[StreamEvent]:
        async with SSEServer(Reply(pieces=[deepseek_body()[:300]], then="stall")) as server, httpx.AsyncClient(trust_env=False) as client:
            adapter = OpenAISdkAdapter(server.base_url, KEY_ENV, "m", http_client=client, idle_timeout=5)
            events: list[StreamEvent] = []

            async def consume() -> None:
                async for event in adapter.stream({"messages": []}, {}):
                    events.append(event)

            task = asyncio.create_task(consume())
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.wait_for(server.disconnected.wait(), 2)
            return events

    events = run(scenario())
    assert not any(isinstance(event, Finish) for event in events)


def test_an_adapter_without_a_borrowed_client_makes_one_and_closes_it():
    async def scenario() -> list[StreamEvent]:
        async with SSEServer(Reply(pieces=[deepseek_body()])) as server:
            adapter = OpenAISdkAdapter(server.base_url, KEY_ENV, "m")
            try:
                return [event async for event in adapter.stream({"messages": []}, {})]
            finally:
                await adapter.aclose()

    events = run(scenario())
    check_stream(events)
    assert summary(events) == EXPECTED_DEEPSEEK


# --- end to end through the route dispatch ----------------------------------------------------------


def test_an_openai_sdk_route_through_dispatch_sends_the_effective_tools_and_no_updates():
    """A session whose tools changed (+time, −grep) on the catalog's openai-sdk route pointed at the
    loopback server: projection, body builder, `connect` and the adapter, as the loop runs them."""
    log = LogBuilder()
    log.start_turn("read the README")
    log.start_step()
    log.header_for([tool("read_file"), tool("grep")], route="openai/gpt")
    log.assistant("done")
    log.end_step()
    log.end_turn()
    log.start_turn("what time is it?")
    log.start_step()
    log.header_for([tool("read_file"), tool("time")], route="openai/gpt")
    view = SessionView(log.header)
    for event in log.events:
        view.apply(event)

    async def scenario() -> tuple[list[StreamEvent], dict, SSEServer]:
        async with SSEServer(Reply(pieces=[deepseek_body()])) as server, httpx.AsyncClient(trust_env=False) as http:
            route = load_catalog([{"id": "openai/gpt", "base_url": server.base_url, "api_key_env": KEY_ENV}]).get("openai/gpt")
            projected = project_tool_updates(view.messages, view.history, route)
            client = connect(route, http_client=http)
            try:
                wire = client.build(projected, view.current_header)
                events = [event async for event in client.stream(wire)]
            finally:
                await client.aclose()
            return events, wire.body, server

    events, body, server = run(scenario())
    check_stream(events)
    assert summary(events) == EXPECTED_DEEPSEEK
    assert body == build_chat_request(
        project_tool_updates(view.messages, view.history, load_catalog().get("openai/gpt")),
        model="gpt-5",
        config={"temperature": 0},
    ).body
    sent = json.loads(server.received[0].body)
    assert sent == body
    assert [t["function"]["name"] for t in sent["tools"]] == ["read_file", "time"]
    assert not any("defer_loading" in t for t in sent["tools"])
    assert all(isinstance(m["content"], str) for m in sent["messages"])  # no update blocks
    assert "anthropic-beta" not in server.received[0].headers
    assert {type(e) for e in events} >= {BlockStart, BlockEnd, UsageReport, Finish}

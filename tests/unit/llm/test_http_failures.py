"""HTTP status → failure mapping, Retry-After, transport errors, and what the adapters send."""

from __future__ import annotations

import asyncio
import json
from email.utils import formatdate

import httpx
import pytest

from app.llm.anthropic.adapter import AnthropicAdapter
from app.llm.deepseek.adapter import DeepSeekAdapter
from app.llm.errors import (
    AUTH,
    CONTEXT_WINDOW_EXCEEDED,
    INVALID_REQUEST,
    MALFORMED_RESPONSE,
    MISSING_CREDENTIAL,
    QUOTA,
    RATE_LIMIT,
    SERVER,
    TIMEOUT,
    TRANSPORT,
)
from app.llm.http import failure_from_transport_error
from app.llm.provider_errors import (
    classify_failure,
    failure_from_error_payload,
    failure_from_status,
    parse_retry_after,
)
from app.llm.stream import Finish, check_stream

KEY = "sk-test-0123456789abcdef"


def openai_error(message: str, type_: str = "invalid_request_error", code: str | None = None) -> bytes:
    return json.dumps({"error": {"message": message, "type": type_, "code": code}}).encode()


def anthropic_error(type_: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": type_, "message": message}}).encode()


@pytest.mark.parametrize(
    ("status", "body", "code"),
    [
        (401, openai_error("Authentication Fails, Your api key is invalid", "authentication_error"), AUTH),
        (403, anthropic_error("permission_error", "Your API key does not have permission"), AUTH),
        (402, openai_error("Insufficient Balance", "unknown_error"), QUOTA),
        (429, openai_error("You exceeded your current quota, please check your plan and billing details.", "insufficient_quota"), QUOTA),
        (400, anthropic_error("invalid_request_error", "Your credit balance is too low to access the Anthropic API."), QUOTA),
        (429, openai_error("Rate limit reached for requests", "requests"), RATE_LIMIT),
        (429, anthropic_error("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"), RATE_LIMIT),
        (400, openai_error("This model's maximum context length is 65536 tokens. However, you requested 70000 tokens."), CONTEXT_WINDOW_EXCEEDED),
        (400, openai_error("too long", code="context_length_exceeded"), CONTEXT_WINDOW_EXCEEDED),
        (400, anthropic_error("invalid_request_error", "prompt is too long: 208000 tokens > 200000 maximum"), CONTEXT_WINDOW_EXCEEDED),
        (413, anthropic_error("request_too_large", "Request exceeds the maximum allowed number of bytes."), INVALID_REQUEST),
        (400, openai_error("Invalid request: messages[1].content is required"), INVALID_REQUEST),
        (422, openai_error("Failed to deserialize the JSON body"), INVALID_REQUEST),
        (404, b"Not Found", INVALID_REQUEST),
        (408, b"", TIMEOUT),
        (301, b"Moved Permanently", INVALID_REQUEST),
        (500, b"<html>Internal Server Error</html>", SERVER),
        (503, openai_error("Server overloaded", "server_error"), SERVER),
        (529, anthropic_error("overloaded_error", "Overloaded"), SERVER),
    ],
)
def test_status_and_wording_map_to_a_code(status, body, code):
    failure = failure_from_status(status, body, httpx.Headers())
    assert (failure.code, failure.status) == (code, status)
    assert f"HTTP {status}" in failure.message


def test_the_detail_is_the_providers_message_clipped_as_it_leaves_the_adapter(monkeypatch):
    monkeypatch.setenv("DS_KEY", KEY)
    long_error = httpx.Response(400, json={"error": {"message": "bad " * 400}})
    adapter = DeepSeekAdapter("https://api.example.test", "DS_KEY", "m", transport=recording_transport([], long_error))
    (finish,) = collect(adapter, {})
    assert finish.failure.message.startswith("The provider rejected the request (HTTP 400): bad bad")
    assert len(finish.failure.message) == 500 and finish.failure.message.endswith("…")


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3000),
        ({"retry-after": " 1.5 "}, 1500),
        ({"retry-after": "0"}, 0),
        ({"retry-after": "-4"}, 0),
        ({"retry-after-ms": "250", "retry-after": "9"}, 250),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "nan"}, None),
        ({}, None),
    ],
)
def test_retry_after_in_seconds(headers, expected):
    assert parse_retry_after(httpx.Headers(headers)) == expected


def test_retry_after_as_an_http_date():
    now = 1_767_225_600.0
    headers = httpx.Headers({"retry-after": formatdate(now + 7, usegmt=True)})
    assert parse_retry_after(headers, now=now) == 7000
    assert parse_retry_after(httpx.Headers({"retry-after": formatdate(now - 60, usegmt=True)}), now=now) == 0


def test_a_429_carries_its_retry_after():
    failure = failure_from_status(429, openai_error("Rate limit reached"), httpx.Headers({"Retry-After": "2"}))
    assert (failure.code, failure.status, failure.retry_after_ms) == (RATE_LIMIT, 429, 2000)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        ({"type": "overloaded_error", "message": "Overloaded"}, SERVER),
        ({"type": "authentication_error", "message": "invalid x-api-key"}, AUTH),
        ({"message": "Rate limit reached", "code": 429}, RATE_LIMIT),
        ({"message": "maximum context length exceeded"}, CONTEXT_WINDOW_EXCEEDED),
        ("upstream went away", SERVER),
        (42, SERVER),
    ],
)
def test_errors_reported_inside_a_stream(error, code):
    failure = failure_from_error_payload(error)
    assert failure.code == code and failure.status is None


def test_classification_without_a_status_defaults_to_server():
    assert classify_failure(None, "") == SERVER


def test_transport_errors():
    request = httpx.Request("POST", "https://example.invalid/chat/completions")
    assert failure_from_transport_error(httpx.ReadTimeout("", request=request), 0.3).code == TIMEOUT
    assert "0.3 s" in failure_from_transport_error(httpx.ReadTimeout("", request=request), 0.3).message
    assert failure_from_transport_error(httpx.ConnectError("refused", request=request), 1).code == TRANSPORT
    assert failure_from_transport_error(httpx.ConnectTimeout("slow", request=request), 1).code == TRANSPORT
    assert failure_from_transport_error(httpx.RemoteProtocolError("peer closed", request=request), 1).code == TRANSPORT
    assert failure_from_transport_error(httpx.UnsupportedProtocol("no scheme", request=request), 1).code == INVALID_REQUEST


@pytest.mark.parametrize("base_url", ["api.deepseek.com", "http://[::1"])
def test_an_unusable_base_url_is_an_invalid_request(monkeypatch, base_url):
    monkeypatch.setenv("DS_KEY", KEY)
    (finish,) = collect(DeepSeekAdapter(base_url, "DS_KEY", "m"), {})
    assert finish.failure.code == INVALID_REQUEST


# --- what the adapters send (an in-memory transport; the loopback server tests are functional) ---


def collect(adapter, body: dict, headers: dict | None = None) -> list:
    async def run() -> list:
        try:
            return [event async for event in adapter.stream(body, headers or {})]
        finally:
            await adapter.aclose()

    return asyncio.run(run())


def recording_transport(seen: list[httpx.Request], response: httpx.Response) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return response

    return httpx.MockTransport(handle)


SSE_STOP = b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'


def test_the_deepseek_request(monkeypatch):
    monkeypatch.setenv("DS_KEY", KEY)
    seen: list[httpx.Request] = []
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=SSE_STOP)
    adapter = DeepSeekAdapter("https://api.example.test/", "DS_KEY", "deepseek-v4-flash", transport=recording_transport(seen, response))
    body = {"messages": [{"role": "user", "content": "hi"}], "stream_options": {"other": 1}}
    events = collect(adapter, body, {"anthropic-beta": "mid-conversation-tool-changes-2026-07-01", "authorization": "Bearer stale"})
    assert check_stream(events) == Finish("stop")
    (request,) = seen
    assert str(request.url) == "https://api.example.test/chat/completions"
    assert json.loads(request.content) == {
        "model": "deepseek-v4-flash",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"other": 1, "include_usage": True},
    }
    assert request.headers.get_list("authorization") == [f"Bearer {KEY}"]
    assert request.headers["anthropic-beta"] == "mid-conversation-tool-changes-2026-07-01"
    assert request.headers["accept"] == "text/event-stream"
    assert body == {"messages": [{"role": "user", "content": "hi"}], "stream_options": {"other": 1}}  # untouched


def test_the_anthropic_request(monkeypatch):
    monkeypatch.setenv("AN_KEY", KEY)
    seen: list[httpx.Request] = []
    stream = b"".join(
        f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n".encode()
        for kind, fields in [
            ("message_start", {"message": {"usage": {"input_tokens": 3}}}),
            ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
            ("content_block_stop", {"index": 0}),
            ("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}),
            ("message_stop", {}),
        ]
    )
    response = httpx.Response(200, headers={"content-type": "text/event-stream; charset=utf-8"}, content=stream)
    adapter = AnthropicAdapter("https://api.example.test/anthropic", "AN_KEY", "claude-x", transport=recording_transport(seen, response))
    events = collect(adapter, {"model": "deepseek-v4-pro", "max_tokens": 100, "messages": []})
    assert check_stream(events) == Finish("stop")
    (request,) = seen
    assert str(request.url) == "https://api.example.test/anthropic/v1/messages"
    assert json.loads(request.content) == {"model": "deepseek-v4-pro", "max_tokens": 100, "messages": [], "stream": True}
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers


@pytest.mark.parametrize("adapter_class", [DeepSeekAdapter, AnthropicAdapter])
def test_a_missing_key_fails_naming_the_variable_and_sends_nothing(monkeypatch, adapter_class):
    monkeypatch.delenv("TOOLSCOPE_TEST_NO_SUCH_KEY", raising=False)
    seen: list[httpx.Request] = []
    adapter = adapter_class("https://api.example.test", "TOOLSCOPE_TEST_NO_SUCH_KEY", "m", transport=recording_transport(seen, httpx.Response(500)))
    (finish,) = collect(adapter, {})
    assert finish.reason == "error" and finish.failure.code == MISSING_CREDENTIAL
    assert "TOOLSCOPE_TEST_NO_SUCH_KEY" in finish.failure.message
    assert seen == []


@pytest.mark.parametrize("value", ["sk-“quoted”", "sk-\x01bell"])
def test_a_key_no_header_can_carry_fails_as_auth_without_showing_it(monkeypatch, value):
    monkeypatch.setenv("DS_KEY", value)
    seen: list[httpx.Request] = []
    (finish,) = collect(DeepSeekAdapter("https://api.example.test", "DS_KEY", "m", transport=recording_transport(seen, httpx.Response(500))), {})
    assert finish.failure.code == AUTH and "DS_KEY" in finish.failure.message and value not in finish.failure.message
    assert seen == []


def test_the_key_never_reaches_a_failure_message(monkeypatch):
    monkeypatch.setenv("DS_KEY", KEY)
    echo = httpx.Response(401, json={"error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_request_error"}})
    adapter = DeepSeekAdapter("https://api.example.test", "DS_KEY", "m", transport=recording_transport([], echo))
    (finish,) = collect(adapter, {})
    assert finish.failure.code == AUTH
    assert KEY not in finish.failure.message and "[redacted]" in finish.failure.message


def test_a_success_that_is_not_an_event_stream(monkeypatch):
    monkeypatch.setenv("DS_KEY", KEY)
    as_json_error = httpx.Response(200, json={"error": {"message": "Rate limit reached", "code": 429}})
    as_html = httpx.Response(200, headers={"content-type": "text/html"}, content=b"<html>captive portal</html>")
    for response, code in [(as_json_error, RATE_LIMIT), (as_html, MALFORMED_RESPONSE)]:
        adapter = DeepSeekAdapter("https://api.example.test", "DS_KEY", "m", transport=recording_transport([], response))
        (finish,) = collect(adapter, {})
        assert finish.failure.code == code


def test_a_borrowed_client_is_not_closed(monkeypatch):
    monkeypatch.setenv("DS_KEY", KEY)

    async def run() -> bool:
        response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=SSE_STOP)
        async with httpx.AsyncClient(transport=recording_transport([], response)) as client:
            adapter = DeepSeekAdapter("https://api.example.test", "DS_KEY", "m", http_client=client)
            events = [event async for event in adapter.stream({}, {})]
            await adapter.aclose()
            assert events[-1] == Finish("stop")
            return client.is_closed

    assert asyncio.run(run()) is False

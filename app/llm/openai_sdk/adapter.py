"""The `openai-sdk` adapter: one streamed chat completion through the official `openai` client.

The route exists to show what a library-backed client receives (seed 000's `pi-ai` role), so the
client does the HTTP and this maps its results onto the same contract as the other adapters:
- The chunks go through `DeepSeekTranslator`, the same wire's translator, so seed 004's identity
  rules hold here too. The client's own accumulator (`chat.completions.stream()`) concatenates
  every string member, so a continuation delta repeating a call's `id` would double it; it is not
  used.
- The client ends its iteration at `[DONE]` and at a clean EOF alike. The response counts as
  complete when its choice reported a finish reason; an end before that is `STREAM_CLOSED`.
- Exceptions become failures through the other adapters' mapping (`app.llm.provider_errors` for
  status and wording, `Retry-After`; `app.llm.http` for transport errors), so the codes and
  messages are the other adapters' own; the request runs through their `translate_request`. Failures always
  arrive as an error `Finish`; `abort` and cancellation behave as in `StreamingAdapter.stream`.
- Retries are the loop's job: the client never retries (`max_retries=0`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
import openai
from openai.resources.chat.completions import AsyncCompletions

from app.i18n import _
from app.llm.deepseek.translator import DeepSeekTranslator
from app.llm.errors import MALFORMED_RESPONSE, Failure
from app.llm.http import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_REQUEST_TIMEOUT,
    ClientHolder,
    Read,
    failure_from_transport_error,
    stream_timeout,
    translate_request,
    unusable_key,
)
from app.llm.provider_errors import failure_from_error_payload, failure_from_status
from app.llm.stream import Finish, StreamEvent

_CALL_SWITCHES = frozenset({"stream", "stream_options", "extra_headers", "extra_query", "extra_body", "timeout"})
_SDK_PARAMETERS = frozenset(inspect.signature(AsyncCompletions.create).parameters) - {"self"} - _CALL_SWITCHES
"""Body keys `create()` takes as keyword arguments. Any other key (DeepSeek's `thinking`) travels in
`extra_body`, so the wire body is exactly the one the builder made and the inspector shows."""

_UNSENT_KEY = "unsent"
"""The client refuses to start without a key. A route without a credential gets this one and the
`Authorization` header omitted, so it never leaves the process (and `OPENAI_API_KEY` is not read)."""


class OpenAISdkAdapter:
    credential_headers = frozenset({"authorization"})

    def __init__(
        self,
        base_url: str,
        api_key_env: str | None,
        model: str,
        *,
        http_client: httpx.AsyncClient | None = None,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    ) -> None:
        """`http_client` is borrowed (never closed here); otherwise the adapter makes one on first
        use and `aclose()` closes it. The client always runs over httpx, so a transport error maps
        exactly as in the other adapters. `api_key_env` None: the endpoint takes no credential."""
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.model = model
        self.idle_timeout = idle_timeout
        self.request_timeout = request_timeout
        self._clients = ClientHolder(http_client)

    async def aclose(self) -> None:
        await self._clients.aclose()

    async def stream(
        self, body: dict[str, Any], headers: Mapping[str, str], *, abort: asyncio.Event | None = None
    ) -> AsyncIterator[StreamEvent]:
        """Send `body` (a `deepseek-chat` body) with `headers`; yield stream events ending in exactly
        one `Finish`. Setting `abort` ends the stream at once with `Finish("aborted")`; cancelling the
        consumer closes the connection and re-raises `CancelledError` without a finish.

        The key is read from the environment now, so a key set after start-up is used; that is also
        why the `openai` client is made per request (it holds the key), over one shared httpx client.
        """
        api_key = os.environ.get(self.api_key_env, "").strip() if self.api_key_env else ""
        if self.api_key_env:
            unusable = unusable_key(self.api_key_env, api_key)
            if unusable is not None:
                yield Finish("error", unusable)
                return
        client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=api_key or _UNSENT_KEY,
            http_client=self._clients.get(),
            max_retries=0,
            timeout=stream_timeout(self.idle_timeout),
        )
        arguments = self._arguments(body, headers, api_key)
        translator = DeepSeekTranslator()

        def respond(read: Read) -> contextlib.AbstractAsyncContextManager[AsyncIterator[str]]:
            return _payloads(client, arguments, read)

        async for event in translate_request(
            translator,
            respond,
            translator.feed,
            api_key=api_key,
            abort=abort,
            request_timeout=self.request_timeout,
            errors=(openai.APIError, json.JSONDecodeError),
            failure_of=self._failure,
        ):
            yield event

    def _arguments(self, body: Mapping[str, Any], headers: Mapping[str, str], api_key: str) -> dict[str, Any]:
        """`create()`'s arguments: the body (its `model` wins over the route's) with streaming and
        the usage chunk switched on, plus `headers` (never a credential: that comes from the env)."""
        wire = {"model": self.model, **body}
        wire.pop("stream", None)
        stream_options = wire.pop("stream_options", None)
        extra_headers: dict[str, Any] = {
            name: value for name, value in headers.items() if name.lower() not in self.credential_headers
        }
        if not api_key:
            extra_headers["Authorization"] = openai.Omit()
        return {
            **{key: value for key, value in wire.items() if key in _SDK_PARAMETERS},
            "stream": True,
            "stream_options": {
                **(stream_options if isinstance(stream_options, dict) else {}),
                "include_usage": True,
            },
            "extra_headers": extra_headers,
            "extra_body": {key: value for key, value in wire.items() if key not in _SDK_PARAMETERS} or None,
        }

    def _failure(self, error: openai.APIError | json.JSONDecodeError) -> Failure:
        if isinstance(error, json.JSONDecodeError):
            # The client parses each `data:` payload itself and gives up on one that is not JSON.
            return Failure(
                code=MALFORMED_RESPONSE,
                message=_("The provider sent a malformed stream chunk ({member}).").format(member="data"),
            )
        if isinstance(error, openai.APIStatusError):
            # The client has read the error body; classify it from the bytes like the HTTP adapters.
            response = error.response
            return failure_from_status(response.status_code, response.content, response.headers)
        if isinstance(error, openai.APIConnectionError):
            return failure_from_transport_error(_transport_cause(error), self.idle_timeout)
        # An `error` member inside the stream: the client raises it with the member as `body`.
        return failure_from_error_payload(error.body)


@contextlib.asynccontextmanager
async def _payloads(
    client: openai.AsyncOpenAI, arguments: dict[str, Any], read: Read
) -> AsyncIterator[AsyncIterator[str]]:
    """The response's chunks as the JSON payloads the translator reads, then `[DONE]` if a choice
    reported its finish (the client ends at `[DONE]` and at a clean EOF alike)."""
    chunks = await read(client.chat.completions.create(**arguments))
    payloads = _payloads_of(chunks)
    try:
        yield payloads
    finally:
        await payloads.aclose()
        await chunks.close()


async def _payloads_of(chunks: openai.AsyncStream[Any]) -> AsyncIterator[str]:
    finish_reported = False
    async for chunk in chunks:
        finish_reported = finish_reported or _reports_finish(chunk)
        yield _payload(chunk)
    if finish_reported:
        yield "[DONE]"


def _payload(chunk: object) -> str:
    """A chunk as the JSON text the translator reads. The client builds chunk models without
    validating them, so unknown members (`reasoning_content`, `prompt_cache_hit_tokens`), `null` or
    empty identity and wrong types all survive; a payload that is not an object arrives as the bare
    JSON value and the translator rejects it. `json.dumps` escapes what a UTF-8 encoder would refuse
    (a lone UTF-16 surrogate from a `\\ud83d` escape), so the translator repairs it as on the other
    routes; the model's own `to_json` would raise."""
    if isinstance(chunk, openai.BaseModel):
        return json.dumps(chunk.to_dict(mode="json", warnings=False))
    return json.dumps(chunk)


def _reports_finish(chunk: object) -> bool:
    choices = getattr(chunk, "choices", None)
    return isinstance(choices, list) and any(getattr(choice, "finish_reason", None) for choice in choices)


def _transport_cause(error: openai.APIConnectionError) -> httpx.RequestError | httpx.InvalidURL:
    """The httpx error the client wrapped, for `failure_from_transport_error`: a stall is `TIMEOUT`,
    a connect timeout, refusal or reset `TRANSPORT`, as in the other adapters. The client also wraps
    a few non-httpx errors (TLS, anyio); those are restated as the httpx error the client's verdict
    names (a timeout, or a transport failure)."""
    cause = error.__cause__
    if isinstance(cause, (httpx.RequestError, httpx.InvalidURL)):
        return cause
    detail = str(cause) if cause is not None and str(cause) else error.message
    if isinstance(error, openai.APITimeoutError):
        return httpx.ReadTimeout(detail, request=error.request)
    return httpx.TransportError(detail, request=error.request)

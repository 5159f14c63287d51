"""HTTP plumbing the streaming dialects share (docs/architecture.md §9): status → failure mapping, `Retry-After`,
the idle timeout, and `StreamingAdapter`, which runs one SSE request through a translator.

Every failure leaves `StreamingAdapter.stream` as an error `Finish`, never as an exception: the loop
logs `agent/request-error` from the finish and the retry policy decides. The API key is read from
the environment at request time, sent only in a header, and redacted from every event the adapter
yields (`app.llm.redact`); failure details here are the provider's full text, clipped only after
redaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import re
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar, TypeVar

import httpx
from httpx_sse import ServerSentEvent, aconnect_sse

from app.i18n import N_, _
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
    Failure,
)
from app.llm.redact import KeyRedactor
from app.llm.stream import Finish, StreamEvent, StreamTranslator
from app.untrusted_json import loads

DEFAULT_IDLE_TIMEOUT = 120.0
"""Seconds without a single byte from the provider before the stream fails as `TIMEOUT`.
Providers send `: keep-alive` comments while a request queues, so silence this long is a stall."""

DEFAULT_REQUEST_TIMEOUT = 600.0
"""Seconds one request may take in all. Keep-alive comments rightly reset the idle timeout, so a
stream of nothing but comments would otherwise hold a turn for ever."""

CONNECT_TIMEOUT = 15.0
ERROR_BODY_LIMIT = 64 * 1024

T = TypeVar("T")

_QUOTA_WORDING = re.compile(r"quota|balance|billing|payment required", re.IGNORECASE)
_CONTEXT_WORDING = re.compile(
    r"context[ _-]?(length|window|limit)|maximum context|prompt is too long|too many (input )?tokens"
    r"|input is too long|exceeds? the (model'?s? )?(maximum )?context",
    re.IGNORECASE,
)
# Anthropic's error `type`s carry the status they stand for; a streamed `error` event has no status.
_STATUS_OF_ERROR_TYPE = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "server_error": 500,
    "overloaded_error": 529,
    "timeout_error": 504,
}
_SUMMARIES = {
    AUTH: N_("The provider refused the credentials"),
    QUOTA: N_("The account has no quota or balance left"),
    RATE_LIMIT: N_("The provider is rate limiting requests"),
    CONTEXT_WINDOW_EXCEEDED: N_("The conversation does not fit the model's context window"),
    INVALID_REQUEST: N_("The provider rejected the request"),
    SERVER: N_("The provider failed with a server error"),
    TIMEOUT: N_("The request timed out"),
}


def stream_timeout(idle_timeout: float) -> httpx.Timeout:
    """httpx applies the read timeout to every socket read, so it is exactly "no bytes for
    `idle_timeout` seconds", keep-alive comments included, at no cost per chunk."""
    return httpx.Timeout(idle_timeout, connect=min(CONNECT_TIMEOUT, idle_timeout))


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> int | None:
    """Milliseconds to wait from `retry-after-ms`, or `Retry-After` in seconds or as an HTTP-date."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        with contextlib.suppress(ValueError):
            return _non_negative_ms(float(raw_ms))
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        return _non_negative_ms(float(raw) * 1000)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    current = time.time() if now is None else now
    return _non_negative_ms((when.timestamp() - current) * 1000)


def _non_negative_ms(milliseconds: float) -> int | None:
    return max(0, math.ceil(milliseconds)) if math.isfinite(milliseconds) else None


def failure_from_status(status: int, body: bytes, headers: Mapping[str, str]) -> Failure:
    """An HTTP error response → its failure: code from status and wording, detail from the body."""
    labels, detail = _error_labels_and_detail(body)
    code = classify_failure(status, f"{labels} {detail}")
    return _failure(code, detail, status=status, retry_after_ms=parse_retry_after(headers))


def failure_from_error_payload(error: object) -> Failure:
    """An error reported inside a stream (`{"error": …}` chunk, Anthropic `error` event)."""
    labels, detail = _describe_error(error)
    status = None
    if isinstance(error, dict):
        kind = error.get("type")
        status = _STATUS_OF_ERROR_TYPE.get(kind) if isinstance(kind, str) else None
        if status is None and type(error.get("code")) is int:
            status = error["code"]
    code = classify_failure(status, f"{labels} {detail}")
    return _failure(code, detail, status=None, retry_after_ms=None)


def classify_failure(status: int | None, wording: str) -> str:
    """The failure code for an HTTP status (None when the stream itself reported the error)."""
    if status in (401, 403):
        return AUTH
    if status == 402 or _QUOTA_WORDING.search(wording):
        return QUOTA
    if _CONTEXT_WORDING.search(wording) and (status is None or 400 <= status < 500):
        return CONTEXT_WINDOW_EXCEEDED
    if status == 429:
        return RATE_LIMIT
    if status == 408:
        return TIMEOUT
    if status is not None and status < 500:
        return INVALID_REQUEST  # other 4xx, and a redirect: a wrong base URL, not worth a retry
    return SERVER


def failure_from_transport_error(
    error: httpx.RequestError | httpx.InvalidURL, idle_timeout: float
) -> Failure:
    if isinstance(error, (httpx.InvalidURL, httpx.UnsupportedProtocol)):
        return Failure(
            code=INVALID_REQUEST,
            message=_("The provider's base URL is not usable: {detail}").format(detail=error),
        )
    if isinstance(error, (httpx.ReadTimeout, httpx.WriteTimeout)):
        return Failure(
            code=TIMEOUT,
            message=_("The provider sent nothing for {seconds} s.").format(seconds=f"{idle_timeout:g}"),
        )
    detail = str(error) or type(error).__name__
    host = _host_of(error)
    if host is None:
        message = _("The connection to the provider failed: {detail}").format(detail=detail)
    else:
        message = _("The connection to {host} failed: {detail}").format(host=host, detail=detail)
    return Failure(code=TRANSPORT, message=message)


def _host_of(error: httpx.RequestError | httpx.InvalidURL) -> str | None:
    """`host:port` of the request that failed, so the user knows which endpoint to check."""
    try:
        url = error.request.url  # type: ignore[union-attr]
    except (AttributeError, RuntimeError):  # no request attached
        return None
    if not url.host:
        return None
    return f"{url.host}:{url.port}" if url.port is not None else url.host


def _failure(code: str, detail: str, *, status: int | None, retry_after_ms: int | None) -> Failure:
    summary = _(_SUMMARIES[code])
    if status is not None:
        summary = _("{summary} (HTTP {status})").format(summary=summary, status=status)
    message = _("{summary}: {detail}").format(summary=summary, detail=detail) if detail else summary
    return Failure(code=code, message=message, status=status, retry_after_ms=retry_after_ms)


def _error_labels_and_detail(body: bytes) -> tuple[str, str]:
    text = body.decode("utf-8", errors="replace").strip()
    try:
        payload = loads(text)
    except ValueError:
        return "", text
    if isinstance(payload, dict) and "error" in payload:
        return _describe_error(payload["error"])
    if isinstance(payload, dict) and isinstance(payload.get("message"), str):
        return "", payload["message"]
    return "", text


def _describe_error(error: object) -> tuple[str, str]:
    """(its `type` and `code`, its message) of an error object in either dialect's shape."""
    if isinstance(error, dict):
        labels = " ".join(str(error[key]) for key in ("type", "code") if error.get(key) is not None)
        message = error.get("message")
        return labels, message if isinstance(message, str) else json.dumps(error)
    if isinstance(error, str):
        return "", error
    return "", json.dumps(error)


def unusable_key(api_key_env: str, api_key: str) -> Failure | None:
    """Why the key cannot be sent, naming its variable (never the key itself), or None."""
    if not api_key:
        return Failure(
            code=MISSING_CREDENTIAL,
            message=_("No API key: set the environment variable {name}.").format(name=api_key_env),
        )
    if not (api_key.isascii() and api_key.isprintable()):
        return Failure(
            code=AUTH,
            message=_("The API key in {name} has characters an HTTP header cannot carry.").format(
                name=api_key_env
            ),
        )
    return None


async def _read_capped(response: httpx.Response) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= ERROR_BODY_LIMIT:
            break
    return bytes(body[:ERROR_BODY_LIMIT])


class AbortWatch:
    """Lets `abort.set()` interrupt a read in progress, and only a read: never one of the consumer's
    own awaits between two events. Each read runs in an `asyncio.timeout(None)` scope that the abort
    expires at once; asyncio then turns its own cancellation into `TimeoutError` (and leaves any
    other cancellation of the task alone), which `stream` reports as an aborted finish."""

    def __init__(self, abort: asyncio.Event) -> None:
        self.abort = abort
        self._scope: asyncio.Timeout | None = None
        self._waiter = asyncio.ensure_future(abort.wait())
        self._waiter.add_done_callback(self._expire_read)

    def _expire_read(self, waiter: asyncio.Future[Any]) -> None:
        if self._scope is not None and not waiter.cancelled():
            self._scope.reschedule(asyncio.get_running_loop().time())

    async def read(self, awaitable: Awaitable[T]) -> T:
        async with asyncio.timeout(None) as scope:
            self._scope = scope
            if self.abort.is_set():
                scope.reschedule(asyncio.get_running_loop().time())
            try:
                return await awaitable
            finally:
                self._scope = None

    def close(self) -> None:
        self._waiter.cancel()


class StreamAborted(Exception):
    """Raised out of a read that `abort` interrupted; the adapter turns it into `Finish("aborted")`."""


async def read_unless_aborted(watch: AbortWatch | None, awaitable: Awaitable[T]) -> T:
    """Await one read of the response; `StreamAborted` if the watch's abort interrupted it."""
    if watch is None:
        return await awaitable
    try:
        return await watch.read(awaitable)
    except TimeoutError:
        if watch.abort.is_set():
            raise StreamAborted from None
        raise


class RequestTimedOut(Exception):
    """Raised out of a read that the request's total deadline cut short."""


class RequestDeadline:
    """The total deadline of one request: every read of it (connecting, each event, an error
    body) must end by the same moment. Like `AbortWatch` it bounds only the reads, never the
    consumer's own work between two events."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._when = asyncio.get_running_loop().time() + seconds

    async def read(self, awaitable: Awaitable[T]) -> T:
        scope = asyncio.timeout_at(self._when)
        try:
            async with scope:
                return await awaitable
        except TimeoutError:
            if scope.expired():
                raise RequestTimedOut from None
            raise

    def failure(self) -> Failure:
        return Failure(
            code=TIMEOUT,
            message=_("The request did not finish within {seconds} s.").format(seconds=f"{self.seconds:g}"),
        )


class ClientHolder:
    """An adapter's httpx client: a borrowed one (never closed here), or one made on first use
    (over `transport` when given) that `aclose()` closes."""

    def __init__(
        self, borrowed: httpx.AsyncClient | None, transport: httpx.AsyncBaseTransport | None = None
    ) -> None:
        self._borrowed = borrowed
        self._transport = transport
        self._own: httpx.AsyncClient | None = None

    def get(self) -> httpx.AsyncClient:
        if self._borrowed is not None:
            return self._borrowed
        if self._own is None:
            self._own = httpx.AsyncClient(transport=self._transport)
        return self._own

    async def aclose(self) -> None:
        if self._own is not None:
            await self._own.aclose()
            self._own = None


class StreamingAdapter(ABC):
    """One provider endpoint spoken over SSE. A dialect supplies the path, the credential headers,
    the wire body and a translator; this class does the request and maps every failure."""

    path: ClassVar[str]
    credential_headers: ClassVar[frozenset[str]]

    def __init__(
        self,
        base_url: str,
        api_key_env: str | None,
        model: str,
        *,
        http_client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    ) -> None:
        """`http_client` is borrowed (never closed here); otherwise the adapter makes one on first
        use, over `transport` when given (the offline model's), and `aclose()` closes it.
        `api_key_env` None: the endpoint takes no credential (the in-process offline model)."""
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.model = model
        self.idle_timeout = idle_timeout
        self.request_timeout = request_timeout
        self._clients = ClientHolder(http_client, transport)

    async def aclose(self) -> None:
        await self._clients.aclose()

    def _client(self) -> httpx.AsyncClient:
        return self._clients.get()

    # What a dialect defines.

    @abstractmethod
    def _credential(self, api_key: str) -> dict[str, str]:
        """The headers that carry the key."""

    @abstractmethod
    def _wire_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """The body to POST: the given one with the dialect's streaming switches."""

    @abstractmethod
    def _translator(self) -> tuple[StreamTranslator, Callable[[ServerSentEvent], list[StreamEvent]]]:
        """A fresh translator and how one SSE event is fed to it."""

    # The request.

    async def stream(
        self, body: dict[str, Any], headers: Mapping[str, str], *, abort: asyncio.Event | None = None
    ) -> AsyncIterator[StreamEvent]:
        """POST `body` (plus the streaming switches) with `headers` plus the credential; yield the
        response as stream events ending in exactly one `Finish`.

        Stopping: set `abort` and the stream ends at once with `Finish("aborted")` (held usage
        first), the connection closed. Cancelling the consuming task instead closes the connection
        and re-raises `CancelledError` without a finish — asyncio requires a cancellation to
        propagate — so the loop sees the `CancelledError` itself and records the turn as aborted.
        """
        api_key = os.environ.get(self.api_key_env, "").strip() if self.api_key_env else ""
        if self.api_key_env:
            unusable = unusable_key(self.api_key_env, api_key)
            if unusable is not None:
                yield Finish("error", unusable)
                return
        translator, feed = self._translator()
        request_headers = {k: v for k, v in headers.items() if k.lower() not in self.credential_headers}
        if api_key:
            request_headers.update(self._credential(api_key))
        watch = AbortWatch(abort) if abort is not None else None
        try:
            wire_body = self._wire_body(body)
            redactor = KeyRedactor(api_key)
            async for event in self._exchange(translator, feed, wire_body, request_headers, watch):
                for redacted in redactor.feed(event):
                    yield redacted
        finally:
            if watch is not None:
                watch.close()


    async def _exchange(
        self,
        translator: StreamTranslator,
        feed: Callable[[ServerSentEvent], list[StreamEvent]],
        body: dict[str, Any],
        headers: dict[str, str],
        watch: AbortWatch | None,
    ) -> AsyncIterator[StreamEvent]:
        deadline = RequestDeadline(self.request_timeout)

        def read(awaitable: Awaitable[T]) -> Awaitable[T]:
            return read_unless_aborted(watch, deadline.read(awaitable))

        final: list[StreamEvent]
        try:
            async with contextlib.AsyncExitStack() as stack:
                source = await read(
                    stack.enter_async_context(
                        aconnect_sse(
                            self._client(),
                            "POST",
                            self.base_url + self.path,
                            json=body,
                            headers=headers,
                            timeout=stream_timeout(self.idle_timeout),
                        )
                    )
                )
                response = source.response
                if not response.is_success:
                    error_body = await read(_read_capped(response))
                    failure = failure_from_status(response.status_code, error_body, response.headers)
                    final = translator.fail(failure)
                elif "text/event-stream" not in response.headers.get("content-type", ""):
                    error_body = await read(_read_capped(response))
                    final = translator.fail(_not_an_event_stream(response, error_body))
                else:
                    events = source.aiter_sse()
                    stack.push_async_callback(events.aclose)
                    while True:
                        if watch is not None and watch.abort.is_set():
                            raise StreamAborted
                        try:
                            sse = await read(anext(events))
                        except StopAsyncIteration:
                            final = translator.end_of_stream()
                            break
                        produced = feed(sse)
                        if translator.finished:
                            final = produced
                            break
                        for event in produced:
                            yield event
        except StreamAborted:
            final = translator.abort()
        except RequestTimedOut:
            final = translator.fail(deadline.failure())
        except (httpx.RequestError, httpx.InvalidURL) as error:
            final = translator.fail(failure_from_transport_error(error, self.idle_timeout))
        for event in final:
            yield event


def _not_an_event_stream(response: httpx.Response, body: bytes) -> Failure:
    """A 2xx that is not SSE: some gateways answer errors this way; otherwise it is malformed."""
    try:
        payload = loads(body)
    except ValueError:
        payload = None
    if isinstance(payload, dict) and "error" in payload:
        return failure_from_error_payload(payload["error"])
    return Failure(
        code=MALFORMED_RESPONSE,
        message=_("The provider answered with {content_type} instead of an event stream.").format(
            content_type=response.headers.get("content-type") or "no content type"
        ),
        status=response.status_code,
    )

"""HTTP plumbing the streaming dialects share (docs/architecture.md §9): the idle timeout, transport errors, the
reads of one request (its abort and its total deadline) and `StreamingAdapter`, which runs one SSE
request through a translator. What a provider's error response means is `app.llm.provider_errors`'s.

Every failure leaves `StreamingAdapter.stream` as an error `Finish`, never as an exception: the loop
logs `agent/request-error` from the finish and the retry policy decides. The API key is read from
the environment at request time, sent only in a header, and redacted from every event the adapter
yields (`app.llm.redact`); failure details here are the provider's full text, clipped only after
redaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, ClassVar, Protocol, TypeVar

import httpx
from httpx_sse import ServerSentEvent, aconnect_sse

from app.i18n import _
from app.llm.errors import (
    AUTH,
    INVALID_REQUEST,
    MALFORMED_RESPONSE,
    MISSING_CREDENTIAL,
    TIMEOUT,
    TRANSPORT,
    Failure,
)
from app.llm.provider_errors import failure_from_error_payload, failure_from_status
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
Item = TypeVar("Item")


def stream_timeout(idle_timeout: float) -> httpx.Timeout:
    """httpx applies the read timeout to every socket read, so it is exactly "no bytes for
    `idle_timeout` seconds", keep-alive comments included, at no cost per chunk."""
    return httpx.Timeout(idle_timeout, connect=min(CONNECT_TIMEOUT, idle_timeout))


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
    other cancellation of the task alone), which `translate_request` reports as an aborted finish."""

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


class Read(Protocol):
    """How a request's response is awaited: `translate_request`'s reads, each bounded by the
    request's total deadline and interrupted by its abort."""

    def __call__(self, awaitable: Awaitable[T], /) -> Awaitable[T]: ...


class ErrorResponse(Exception):
    """Raised where a response turns out to be an error rather than a stream (an HTTP status, a
    body that is no event stream); `translate_request` finishes with its failure."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message)
        self.failure = failure


async def translate_request(
    translator: StreamTranslator,
    respond: Callable[[Read], contextlib.AbstractAsyncContextManager[AsyncIterator[Item]]],
    feed: Callable[[Item], list[StreamEvent]],
    *,
    api_key: str,
    abort: asyncio.Event | None,
    request_timeout: float,
    errors: tuple[type[Exception], ...],
    failure_of: Callable[[Any], Failure],
) -> AsyncIterator[StreamEvent]:
    """One request through `translator`, as stream events ending in exactly one `Finish`, the key
    redacted from each (`KeyRedactor`). `respond(read)` sends the request and gives the response's
    items, each `feed` to the translator; it awaits the response through `read` only.

    The stream ends with the translator's own finish, at the items' end, at an abort (`abort` set:
    at once, even mid-read), at the request's deadline, at an `ErrorResponse` or at one of `errors`
    (`failure_of` says what it means); those final events come once the response is closed.
    """
    watch = AbortWatch(abort) if abort is not None else None
    deadline = RequestDeadline(request_timeout)
    redactor = KeyRedactor(api_key)

    def read(awaitable: Awaitable[T]) -> Awaitable[T]:
        return read_unless_aborted(watch, deadline.read(awaitable))

    final: list[StreamEvent]
    try:
        try:
            async with respond(read) as items:
                while True:
                    if watch is not None and watch.abort.is_set():
                        raise StreamAborted
                    try:
                        item = await read(anext(items))
                    except StopAsyncIteration:
                        final = translator.end_of_stream()
                        break
                    produced = feed(item)
                    if translator.finished:
                        final = produced
                        break
                    for event in produced:
                        for redacted in redactor.feed(event):
                            yield redacted
        except ErrorResponse as error:
            final = translator.fail(error.failure)
        except StreamAborted:
            final = translator.abort()
        except RequestTimedOut:
            final = translator.fail(deadline.failure())
        except errors as error:
            final = translator.fail(failure_of(error))
        for event in final:
            for redacted in redactor.feed(event):
                yield redacted
    finally:
        if watch is not None:
            watch.close()


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
        wire_body = self._wire_body(body)

        def respond(read: Read) -> contextlib.AbstractAsyncContextManager[AsyncIterator[ServerSentEvent]]:
            return self._events(wire_body, request_headers, read)

        async for event in translate_request(
            translator,
            respond,
            feed,
            api_key=api_key,
            abort=abort,
            request_timeout=self.request_timeout,
            errors=(httpx.RequestError, httpx.InvalidURL),
            failure_of=lambda error: failure_from_transport_error(error, self.idle_timeout),
        ):
            yield event

    @contextlib.asynccontextmanager
    async def _events(
        self, body: dict[str, Any], headers: dict[str, str], read: Read
    ) -> AsyncIterator[AsyncIterator[ServerSentEvent]]:
        """The response's server-sent events; `ErrorResponse` for an error status or a body that
        is no event stream."""
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
                raise ErrorResponse(failure_from_status(response.status_code, error_body, response.headers))
            if "text/event-stream" not in response.headers.get("content-type", ""):
                error_body = await read(_read_capped(response))
                raise ErrorResponse(_not_an_event_stream(response, error_body))
            events = source.aiter_sse()
            stack.push_async_callback(events.aclose)
            yield events


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

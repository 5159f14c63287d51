"""Failure codes of a model request (docs/architecture.md §9) and the `Failure` an error finish carries.

`Failure` is the session log's own model (the `failure` of `agent/request-error` and `llm/retry`),
re-exported here so the loop logs exactly what an adapter reported, with no conversion in between.
Build it with keywords: `Failure(code=RATE_LIMIT, message=…, status=429, retry_after_ms=2000)`.

`Failure` is imported on first use (module `__getattr__`): the route catalog needs only the codes,
and the chat's first frame must not wait for the session models (pydantic).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.session.events import Failure

__all__ = [
    "ABORTED",
    "AUTH",
    "CONTEXT_WINDOW_EXCEEDED",
    "DEFAULT_RETRYABLE",
    "EMPTY_RESPONSE",
    "FAILURE_CODES",
    "INVALID_REQUEST",
    "MALFORMED_RESPONSE",
    "MALFORMED_TOOL_CALL",
    "MISSING_CREDENTIAL",
    "QUOTA",
    "RATE_LIMIT",
    "SERVER",
    "STREAM_CLOSED",
    "TIMEOUT",
    "TRANSPORT",
    "Failure",
]

AUTH = "AUTH"
QUOTA = "QUOTA"
RATE_LIMIT = "RATE_LIMIT"
CONTEXT_WINDOW_EXCEEDED = "CONTEXT_WINDOW_EXCEEDED"
INVALID_REQUEST = "INVALID_REQUEST"
SERVER = "SERVER"
TRANSPORT = "TRANSPORT"
TIMEOUT = "TIMEOUT"
EMPTY_RESPONSE = "EMPTY_RESPONSE"
STREAM_CLOSED = "STREAM_CLOSED"
MALFORMED_RESPONSE = "MALFORMED_RESPONSE"
MALFORMED_TOOL_CALL = "MALFORMED_TOOL_CALL"
MISSING_CREDENTIAL = "MISSING_CREDENTIAL"
ABORTED = "ABORTED"

FAILURE_CODES: frozenset[str] = frozenset(
    {
        AUTH,
        QUOTA,
        RATE_LIMIT,
        CONTEXT_WINDOW_EXCEEDED,
        INVALID_REQUEST,
        SERVER,
        TRANSPORT,
        TIMEOUT,
        EMPTY_RESPONSE,
        STREAM_CLOSED,
        MALFORMED_RESPONSE,
        MALFORMED_TOOL_CALL,
        MISSING_CREDENTIAL,
        ABORTED,
    }
)
"""Every code an adapter may put in a failure; anything else is a bug."""

DEFAULT_RETRYABLE: frozenset[str] = frozenset(
    {EMPTY_RESPONSE, RATE_LIMIT, SERVER, TIMEOUT, TRANSPORT, MALFORMED_TOOL_CALL}
)
"""Codes the retry policy retries unless configured otherwise: the ones a second try can fix.
`MALFORMED_TOOL_CALL` is here because a call without identity is a provider hiccup (seed 004)."""


def __getattr__(name: str) -> Any:
    if name == "Failure":
        from app.session.events import Failure

        return Failure
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""What a provider's error means: an HTTP error response (status, body, `Retry-After`)
or an error reported inside a stream, as the failure the loop logs. Pure functions of bytes and
JSON: the stream translators use them, and they import no HTTP client (the transport's own errors
are `app.llm.http`'s). Failure details are the provider's full text, clipped only after redaction.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

from app.i18n import N_, _
from app.llm.errors import (
    AUTH,
    CONTEXT_WINDOW_EXCEEDED,
    INVALID_REQUEST,
    QUOTA,
    RATE_LIMIT,
    SERVER,
    TIMEOUT,
    Failure,
)
from app.untrusted_json import loads

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

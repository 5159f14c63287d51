"""An httpx transport (no sockets) that serves the offline model over the `deepseek-chat` wire.

Selecting `offline/demo` therefore runs the real DeepSeek adapter, SSE framing, translator and
projection end to end. Token counts are estimates (4 characters a token); cache hits are the
common prefix with the previous request, as a provider's prompt cache would report them.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from app.llm.offline.model import OfflineRequestError, Reply, plan_reply
from app.llm.prefix import common_prefix_length
from app.paths import ensure_private_dir

MODEL_NAME = "offline-demo"
OFFLINE_CACHE_FILE = "offline-prompt"
"""The simulated prompt cache's file, in the data dir's `cache/` (`SimulatedCache`)."""
_CHARS_PER_TOKEN = 4


def _environment_delay() -> float:
    return float(os.environ.get("TOOLSCOPE_OFFLINE_DELAY", "0.01"))


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes], delay: float | None) -> None:
        self._chunks = chunks
        self._delay = delay

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            delay = self._delay if self._delay is not None else _environment_delay()
            if delay:
                await asyncio.sleep(delay)
            yield chunk


class OfflineTransport(httpx.AsyncBaseTransport):
    """Answers `POST …/chat/completions` with a streamed, deterministic reply.

    `beta_header` is the (name, value) a request must carry to use tool-update blocks.
    `delay` (seconds between chunks) makes the stream visible in the UI; tests use 0. Without
    it, `TOOLSCOPE_OFFLINE_DELAY` is read before each chunk, so a test can slow one turn down
    and speed the rest up.
    """

    def __init__(
        self, beta_header: tuple[str, str], *, delay: float | None = None, cache_file: Path | None = None
    ) -> None:
        """`cache_file`: where the simulated prompt cache keeps the last prompt (see
        `SimulatedCache`); None keeps it in memory, for this transport's life."""
        self._beta_header = beta_header
        self._delay = delay
        self._cache = SimulatedCache(cache_file)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
            return _error(404, f"no such endpoint: {request.method} {request.url.path}")
        try:
            body = json.loads(await request.aread())
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _error(400, "the request body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "the request body must be a JSON object")
        name, value = self._beta_header
        beta = value in [part.strip() for part in request.headers.get(name, "").split(",")]
        try:
            reply = plan_reply(body, beta=beta)
        except OfflineRequestError as refusal:
            return _error(400, str(refusal))
        cached = self._cache.serve(reply.prompt_text)
        chunks = _sse(reply, cached_chars=cached)
        return httpx.Response(
            200,
            headers={"content-type": "text/event-stream; charset=utf-8"},
            stream=_Chunks(chunks, self._delay),
            request=request,
        )


class SimulatedCache:
    """The provider's side of the offline model's prompt cache: the last prompt it was sent, and
    how much of a new one that covers. Kept in a file, it outlives the client process as a
    provider's cache does (`toolscope run` is one process a turn), so the usage it reports is the
    oracle issue 27's estimates are held to. The file can only lower a count: a prompt is served
    from it only as far as it is the very same text (a damaged or foreign file serves nothing)."""

    MAX_BYTES = 16 * 1024 * 1024

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._last = ""

    def serve(self, prompt: str) -> int:
        """Characters of `prompt` served from the cache; `prompt` is cached from now on."""
        if self._path is not None:
            self._last = self._read()
        cached = common_prefix_length([self._last], [prompt])
        self._last = prompt
        if self._path is not None:
            self._write(prompt)
        return cached

    def _read(self) -> str:
        assert self._path is not None
        try:
            descriptor = os.open(self._path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return ""
        with os.fdopen(descriptor, "rb") as file:
            status = os.fstat(file.fileno())
            if not stat.S_ISREG(status.st_mode) or status.st_size > self.MAX_BYTES:
                return ""
            return file.read(self.MAX_BYTES).decode("utf-8", errors="replace")

    def _write(self, prompt: str) -> None:
        assert self._path is not None
        temporary = self._path.with_name(f".{self._path.name}.{os.getpid()}.tmp")
        try:
            ensure_private_dir(self._path.parent)
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(descriptor, "wb") as file:
                file.write(prompt.encode("utf-8"))
            os.replace(temporary, self._path)
        except OSError:
            temporary.unlink(missing_ok=True)  # the simulation goes on in memory


def _error(status: int, message: str) -> httpx.Response:
    return httpx.Response(
        status,
        json={"error": {"message": message, "type": "invalid_request_error"}},
    )


def _pieces(text: str, size: int = 12) -> list[str]:
    """Split on word boundaries into small deltas, as a real stream arrives."""
    pieces: list[str] = []
    current = ""
    for word in text.split(" "):
        candidate = f"{current} {word}" if current else word
        if len(candidate) > size and current:
            pieces.append(current + " ")
            current = word
        else:
            current = candidate
    if current:
        pieces.append(current)
    return pieces


def _sse(reply: Reply, *, cached_chars: int) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        payload = {
            "id": "offline",
            "object": "chat.completion.chunk",
            "model": MODEL_NAME,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"reasoning_content": piece}) for piece in _pieces(reply.reasoning)]
    chunks += [chunk({"content": piece}) for piece in _pieces(reply.text)]
    for index, call in enumerate(reply.calls):
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call.call_id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        middle = len(call.arguments) // 2
        for part in (call.arguments[:middle], call.arguments[middle:]):
            chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]}))
    chunks.append(chunk({}, "tool_calls" if reply.calls else "stop"))
    prompt_tokens = len(reply.prompt_text) // _CHARS_PER_TOKEN
    reasoning_tokens = len(reply.reasoning) // _CHARS_PER_TOKEN
    completion_tokens = (
        reasoning_tokens
        + len(reply.text) // _CHARS_PER_TOKEN
        + sum(len(c.arguments) + len(c.name) for c in reply.calls) // _CHARS_PER_TOKEN
    )
    usage = {
        "id": "offline",
        "object": "chat.completion.chunk",
        "model": MODEL_NAME,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_cache_hit_tokens": cached_chars // _CHARS_PER_TOKEN,
            "prompt_cache_miss_tokens": prompt_tokens - cached_chars // _CHARS_PER_TOKEN,
            "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
        },
    }
    chunks.append(b"data: " + json.dumps(usage).encode() + b"\n\n")
    chunks.append(b"data: [DONE]\n\n")
    return chunks

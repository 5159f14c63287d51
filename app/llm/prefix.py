"""Does a request keep the previous request's cached prefix on the same route? (docs/architecture.md §8)

A provider caches the rendered prefix: the non-deferred declarations, then the top system text,
then the messages. Deferred declarations are not rendered up front, so adding (or dropping) one
changes nothing here. The check works on finished wire bodies, so it sees exactly what was (or
would be) sent, whatever the projection did.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.llm.routes import Dialect


@dataclass(frozen=True, slots=True)
class PrefixResult:
    kept: bool
    first_difference: str | None
    """A JSON pointer into the newer body (`/tools/1`, `/system`, `/messages/5`), or None when kept.
    An index one past the end of an array means the newer body lacks that element."""


KEPT = PrefixResult(kept=True, first_difference=None)


def json_pointer(*tokens: str | int) -> str:
    """RFC 6901: `~` is written `~0` and `/` is written `~1` inside a token."""
    return "".join("/" + str(token).replace("~", "~0").replace("/", "~1") for token in tokens)


def prefix_kept(previous: dict[str, Any], body: dict[str, Any], dialect: Dialect) -> PrefixResult:
    """Compare two bodies of one route in the order the provider renders them."""
    before, after = _Rendered.of(previous, dialect), _Rendered.of(body, dialect)
    return (
        _tools_difference(previous, body)
        or (_broken(*after.system_pointer) if before.system != after.system else None)
        or _messages_difference(before.conversation, after.conversation, after.offset)
        or KEPT
    )


@dataclass(frozen=True, slots=True)
class _Rendered:
    """Where a dialect keeps the top system text, and which messages are conversation."""

    system: Any
    system_pointer: tuple[str | int, ...]
    conversation: Sequence[Any]
    offset: int
    """Index in `messages` of the first conversation message."""

    @classmethod
    def of(cls, body: dict[str, Any], dialect: Dialect) -> _Rendered:
        messages = body.get("messages", [])
        if dialect == "anthropic-messages":
            return cls(body.get("system"), ("system",), messages, 0)
        # The chat wire (deepseek-chat, and the openai-sdk and offline routes sharing it): the top
        # text is a leading system message with string content; update groups are system messages
        # with a list of blocks, so they are conversation.
        if messages and messages[0]["role"] == "system" and isinstance(messages[0]["content"], str):
            return cls(messages[0]["content"], ("messages", 0), messages[1:], 1)
        return cls(None, ("messages", 0), messages, 0)


def _tools_difference(previous: dict[str, Any], body: dict[str, Any]) -> PrefixResult | None:
    before = _rendered_tools(previous)
    after = _rendered_tools(body)
    for rank, (index, tool) in enumerate(after):
        if rank >= len(before) or before[rank][1] != tool:
            return _broken("tools", index)
    if len(before) > len(after):
        return _broken("tools", len(body.get("tools", ())))
    return None


def _rendered_tools(body: dict[str, Any]) -> list[tuple[int, Any]]:
    """(index in `tools`, definition) of every declaration rendered up front."""
    return [
        (index, tool)
        for index, tool in enumerate(body.get("tools", ()))
        if not tool.get("defer_loading")
    ]


def _messages_difference(
    before: Sequence[Any], after: Sequence[Any], offset: int
) -> PrefixResult | None:
    for index, message in enumerate(before):
        if index >= len(after) or after[index] != message:
            return _broken("messages", index + offset)
    return None


def _broken(*tokens: str | int) -> PrefixResult:
    return PrefixResult(kept=False, first_difference=json_pointer(*tokens))


def render_for_cache(body: dict[str, Any], dialect: Dialect) -> str:
    """The body as a provider renders it for its prompt cache, as text: the tools declared up front,
    then (Anthropic) the top system text, then the messages (the chat wire keeps its system text as
    the first message). Its length estimates the tokens a request sends; the common start of two
    requests' renderings, the part a cache serves (the offline model's simulated cache and the
    report's cache diagnostic)."""
    return "".join(cache_chunks(body, dialect))


def cache_chunks(body: dict[str, Any], dialect: Dialect) -> list[str]:
    """`render_for_cache` in the encoder's pieces, never joined: a body may hold a tool result of
    many megabytes, and joining would hold its text twice more."""
    return list(_ENCODER.iterencode(_cache_parts(body, dialect, messages=True), _one_shot=True))


def cache_head_chunks(body: dict[str, Any], dialect: Dialect) -> list[str]:
    """The rendering of what comes before the messages (the up-front tools, and Anthropic's system
    text), as a list of its own. When two bodies' heads differ, their renderings' common start is
    their heads' (two different JSON values: neither is the other's start), without rendering
    the messages."""
    return list(_ENCODER.iterencode(_cache_parts(body, dialect, messages=False), _one_shot=True))


def _cache_parts(body: dict[str, Any], dialect: Dialect, *, messages: bool) -> list[Any]:
    anthropic = dialect == "anthropic-messages"
    tools = [
        entry if anthropic else entry.get("function", entry)
        for entry in body.get("tools") or ()
        if not entry.get("defer_loading")
    ]
    head = [tools, body.get("system")] if anthropic else [tools]
    return [*head, body.get("messages") or []] if messages else head


def message_text(message: dict[str, Any]) -> str:
    """One message's rendering for the cache (as it is inside `cache_chunks`)."""
    return _ENCODER.encode(message)


def message_length(message: dict[str, Any]) -> int:
    return len(message_text(message))


def rendered_length(chunks: Sequence[str]) -> int:
    return sum(map(len, chunks))


def common_prefix_length(a: Sequence[str], b: Sequence[str]) -> int:
    """How many characters the texts made of the chunks `a` and of `b` share at their start,
    without joining them (see `cache_chunks`)."""
    total = 0
    i = j = 0  # the chunks being compared
    x = y = 0  # where in each
    while i < len(a) and j < len(b):
        n = min(len(a[i]) - x, len(b[j]) - y)
        same = _common_start(a[i], x, b[j], y, n)
        total += same
        if same < n:
            return total
        x, y = x + n, y + n
        if x == len(a[i]):
            i, x = i + 1, 0
        if y == len(b[j]):
            j, y = j + 1, 0
    return total


def _common_start(a: str, x: int, b: str, y: int, n: int) -> int:
    """How many of the `n` characters from `a[x]` and from `b[y]` are the same at their start:
    equal slices of 64 KiB skipped, then a binary search within the first that differs (C-speed
    comparisons, and no copy larger than a slice)."""
    start = 0
    while start < n and a[x + start : x + min(start + _CHUNK, n)] == b[y + start : y + min(start + _CHUNK, n)]:
        start += _CHUNK
    low, high = min(start, n), min(start + _CHUNK, n)
    while low < high:
        middle = (low + high + 1) // 2
        if a[x + start : x + middle] == b[y + start : y + middle]:
            low = middle
        else:
            high = middle - 1
    return low


_CHUNK = 1 << 16
# The C encoder's one-shot mode (what `json.dumps` uses) returns its pieces as a list; the
# default `iterencode` is the pure-Python encoder, three times slower.
_ENCODER = json.JSONEncoder(sort_keys=True)

"""The API key never leaves an adapter inside a provider-sent string (docs/architecture.md §13).

A gateway may echo the `Authorization` header it refused in an error message, and a model may
repeat it in its answer, its reasoning or a tool call's arguments. `KeyRedactor` sits where every
stream event leaves an adapter, so nothing downstream (the log, the terminal, the UI) ever sees the
key: it replaces any run of 12 or more consecutive characters of the key with `[redacted]`, also
when the run is split by whitespace or invisible characters (a gateway wrapping a long line).
Failure messages are redacted first and clipped after, so a key straddling the cut cannot survive
in part. A tool name or call id is kept or replaced whole, never in part (`KeyRedactor`).

What counts as a secret is decided here alone (`is_secret`), for the adapters and the exports
alike: local servers take any key, and a placeholder such as `k` or `EMPTY` redacted from every
string would rewrite tool names and answers. Such a value changes nothing.

Streamed deltas are redacted without waiting for the block's end: the tail of the text seen so far
that could be the start of the key is held back until the next delta shows whether it is.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import replace
from functools import lru_cache

from app.llm.stream import BlockDelta, BlockEnd, BlockStart, Finish, StreamEvent

FRAGMENT = 12
"""The shortest run of the key that counts as the key."""

MIN_SECRET_LENGTH = 16
"""The shortest value taken for a secret: the keys providers issue have 32 characters or more and
a gateway's own keys 25 (LiteLLM's), while what people give a local server that takes any key
(`x`, `EMPTY`, `ollama`, `lm-studio`, `token-abc123`) is shorter."""

MIN_SECRET_VARIETY = 6
"""The fewest different characters a secret has: fewer is a template or a filler (`sk-0000…`),
and a random key of 16 or more characters has fewer about never (docs/decisions.md)."""

REDACTED = "[redacted]"

MESSAGE_LIMIT = 500
"""Characters of a failure message kept (after redaction); a provider's error page can be long."""

_SEPARATOR_CLASS = "\\s\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
"""Characters a key may be split by without its text changing: whitespace, controls and
invisible formatting characters."""
_JSON_ESCAPE = r"\\(?:[nrtbf]|u[0-9a-fA-F]{4})"
"""A JSON string escape (`\\n`, `\\u00a0`): tool arguments stream as JSON text, so a key split by a
newline there reads `…\\n…`."""
_SEPARATORS = re.compile(f"{_JSON_ESCAPE}|[{_SEPARATOR_CLASS}]")
_VISIBLE = re.compile(f"(?:{_JSON_ESCAPE}|[{_SEPARATOR_CLASS}])*+([^{_SEPARATOR_CLASS}])")
"""Each visible character (group 1), past the separators before it; possessive, so the backslash
of an escape is never taken for a visible character."""


def is_secret(value: str) -> bool:
    """Whether `value` is kept out of every output, or is too short or too common to be a secret
    and so changes nothing: under `MIN_SECRET_LENGTH` characters, fewer than `MIN_SECRET_VARIETY`
    different ones, or typed words (no digit, and letters of one case: `sk-no-key-required`,
    `YOUR_API_KEY`, `xxxxxxxxxxxxxxxxxxxx`). A random key mixes digits and letters, or cases."""
    return (
        len(value) >= MIN_SECRET_LENGTH
        and len(set(value)) >= MIN_SECRET_VARIETY
        and (any(char.isdigit() for char in value) or value.lower() != value != value.upper())
    )


def redact(text: str, key: str) -> str:
    """`text` with every run of the key (see the module docstring) replaced by `[redacted]`;
    `text` itself when the key is no secret."""
    runs = _runs_of(key)
    return _apply(text, _spans(text, _SEPARATORS.sub("", text), runs)) if runs else text


def redact_message(message: str, key: str) -> str:
    """A provider's failure message as it may be logged and shown: redacted, whitespace collapsed,
    then clipped to `MESSAGE_LIMIT` characters."""
    message = " ".join(redact(message, key).split())
    return message if len(message) <= MESSAGE_LIMIT else message[: MESSAGE_LIMIT - 1] + "…"


class _Runs:
    """Where the runs of one key start in a text without separators."""

    __slots__ = ("_blocks", "_starts")

    def __init__(self, key: str) -> None:
        runs = sorted({key[i : i + FRAGMENT] for i in range(len(key) - FRAGMENT + 1)})
        self._starts = re.compile("(?=(?:" + "|".join(map(re.escape, runs)) + "))")
        """Matches, without consuming, wherever a run starts."""
        block = FRAGMENT // 2
        self._blocks = tuple(key[i : i + block] for i in range(0, len(key) - block + 1, block))
        """The key's pieces of 6 at offsets 0, 6, 12…: every run of 12 holds one of them whole.
        Text without any has no run, and a substring search tells that much faster
        than `_starts`, which tries every run at every character."""

    def starts_in(self, visible: str) -> list[int]:
        for block in self._blocks:
            if block in visible:
                return [match.start() for match in self._starts.finditer(visible)]
        return []


@lru_cache(maxsize=4)
def _runs_of(key: str) -> _Runs | None:
    """How to find the key's runs; None when the key is no secret."""
    return _Runs(key) if is_secret(key) else None


def _spans(text: str, visible: str, runs: _Runs) -> list[tuple[int, int]]:
    """Where runs of the key (`runs`) are in `text` (`visible`: `text` without separators):
    merged, sorted `(start, end)` ranges."""
    starts = runs.starts_in(visible)
    if not starts:
        return []
    # Back from positions in `visible` to positions in `text`.
    positions = _visible_positions(text)
    merged: list[tuple[int, int]] = []
    for first in starts:
        start, end = positions[first], positions[first + FRAGMENT - 1] + 1
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _apply(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    parts, last = [], 0
    for start, end in spans:
        parts += [text[last:start], REDACTED]
        last = end
    parts.append(text[last:])
    return "".join(parts)


class KeyRedactor:
    """Redacts the key from one response's stream events, in order, as they arrive.

    `feed` returns the events to pass on for one event: a delta may come out shorter (its tail held
    back), or not at all, and the held text comes out as a delta of its own just before its block
    ends or the response finishes. Complete tool arguments and failure messages are redacted whole;
    every failure message is clipped after redaction, even without a key. A key that is no secret
    (`is_secret`) passes every event on as it came, but for that clipping.

    A tool name or call id is never rewritten in part: `bar__unloc[redacted]` would name no tool,
    and part of an id would no longer pair a call with its result. One that holds the key is
    replaced whole: a name by `[redacted]`, which names no tool (tool names are `[a-zA-Z0-9_-]`),
    so the call is answered `UNKNOWN_TOOL`; an id by a fresh `call-<12 hex>` (the form the agent
    loop gives a repeated id), the same at the block's start and end.
    """

    def __init__(self, key: str) -> None:
        self._runs = _runs_of(key)
        self._key = key if self._runs else ""
        self._held: dict[int, str] = {}
        """Per block, the text not yet passed on: it might be the start of the key."""
        self._fresh_ids: dict[int, str] = {}
        """Per tool-call block, the id given in place of one that holds the key."""

    def feed(self, event: StreamEvent) -> list[StreamEvent]:
        key = self._key
        if isinstance(event, BlockDelta):
            if not key:
                return [event]
            shown = self._release(event.index, event.text)
            if shown == event.text:
                return [event]
            return [BlockDelta(event.index, shown)] if shown else []
        if isinstance(event, BlockStart):
            if key and (event.call_id or event.name):
                call_id = self._call_id(event.index, event.call_id)
                event = replace(event, call_id=call_id, name=self._name(event.name))
            return [event]
        if isinstance(event, BlockEnd):
            if key and (event.call_id or event.name or event.arguments):
                event = replace(
                    event,
                    call_id=self._call_id(event.index, event.call_id),
                    name=self._name(event.name),
                    arguments=_maybe(event.arguments, key),
                )
            return [*self._flush(event.index), event]
        if isinstance(event, Finish):
            flushed = [delta for index in list(self._held) for delta in self._flush(index)]
            if event.failure is not None:
                message = redact_message(event.failure.message, key)
                event = replace(event, failure=event.failure.model_copy(update={"message": message}))
            return [*flushed, event]
        return [event]

    def _holds_key(self, value: str) -> bool:
        return self._runs is not None and bool(self._runs.starts_in(_SEPARATORS.sub("", value)))

    def _name(self, name: str | None) -> str | None:
        return REDACTED if name and self._holds_key(name) else name

    def _call_id(self, index: int, call_id: str | None) -> str | None:
        if not call_id or not self._holds_key(call_id):
            return call_id
        if index not in self._fresh_ids:
            self._fresh_ids[index] = f"call-{uuid.uuid4().hex[:12]}"
        return self._fresh_ids[index]

    def _release(self, index: int, text: str) -> str:
        """The redacted part of the block's text that can be shown now; the rest is held."""
        assert self._runs is not None
        text = self._held.pop(index, "") + text
        visible = _SEPARATORS.sub("", text)
        spans = _spans(text, visible, self._runs)
        cut = _possible_key_start(text, visible, self._key)
        for start, end in spans:
            if start < cut < end:
                cut = start
        if cut < len(text):
            self._held[index] = text[cut:]
        return _apply(text[:cut], [span for span in spans if span[1] <= cut])

    def _flush(self, index: int) -> list[StreamEvent]:
        held = self._held.pop(index, "")
        return [BlockDelta(index, redact(held, self._key))] if held else []


def _maybe(value: str | None, key: str) -> str | None:
    return redact(value, key) if value else value


def _possible_key_start(text: str, visible: str, key: str) -> int:
    """Where the longest tail of `text` begins that more text could still turn into a run of the
    key (separators ignored; `visible` is `text` without them); `len(text)` when there is none."""
    growable = key[:-1]
    length = 0
    while length < min(len(visible), len(growable)) and visible[-length - 1 :] in growable:
        length += 1
    if length == 0:
        return len(text)
    positions = _visible_positions(text)
    return positions[len(positions) - length]


def _visible_positions(text: str) -> list[int]:
    """Where each character of `text` without separators stands in `text`."""
    return [match.start(1) for match in _VISIBLE.finditer(text)]

"""The API key never leaves an adapter inside a provider-sent string (DESIGN §11).

A gateway may echo the `Authorization` header it refused in an error message, and a model may
repeat it in its answer, its reasoning or a tool call's arguments. `KeyRedactor` sits where every
stream event leaves an adapter, so nothing downstream (the log, the terminal, the UI) ever sees the
key: it replaces any run of 12 or more consecutive characters of the key (the whole key when it is
shorter) with `[redacted]`, also when the run is split by whitespace or invisible characters (a
gateway wrapping a long line). Failure messages are redacted first and clipped after, so a key
straddling the cut cannot survive in part.

Streamed deltas are redacted without waiting for the block's end: the tail of the text seen so far
that could be the start of the key is held back until the next delta shows whether it is.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache

from app.llm.stream import BlockDelta, BlockEnd, BlockStart, Finish, StreamEvent

FRAGMENT = 12
"""The shortest run of the key that counts as the key."""

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


def redact(text: str, key: str) -> str:
    """`text` with every run of the key (see the module docstring) replaced by `[redacted]`."""
    return _apply(text, _spans(text, _SEPARATORS.sub("", text), key)) if key else text


def redact_message(message: str, key: str) -> str:
    """A provider's failure message as it may be logged and shown: redacted, whitespace collapsed,
    then clipped to `MESSAGE_LIMIT` characters."""
    message = " ".join(redact(message, key).split())
    return message if len(message) <= MESSAGE_LIMIT else message[: MESSAGE_LIMIT - 1] + "…"


@lru_cache(maxsize=4)
def _runs_of(key: str) -> tuple[re.Pattern[str], int]:
    """A pattern that matches, without consuming, wherever a run of the key starts; the run length."""
    size = min(FRAGMENT, len(key))
    runs = sorted({key[i : i + size] for i in range(len(key) - size + 1)})
    return re.compile("(?=(?:" + "|".join(map(re.escape, runs)) + "))"), size


def _spans(text: str, visible: str, key: str) -> list[tuple[int, int]]:
    """Where runs of the key are in `text` (`visible`: `text` without separators): merged, sorted
    `(start, end)` ranges."""
    runs, size = _runs_of(key)
    starts = [match.start() for match in runs.finditer(visible)]
    if not starts:
        return []
    # Back from positions in `visible` to positions in `text`.
    positions = _visible_positions(text)
    merged: list[tuple[int, int]] = []
    for first in starts:
        start, end = positions[first], positions[first + size - 1] + 1
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
    ends or the response finishes. Identity fields, complete tool arguments and failure messages
    are redacted whole; every failure message is clipped after redaction, even without a key.
    """

    def __init__(self, key: str) -> None:
        self._key = key
        self._held: dict[int, str] = {}
        """Per block, the text not yet passed on: it might be the start of the key."""

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
                event = replace(event, call_id=_maybe(event.call_id, key), name=_maybe(event.name, key))
            return [event]
        if isinstance(event, BlockEnd):
            if key and (event.call_id or event.name or event.arguments):
                event = replace(
                    event,
                    call_id=_maybe(event.call_id, key),
                    name=_maybe(event.name, key),
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

    def _release(self, index: int, text: str) -> str:
        """The redacted part of the block's text that can be shown now; the rest is held."""
        text = self._held.pop(index, "") + text
        visible = _SEPARATORS.sub("", text)
        spans = _spans(text, visible, self._key)
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

"""The API key never leaves an adapter inside a provider-sent string (docs/architecture.md §13).

A gateway may echo the `Authorization` header it refused in an error message, and a model may
repeat it in its answer, its reasoning or a tool call's arguments. `KeyRedactor` sits where every
stream event leaves an adapter, so nothing downstream (the log, the terminal, the UI) ever sees the
key: it replaces any run of 12 or more consecutive characters of the key with `[redacted]`, also
when the run is split by whitespace or invisible characters (a gateway wrapping a long line).
Failure messages are redacted first and clipped after, so a key straddling the cut cannot survive
in part. A tool name or call id is kept or replaced whole, never in part (`KeyRedactor`).

What counts as a secret, and how a run of it is found, is `app.redaction`'s, shared with the
exports and the MCP bearer token.

Streamed deltas are redacted without waiting for the block's end: the tail of the text seen so far
that could be the start of the key is held back until the next delta shows whether it is.
"""

from __future__ import annotations

import uuid
from dataclasses import replace

from app.llm.stream import BlockDelta, BlockEnd, BlockStart, Finish, StreamEvent
from app.redaction import REDACTED, SEPARATORS, key_runs, key_spans, redact, replaced, visible_positions

MESSAGE_LIMIT = 500
"""Characters of a failure message kept (after redaction); a provider's error page can be long."""


def redact_message(message: str, key: str) -> str:
    """A provider's failure message as it may be logged and shown: redacted, whitespace collapsed,
    then clipped to `MESSAGE_LIMIT` characters."""
    message = " ".join(redact(message, key).split())
    return message if len(message) <= MESSAGE_LIMIT else message[: MESSAGE_LIMIT - 1] + "…"


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
        self._runs = key_runs(key)
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
        return self._runs is not None and bool(self._runs.starts_in(SEPARATORS.sub("", value)))

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
        visible = SEPARATORS.sub("", text)
        found = key_spans(text, visible, self._runs)
        cut = _possible_key_start(text, visible, self._key)
        for start, end in found:
            if start < cut < end:
                cut = start
        if cut < len(text):
            self._held[index] = text[cut:]
        return replaced(text[:cut], [span for span in found if span[1] <= cut])

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
    positions = visible_positions(text)
    return positions[len(positions) - length]

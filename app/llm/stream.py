"""The stream-event contract every adapter yields (docs/architecture.md §9), whatever its wire dialect.

A response is a sequence of blocks (text, reasoning, tool call), each opened by `BlockStart`, fed
by `BlockDelta`s and closed by `BlockEnd`; then at most one `UsageReport`; then exactly one
`Finish`, which is the last event. Only an `error` or `aborted` finish may leave blocks open, and a
tool-call `BlockEnd` always carries a non-empty `call_id` and `name` (seed 004): an unusable call
is never closed, the response fails instead. `check_stream` enforces all of that.

`StreamTranslator` is the bookkeeping the dialect translators share, so the rules above are
implemented once: block numbering, the open blocks, the held usage and the single finish.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from app.i18n import _
from app.llm.errors import (
    EMPTY_RESPONSE,
    FAILURE_CODES,
    MALFORMED_TOOL_CALL,
    STREAM_CLOSED,
    Failure,
)

BlockKind: TypeAlias = Literal["text", "reasoning", "tool-call"]
FinishReason: TypeAlias = Literal["stop", "tool-calls", "max-tokens", "error", "aborted"]

BLOCK_KINDS: frozenset[str] = frozenset({"text", "reasoning", "tool-call"})
FINISH_REASONS: frozenset[str] = frozenset({"stop", "tool-calls", "max-tokens", "error", "aborted"})


@dataclass(frozen=True, slots=True)
class BlockStart:
    """A block opens. A tool call's identity may still be unknown here (`None`); `BlockEnd` has it."""

    index: int
    kind: BlockKind
    call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class BlockDelta:
    """More text for an open block; for a tool call, a fragment of its JSON arguments."""

    index: int
    text: str


@dataclass(frozen=True, slots=True)
class BlockEnd:
    """A block closes. A tool call's end carries its final identity and the complete arguments,
    which are authoritative (the deltas are for showing progress)."""

    index: int
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    cut_off: bool = False
    """A tool call the output limit cut short (only before a `max-tokens` finish): its arguments
    are incomplete, so it must never run."""


@dataclass(frozen=True, slots=True)
class UsageReport:
    """Token counts of the response. `input` counts every prompt token, the cached ones included;
    `cache_read` is the part of `input` served from the provider's prompt cache."""

    input: int
    output: int
    cache_read: int
    reasoning: int
    cache_write: int | None = None
    """The part of `input` written to the prompt cache, where the wire reports it (Anthropic)."""


@dataclass(frozen=True, slots=True)
class Finish:
    """The last event. `failure` is set exactly when `reason` is `error`."""

    reason: FinishReason
    failure: Failure | None = None


StreamEvent: TypeAlias = BlockStart | BlockDelta | BlockEnd | UsageReport | Finish


class StreamContractError(Exception):
    """An event sequence broke the stream contract: a bug in the adapter that produced it."""


class StreamChecker:
    """Checks events one at a time (for an async stream); `check_stream` is the one-shot form."""

    def __init__(self) -> None:
        self._open: dict[int, str] = {}
        self._used: set[int] = set()
        self._usage_seen = False
        self._cut_off_seen = False
        self._finish: Finish | None = None
        self._position = 0

    def feed(self, event: StreamEvent) -> None:
        position = self._position
        self._position += 1
        if self._finish is not None:
            self._fail(position, event, "an event after the finish")
        if isinstance(event, BlockStart):
            if event.kind not in BLOCK_KINDS:
                self._fail(position, event, f"unknown block kind {event.kind!r}")
            if event.index in self._used:
                self._fail(position, event, f"block index {event.index} started twice")
            self._used.add(event.index)
            self._open[event.index] = event.kind
        elif isinstance(event, BlockDelta):
            if event.index not in self._open:
                self._fail(position, event, f"a delta for block {event.index}, which is not open")
        elif isinstance(event, BlockEnd):
            kind = self._open.pop(event.index, None)
            if kind is None:
                self._fail(position, event, f"an end for block {event.index}, which is not open")
            if kind == "tool-call":
                if not _non_empty(event.call_id) or not _non_empty(event.name):
                    self._fail(position, event, "a tool-call end without a non-empty call_id and name")
                if not isinstance(event.arguments, str):
                    self._fail(position, event, "a tool-call end without arguments")
            elif event.cut_off:
                self._fail(position, event, "a cut-off end for a block that is not a tool call")
            self._cut_off_seen = self._cut_off_seen or event.cut_off
        elif isinstance(event, UsageReport):
            if self._usage_seen:
                self._fail(position, event, "a second usage report")
            self._usage_seen = True
        elif isinstance(event, Finish):
            self._check_finish(position, event)
            self._finish = event
        else:
            self._fail(position, event, "not a stream event")

    def close(self) -> Finish:
        """The stream ended: it must have finished. Returns the finish."""
        if self._finish is None:
            raise StreamContractError(f"the stream ended after {self._position} events without a finish")
        return self._finish

    def _check_finish(self, position: int, event: Finish) -> None:
        if event.reason not in FINISH_REASONS:
            self._fail(position, event, f"unknown finish reason {event.reason!r}")
        if (event.failure is not None) != (event.reason == "error"):
            self._fail(position, event, "a failure must come with an error finish, and only with it")
        if event.failure is not None and event.failure.code not in FAILURE_CODES:
            self._fail(position, event, f"undeclared failure code {event.failure.code!r}")
        if self._cut_off_seen and event.reason != "max-tokens":
            self._fail(position, event, f"a cut-off tool call before a {event.reason} finish")
        if self._open and event.reason not in ("error", "aborted"):
            self._fail(position, event, f"blocks {sorted(self._open)} left open by a {event.reason} finish")

    @staticmethod
    def _fail(position: int, event: object, reason: str) -> None:
        raise StreamContractError(f"event {position} ({event!r}): {reason}")


def check_stream(events: Iterable[StreamEvent]) -> Finish:
    """Raise `StreamContractError` unless `events` is one complete, well-formed response."""
    checker = StreamChecker()
    for event in events:
        checker.feed(event)
    return checker.close()


def _non_empty(value: object) -> bool:
    return isinstance(value, str) and value != ""


# --- shared translator bookkeeping -------------------------------------------------------------


@dataclass(slots=True)
class OpenToolCall:
    """A tool call being streamed. Identity fields stay `None` until a non-empty string arrives."""

    index: int
    wire_index: int
    call_id: str | None
    name: str | None
    parts: list[str] = field(default_factory=list)
    empty_arguments: str = ""
    """The arguments when no fragment arrived (the dialect decides: `""` or `"{}"`)."""

    def missing_identity(self) -> list[str]:
        return [label for label, value in (("id", self.call_id), ("name", self.name)) if not value]


class StreamTranslator:
    """Block numbering, open blocks, held usage and the one finish, shared by the dialects.

    At most one text/reasoning block (the "flow") is open at a time: content of another kind closes
    it. Tool calls stay open until the response completes, because a gateway may send a call's
    identity late or interleave calls. Usage is held and reported once, right before the finish.
    Every provider string goes through `_delta` or `clean_text`, so UTF-16 surrogates a JSON
    escape produced (`"\\ud83d"`) never leave a translator: a pair split across two deltas of a
    block is joined, a lone one becomes U+FFFD.
    A subclass parses its wire format and calls these helpers; after `finished`, it returns `[]`.
    """

    __slots__ = (
        "finished", "_next_index", "_flow_index", "_flow_kind", "_calls", "_had_calls", "_usage", "_held_high",
    )  # fmt: skip

    def __init__(self) -> None:
        self.finished = False
        self._next_index = 0
        self._flow_index = -1
        self._flow_kind: str | None = None
        self._calls: list[OpenToolCall] = []
        self._had_calls = False
        self._usage: UsageReport | None = None
        self._held_high: dict[int, str] = {}
        """A high surrogate that ended a block's last delta, waiting for its low half."""

    # The stream's end, as seen by the adapter.

    def end_of_stream(self) -> list[StreamEvent]:
        """The connection ended. Before the dialect's end marker that is `STREAM_CLOSED`."""
        if self.finished:
            return []
        return self.fail(
            Failure(code=STREAM_CLOSED, message=_("The stream ended before the response was complete."))
        )

    def fail(self, failure: Failure) -> list[StreamEvent]:
        """End with an error: held usage first, then the error finish; open blocks stay open."""
        if _has_surrogate(failure.message):
            failure = failure.model_copy(update={"message": clean_text(failure.message)})
        return self._end(Finish("error", failure))

    def abort(self) -> list[StreamEvent]:
        """End because the consumer asked to stop: held usage, then an aborted finish."""
        return self._end(Finish("aborted"))

    def _end(self, finish: Finish) -> list[StreamEvent]:
        if self.finished:
            return []
        self.finished = True
        events: list[StreamEvent] = []
        for index in list(self._held_high):  # nothing is lost: open blocks get their last character
            self._release_held(index, events)
        return [*events, finish] if self._usage is None else [*events, self._usage, finish]

    # Building blocks for the dialects.

    def _delta(self, index: int, text: str, events: list[StreamEvent], parts: list[str] | None = None) -> None:
        """Emit `text` for block `index` (and keep it in a call's `parts`), surrogates repaired."""
        held = self._held_high.pop(index, None)
        if held is not None:
            text = held + text
        if _has_surrogate(text):
            if "\ud800" <= text[-1] <= "\udbff":
                self._held_high[index] = text[-1]
                text = text[:-1]
            text = clean_text(text)
        if text:
            events.append(BlockDelta(index, text))
            if parts is not None:
                parts.append(text)

    def _release_held(self, index: int, events: list[StreamEvent], parts: list[str] | None = None) -> None:
        """The block ends: a high surrogate still waiting for its other half becomes U+FFFD."""
        if self._held_high.pop(index, None) is not None:
            events.append(BlockDelta(index, REPLACEMENT))
            if parts is not None:
                parts.append(REPLACEMENT)

    def _open_flow(self, kind: BlockKind, events: list[StreamEvent]) -> int:
        """Close the open text/reasoning block, open one of `kind`, return its index."""
        self._close_flow(events)
        index = self._next_index
        self._next_index = index + 1
        self._flow_index = index
        self._flow_kind = kind
        events.append(BlockStart(index, kind))
        return index

    def _close_flow(self, events: list[StreamEvent]) -> None:
        if self._flow_index >= 0:
            self._release_held(self._flow_index, events)
            events.append(BlockEnd(self._flow_index))
            self._flow_index = -1
            self._flow_kind = None

    def _open_call(
        self, wire_index: int, call_id: str | None, name: str | None, events: list[StreamEvent]
    ) -> OpenToolCall:
        self._close_flow(events)
        index = self._next_index
        self._next_index = index + 1
        call = OpenToolCall(index, wire_index, call_id, name)
        self._calls.append(call)
        self._had_calls = True
        events.append(BlockStart(index, "tool-call", call_id, name))
        return call

    def _close_call(self, call: OpenToolCall, events: list[StreamEvent], *, cut_off: bool = False) -> list[str]:
        """Close `call`, or return the identity fields it lacks and leave it open (seed 004:
        no path may assemble a tool call without identity)."""
        missing = call.missing_identity()
        if missing:
            return missing
        self._calls.remove(call)
        self._release_held(call.index, events, call.parts)
        arguments = "".join(call.parts) or call.empty_arguments
        events.append(BlockEnd(call.index, call.call_id, call.name, arguments, cut_off and self._cut_off(call)))
        return []

    def _cut_off(self, call: OpenToolCall) -> bool:
        """Whether a call still open when the output limit ended the response is incomplete.

        On a wire without a per-call end, only its arguments tell: a complete call's are a whole
        JSON object (an object cannot be cut and still parse)."""
        return not is_json_object("".join(call.parts))

    def _complete(self, *, truncated: bool) -> list[StreamEvent]:
        """The dialect's end marker arrived: close every block and finish.

        The reason follows what was produced, not the provider's word for it: `max-tokens` when
        the output was cut short, else `tool-calls` when it has calls (the loop must run them),
        else `stop`; a `stop` that produced no block at all is `EMPTY_RESPONSE`. A call the cut
        left incomplete is closed `cut_off`, so it is never run.
        """
        for call in self._calls:
            missing = call.missing_identity()
            if missing:
                return self.fail(_missing_identity_failure(call, missing))
        if self._next_index == 0 and not truncated:
            return self.fail(Failure(code=EMPTY_RESPONSE, message=_("The model's response was empty.")))
        events: list[StreamEvent] = []
        self._close_flow(events)
        for call in list(self._calls):
            self._close_call(call, events, cut_off=truncated)
        reason: FinishReason = "max-tokens" if truncated else "tool-calls" if self._had_calls else "stop"
        return events + self._end(Finish(reason))


REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_surrogate(text: str) -> bool:
    return not text.isascii() and _SURROGATE.search(text) is not None


def clean_text(text: str) -> str:
    """`text` with each UTF-16 surrogate pair joined into its character and every lone surrogate
    replaced by U+FFFD: what JSON's `\\uXXXX` escapes may leave in a `str`, and what no UTF-8
    writer (the session log, the terminal) can encode."""
    if not _has_surrogate(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def identity(value: object) -> str | None:
    """A call's `id` or `name` as seed 004 takes it: only a non-empty string (surrogates repaired);
    anything else is `None`, which keeps the established value."""
    return clean_text(value) if value and type(value) is str else None


def is_json_object(text: str) -> bool:
    """Whether `text` is one complete JSON object (what a tool call's arguments must be)."""
    try:
        return isinstance(json.loads(text), dict)
    except (ValueError, RecursionError):
        return False


def _missing_identity_failure(call: OpenToolCall, missing: list[str]) -> Failure:
    return Failure(
        code=MALFORMED_TOOL_CALL,
        message=_("Tool call {index} ended without a non-empty {fields}.").format(
            index=call.wire_index, fields=" / ".join(missing)
        ),
    )

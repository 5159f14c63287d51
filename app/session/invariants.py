"""The cross-event rules of a session log (docs/architecture.md §4), checked one event at a time.

The reader feeds every event it parses through an `InvariantChecker`; the writer asks the same
checker before it writes, so a log that breaks an invariant can be neither read nor written. The
checker also knows what a crash left open (turn, step, tool calls), which the writer repairs.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from app.i18n import _
from app.session.lazy_events import events  # imported when first used: events are read by their `type` tag
from app.session.type_codes import TYPE_CODES, TYPE_NAMES

# Events that happen inside a model step and carry its `turn` and `step`.
STEP_EVENT_TYPES = frozenset(
    {"assistant/message", "tool/call", "tool/result", "agent/request-error", "llm/retry"}
)


class InvalidEventError(ValueError):
    """An event the writer refuses: it is malformed or breaks an invariant of the log."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PendingCall(NamedTuple):
    """A tool call of the open step without a result: `started` once its `tool/call` was logged.
    (A named tuple: docs/decisions.md, *Plain classes*.)"""

    call_id: str
    name: str
    arguments: str
    started: bool


# A logged tool/call as (seq, turn, tool name).
_SEQ, _TURN, _NAME = 0, 1, 2

EventAt = Callable[[int], "events.Event"]
"""The event of a seq (already validated), for a checker restored without the events before it."""


def _digest(call_id: str) -> int:
    import hashlib  # (OpenSSL's set-up, when a call id is first checked: not for reading a log)

    return int.from_bytes(hashlib.blake2b(call_id.encode(), digest_size=8).digest(), "little")


_LOW = (1 << 64) - 1


def _pair_key(digest: int, seq: int) -> int:
    """(digest, seq) as one int that sorts like the pair (ints sort faster than tuples)."""
    return digest << 64 | seq


class RecordedIds:
    """The call ids of the events a validation record covers, kept compact so that restoring a
    checker costs the same whatever the size of the log: for each kind (every id used, the
    tool/call ids, the tool/result ids) the sorted 64-bit digests of the ids beside the seq of the
    event that holds each. A digest that matches is confirmed by reading that event, so two ids that
    share a digest are told apart: the answers are exact (docs/architecture.md §4)."""

    KINDS = ("used", "calls", "results")

    def __init__(self, runs: dict[str, tuple[array, array]], event_at: EventAt | None) -> None:
        self._runs = runs
        self._event_at = event_at  # None for a record only being written

    @classmethod
    def empty(cls) -> RecordedIds:
        return cls({kind: (array("Q"), array("Q")) for kind in cls.KINDS}, None)

    @classmethod
    def from_bytes(cls, data: bytes, event_at: EventAt) -> RecordedIds:
        """Raises ValueError when `data` is not what `to_bytes` writes."""
        runs: dict[str, tuple[array, array]] = {}
        position = 0
        for kind in cls.KINDS:
            if len(data) < position + 8:
                raise ValueError("a truncated id record")
            count = int.from_bytes(data[position : position + 8], "little")
            position += 8
            digests, seqs = array("Q"), array("Q")
            digests.frombytes(data[position : position + 8 * count])
            seqs.frombytes(data[position + 8 * count : position + 16 * count])
            if len(digests) != count or len(seqs) != count:
                raise ValueError("a truncated id record")
            runs[kind] = (digests, seqs)
            position += 16 * count
        if position != len(data):
            raise ValueError("an id record with trailing bytes")
        return cls(runs, event_at)

    def to_bytes(self) -> bytes:
        return b"".join(
            len(digests).to_bytes(8, "little") + digests.tobytes() + seqs.tobytes()
            for digests, seqs in self._runs.values()
        )

    def merged(self, added: dict[str, dict[str, int]]) -> RecordedIds:
        """These ids and `added` (kind → {call id: seq}), still sorted."""
        runs = {}
        digest_of: dict[str, int] = {}  # an id is in up to three kinds: hashed once
        for kind, (digests, seqs) in self._runs.items():
            new = [
                (digest_of.get(call_id) or digest_of.setdefault(call_id, _digest(call_id)), seq)
                for call_id, seq in added.get(kind, {}).items()
            ]
            if len(new) > len(digests) // 64:
                # Many (a whole validation's): sort them all at once, each pair as one int.
                keys = sorted([*map(_pair_key, digests, seqs), *(_pair_key(digest, seq) for digest, seq in new)])
                runs[kind] = (array("Q", [key >> 64 for key in keys]), array("Q", [key & _LOW for key in keys]))
                continue
            # A few (a writer's turn): copy the runs between their places.
            merged_digests, merged_seqs, taken = array("Q"), array("Q"), 0
            for digest, seq in sorted(new):
                at = bisect.bisect_right(digests, digest, taken)
                merged_digests.extend(digests[taken:at])
                merged_seqs.extend(seqs[taken:at])
                merged_digests.append(digest)
                merged_seqs.append(seq)
                taken = at
            merged_digests.extend(digests[taken:])
            merged_seqs.extend(seqs[taken:])
            runs[kind] = (merged_digests, merged_seqs)
        return RecordedIds(runs, self._event_at)

    def find(self, kind: str, call_id: str) -> events.Event | None:
        """The recorded event of `kind` that holds `call_id`, or None."""
        digests, seqs = self._runs[kind]
        digest = _digest(call_id)
        at = bisect.bisect_left(digests, digest)
        while at < len(digests) and digests[at] == digest:
            assert self._event_at is not None
            event = self._event_at(seqs[at])
            if call_id in _call_ids_of(event):
                return event
            at += 1
        return None


def _call_ids_of(event: events.Event) -> Iterable[str]:
    if event.type == "assistant/message":
        return [part.call_id for part in event.data.content if part.type == "tool-call"]
    if event.type in ("tool/call", "tool/result"):
        return (event.data.call_id,)
    return ()


class InvariantChecker:
    """Validates events in log order. `check` is pure; `apply` records an event that passed.
    Events are read by their `type` and fields only, so the msgspec mirror of the models
    (`app.session.structs`) is checked exactly as the models are."""

    def __init__(self) -> None:
        # The event type by seq, as the line index's one-byte codes: to name what a headerSeq points
        # at, and restored from the index at no cost.
        self._types = bytearray()
        self._header_tools: dict[int, frozenset[str]] = {}
        self._calls: dict[str, tuple[int, int, str]] = {}
        # Every callId so far (assistant messages and tool/calls) and the seq that first used it.
        self._call_ids: dict[str, int] = {}
        self._results: dict[str, int] = {}
        # The ids of the events before a restored state (the dicts above hold those fed since).
        self._recorded: RecordedIds | None = None
        self._event_at: EventAt | None = None
        self._last_turn = 0
        self._open_turn: int | None = None
        self._last_step = 0
        self._open_step: int | None = None
        self._pending: dict[str, PendingCall] = {}

    @property
    def next_seq(self) -> int:
        return len(self._types)

    def types(self, start: int, stop: int) -> bytearray:
        """The type codes (`app.session.type_codes.TYPE_CODES`) of the events fed at seqs `start..stop-1`."""
        return self._types[start:stop]

    @property
    def open_turn(self) -> int | None:
        return self._open_turn

    @property
    def open_step(self) -> int | None:
        return self._open_step

    def state_json(self) -> dict[str, Any]:
        """What `restore` needs besides the call ids (`ids_record`) to go on checking after the last
        event fed, as JSON: kept in the line index by a process that validated the whole log, so
        that the writer need not again. The tools a header declares are read from it when needed."""
        return {
            "next": len(self._types),
            "turn": [self._last_turn, self._open_turn, self._last_step, self._open_step],
            "pending": [[p.call_id, p.name, p.arguments, p.started] for p in self._pending.values()],
        }

    def ids_record(self) -> bytes:
        """Every call id so far, compact (`RecordedIds`)."""
        recorded = self._recorded or RecordedIds.empty()
        added = {
            "used": self._call_ids,
            "calls": {call_id: call[_SEQ] for call_id, call in self._calls.items()},
            "results": self._results,
        }
        return recorded.merged(added).to_bytes()

    @classmethod
    def restore(
        cls, state: dict[str, Any], types: bytes | bytearray, ids: bytes, event_at: EventAt
    ) -> InvariantChecker:
        """The checker `state_json` and `ids_record` described; `types` the code
        (`app.session.type_codes.TYPE_CODES`) of every event before `next`, `event_at` reads them.
        Raises ValueError (or KeyError, TypeError) on a state it cannot use."""
        if len(types) < state["next"]:
            raise ValueError("the event types do not match the checker state")
        checker = cls()
        checker._types = bytearray(types[: state["next"]])
        checker._recorded = RecordedIds.from_bytes(ids, event_at)
        checker._event_at = event_at
        checker._last_turn, checker._open_turn, checker._last_step, checker._open_step = state["turn"]
        checker._pending = {
            call_id: PendingCall(call_id, name, arguments, started)
            for call_id, name, arguments, started in state["pending"]
        }
        return checker

    # --- lookups over the fed events and the recorded ones --------------------------------------------

    def _seq_of(self, fed: dict[str, int], kind: str, call_id: str) -> int | None:
        """The seq `fed` (or the record's `kind`) holds for `call_id`, or None."""
        seq = fed.get(call_id)
        if seq is None and self._recorded is not None:
            event = self._recorded.find(kind, call_id)
            seq = event.seq if event is not None else None
        return seq

    def _used_at(self, call_id: str) -> int | None:
        return self._seq_of(self._call_ids, "used", call_id)

    def _call(self, call_id: str) -> tuple[int, int, str] | None:
        call = self._calls.get(call_id)
        if call is None and self._recorded is not None:
            event = self._recorded.find("calls", call_id)
            if event is not None and event.type == "tool/call":
                call = (event.seq, event.data.turn, event.data.name)
        return call

    def _result_at(self, call_id: str) -> int | None:
        return self._seq_of(self._results, "results", call_id)

    def _tools_of(self, header_seq: int) -> frozenset[str] | None:
        """The tool names of the request/header at `header_seq`; None if it is no header."""
        tools = self._header_tools.get(header_seq)
        if tools is None and self._event_at is not None and self._types[header_seq] == _HEADER_CODE:
            header = self._event_at(header_seq)
            assert header.type == "request/header"
            tools = self._header_tools[header_seq] = frozenset(tool.name for tool in header.data.tools)
        return tools

    def call_id_taken(self, call_id: str) -> bool:
        """Whether an earlier assistant message or tool/call already used `call_id`."""
        return self._used_at(call_id) is not None

    def pending_calls(self) -> tuple[PendingCall, ...]:
        """Tool calls of the open step that have no result yet, in the order they appeared."""
        return tuple(self._pending.values())

    def feed(self, event: events.Envelope) -> None:
        """Check and apply; raise InvalidEventError if the event breaks an invariant."""
        reason = self.check(event)
        if reason is not None:
            raise InvalidEventError(reason)
        self.apply(event)

    # --- checking ------------------------------------------------------------------------------------

    def check(self, event: events.Envelope) -> str | None:
        """Why `event` cannot come next in the log, or None if it can."""
        if event.seq != len(self._types):
            return self._seq_reason(event.seq)
        type_ = event.type
        if type_ in _IN_STEP_TYPES:
            data = event.data  # type: ignore[attr-defined]
            if self._open_step is None:
                return _("{type} outside a step").format(type=type_)
            if data.step != self._open_step or data.turn != self._open_turn:
                return _("{type} names turn {turn} step {step}, but turn {open_turn} step {open_step} is open").format(
                    type=type_, turn=data.turn, step=data.step,
                    open_turn=self._open_turn, open_step=self._open_step,
                )
        specific = _CHECKS.get(type_)
        return specific(self, event) if specific is not None else None

    def _seq_reason(self, seq: int) -> str:
        expected = self.next_seq
        if expected == 0:
            return _("the first event must have seq 0, found {seq}").format(seq=seq)
        if seq < expected:
            return _("seq {seq} repeats an earlier event (expected {expected})").format(
                seq=seq, expected=expected
            )
        return _("seq jumps from {previous} to {seq}: events are missing").format(
            previous=expected - 1, seq=seq
        )

    def _check_turn_start(self, event: events.TurnStart) -> str | None:
        turn = event.data.turn
        if self._open_turn is not None:
            return _("turn/start while turn {turn} is still open").format(turn=self._open_turn)
        if turn != self._last_turn + 1:
            return _("turn/start numbers turn {turn}, expected {expected}").format(
                turn=turn, expected=self._last_turn + 1
            )
        return None

    def _check_turn_end(self, event: events.TurnEnd) -> str | None:
        turn = event.data.turn
        if self._open_turn is None:
            return _("turn/end with no open turn")
        if turn != self._open_turn:
            return _("turn/end names turn {turn}, but turn {open} is open").format(
                turn=turn, open=self._open_turn
            )
        if self._open_step is not None:
            return _("turn/end while step {step} is still open").format(step=self._open_step)
        return None

    def _check_step_start(self, event: events.StepStart) -> str | None:
        turn, step = event.data.turn, event.data.step
        if self._open_turn is None:
            return _("step/start outside a turn")
        if turn != self._open_turn:
            return _("step/start names turn {turn}, but turn {open} is open").format(
                turn=turn, open=self._open_turn
            )
        if self._open_step is not None:
            return _("step/start while step {step} is still open").format(step=self._open_step)
        if step != self._last_step + 1:
            return _("step/start numbers step {step}, expected {expected}").format(
                step=step, expected=self._last_step + 1
            )
        return None

    def _check_call(self, event: events.ToolCall) -> str | None:
        earlier = self._call(event.data.call_id)
        if earlier is not None:
            return _("callId {id!r} was already used by the tool/call at seq {seq}").format(
                id=event.data.call_id, seq=earlier[_SEQ]
            )
        return None

    def _check_assistant(self, event: events.AssistantMessage) -> str | None:
        """Call ids are unique in the session (docs/architecture.md §4): the loop renames a repeated one."""
        this_message: set[str] = set()
        for part in event.data.content:
            if not _is_tool_call(part):
                continue
            if part.call_id in this_message:
                return _("callId {id!r} is used twice in this message").format(id=part.call_id)
            used_at = self._used_at(part.call_id)
            if used_at is not None:
                return _("callId {id!r} was already used at seq {seq}").format(id=part.call_id, seq=used_at)
            this_message.add(part.call_id)
        return None

    def _check_result(self, event: events.ToolResult) -> str | None:
        call_id = event.data.call_id
        call = self._call(call_id)
        if call is None:
            return _("tool/result answers callId {id!r}, which has no earlier tool/call").format(id=call_id)
        if call[_TURN] != event.data.turn:
            return _("tool/result in turn {turn} answers callId {id!r}, a tool/call of turn {call_turn}").format(
                turn=event.data.turn, id=call_id, call_turn=call[_TURN]
            )
        result_at = self._result_at(call_id)
        if result_at is not None:
            return _("callId {id!r} already has a tool/result (seq {seq})").format(id=call_id, seq=result_at)
        if call[_NAME] != event.data.name:
            return _("tool/result names tool {name!r}, but the tool/call {id!r} was to {call_name!r}").format(
                name=event.data.name, id=call_id, call_name=call[_NAME]
            )
        return None

    def _check_developer(self, event: events.DeveloperMessage) -> str | None:
        message = event.data
        if not hasattr(message, "additions"):  # an instructions update
            return self._check_header_seq(message.header_seq)
        for addition in message.additions:
            reason = self._check_header_seq(addition.header_seq)
            if reason is not None:
                return reason
            if addition.name not in self._tools_of(addition.header_seq):  # type: ignore[operator]
                return _("tool {name!r} is not in the tools of the request/header at seq {seq}").format(
                    name=addition.name, seq=addition.header_seq
                )
        return None

    def _check_header_seq(self, header_seq: int) -> str | None:
        if header_seq >= self.next_seq:
            return _("headerSeq {seq} points at no earlier event").format(seq=header_seq)
        if self._tools_of(header_seq) is None:
            return _("headerSeq {seq} points at a {type} event, not a request/header").format(
                seq=header_seq, type=TYPE_NAMES.get(self._types[header_seq], "?")
            )
        return None

    # --- applying ------------------------------------------------------------------------------------

    def apply(self, event: events.Envelope) -> None:
        """Record an event that `check` accepted."""
        self._types.append(TYPE_CODES[event.type])
        specific = _APPLIERS.get(event.type)
        if specific is not None:
            specific(self, event)

    def _start_turn(self, event: events.TurnStart) -> None:
        self._open_turn = self._last_turn = event.data.turn
        self._last_step = 0

    def _end_turn(self, event: events.TurnEnd) -> None:
        self._open_turn = None

    def _start_step(self, event: events.StepStart) -> None:
        self._open_step = self._last_step = event.data.step

    def _end_step(self, event: events.StepEnd) -> None:
        self._open_step = None
        self._pending.clear()

    def _record_header(self, event: events.RequestHeader) -> None:
        self._header_tools[event.seq] = frozenset(tool.name for tool in event.data.tools)

    def _record_assistant(self, event: events.AssistantMessage) -> None:
        # `_check_assistant` made sure no id of this message was used before.
        for part in event.data.content:
            if _is_tool_call(part):
                self._call_ids[part.call_id] = event.seq
                self._pending[part.call_id] = PendingCall(
                    part.call_id, part.name, part.arguments, started=False
                )

    def _record_call(self, event: events.ToolCall) -> None:
        data = event.data
        self._calls[data.call_id] = (event.seq, data.turn, data.name)
        if self._used_at(data.call_id) is None:
            self._call_ids[data.call_id] = event.seq
        self._pending[data.call_id] = PendingCall(data.call_id, data.name, data.arguments, started=True)

    def _record_result(self, event: events.ToolResult) -> None:
        self._results[event.data.call_id] = event.seq
        self._pending.pop(event.data.call_id, None)


_HEADER_CODE = TYPE_CODES["request/header"]


def _is_tool_call(part: object) -> bool:
    """Whether a content part is a tool call. By its fields, not its class: the checker reads the
    pydantic events and, during strict validation, their msgspec mirror (`app.session.structs`)."""
    return hasattr(part, "call_id")

# step/end closes the open step, so it must name it like the events inside a step.
_IN_STEP_TYPES = STEP_EVENT_TYPES | {"step/end"}

_CHECKS: dict[str, Callable[[InvariantChecker, Any], str | None]] = {
    "turn/start": InvariantChecker._check_turn_start,
    "turn/end": InvariantChecker._check_turn_end,
    "step/start": InvariantChecker._check_step_start,
    "assistant/message": InvariantChecker._check_assistant,
    "tool/call": InvariantChecker._check_call,
    "tool/result": InvariantChecker._check_result,
    "developer/message": InvariantChecker._check_developer,
}

_APPLIERS: dict[str, Callable[[InvariantChecker, Any], None]] = {
    "turn/start": InvariantChecker._start_turn,
    "turn/end": InvariantChecker._end_turn,
    "step/start": InvariantChecker._start_step,
    "step/end": InvariantChecker._end_step,
    "request/header": InvariantChecker._record_header,
    "assistant/message": InvariantChecker._record_assistant,
    "tool/call": InvariantChecker._record_call,
    "tool/result": InvariantChecker._record_result,
}

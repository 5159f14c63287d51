"""The incremental session view that Chat, Trajectory, Inspector and the loop all read.

It folds events one at a time into turns → steps → model requests and items (what each event
becomes: `app.session.view_items`). Each `assistant/message` or `agent/request-error` is one model
request, numbered from 1 in log order, with the header in force, the tool-history snapshot in force
and the message list it was sent with. No widget or command parses session JSON itself: they read
this.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, overload

from app.session.lazy_events import events  # imported when first used: items are made from Structs
from app.session.view_items import (
    AssistantItem,
    ContextItem,
    HeaderItem,
    Item,
    Message,
    RequestErrorItem,
    SummaryItem,
    ToolResultItem,
    UserItem,
    item_of,
)

if TYPE_CHECKING:  # the reducer is imported by the first fold: reading a log's tail folds nothing
    from app.session.tool_history import ToolHistory, ToolHistoryReducer


# --- structure -----------------------------------------------------------------------------------


class WindowBase:
    """The messages a window starts with when the fold did not see them: read on first use.

    A view seeded from a checkpoint (`SessionView.seeded`) knows its window only by seqs; `load`
    turns those seqs into messages once, and every request of the seeded view shares the result.
    """

    __slots__ = ("_load", "_items")

    def __init__(self, load: Callable[[], list[Message]]) -> None:
        self._load = load
        self._items: list[Message] | None = None

    @property
    def items(self) -> list[Message]:
        if self._items is None:
            self._items = self._load()
        return self._items


class MessageWindow(Sequence["Message"]):
    """A request's messages: `base` then the first `count` messages of a shared log. Reading it
    copies nothing; it compares equal to any sequence of the same messages."""

    __slots__ = ("_base", "_log", "_count")

    def __init__(self, log: list[Message], count: int, base: WindowBase | None = None) -> None:
        self._base = base
        self._log = log
        self._count = count

    def __len__(self) -> int:
        return self._count + (len(self._base.items) if self._base is not None else 0)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Message, ...]: ...
    def __getitem__(self, index: int | slice) -> Message | tuple[Message, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        size = len(self)
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError(index)
        base = self._base.items if self._base is not None else ()
        return base[index] if index < len(base) else self._log[index - len(base)]

    def __iter__(self) -> Iterator[Message]:
        if self._base is not None:
            yield from self._base.items
        yield from self._log[: self._count]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"MessageWindow({list(self)!r})"


@dataclass(eq=False, slots=True)
class ModelRequest:
    """One model request. `messages` is a window onto a shared log, so requests cost O(1) each."""

    index: int
    seq: int
    turn: int
    step: int
    route: str
    header: events.RequestHeaderData | None
    header_seq: int | None
    history: ToolHistory
    outcome: AssistantItem | RequestErrorItem
    messages: MessageWindow = field(repr=False)
    answered_at: int = 0
    """When the answer (or the failure) was logged, in ms since the epoch."""
    started_at: int | None = None
    """When its step started (the request went out right after), in ms; None outside a step."""

    @property
    def failed(self) -> bool:
        return isinstance(self.outcome, RequestErrorItem)

    def _key(self) -> tuple[object, ...]:
        return (
            self.index,
            self.seq,
            self.turn,
            self.step,
            self.route,
            self.header,
            self.header_seq,
            self.history,
            self.outcome,
            tuple(self.messages),
            self.answered_at,
            self.started_at,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModelRequest) and self._key() == other._key()


@dataclass(slots=True)
class Step:
    """A model step of a turn: its items and the requests made in it."""

    turn: int
    number: int
    seq: int
    items: list[Item] = field(default_factory=list)
    requests: list[ModelRequest] = field(default_factory=list)
    end_seq: int | None = None

    @property
    def open(self) -> bool:
        return self.end_seq is None


@dataclass(slots=True)
class Turn:
    """A turn: the user's message and the steps that answer it."""

    number: int
    seq: int
    items: list[Item] = field(default_factory=list)
    """Items of the turn outside any step (its user message, typically)."""
    steps: list[Step] = field(default_factory=list)
    end_seq: int | None = None
    end_reason: str | None = None
    requests: list[ModelRequest] = field(default_factory=list)
    """Every request of the turn's steps, in order (kept as they are made, not rebuilt on access)."""

    @property
    def open(self) -> bool:
        return self.end_seq is None


# --- the view ------------------------------------------------------------------------------------


class FoldSeed:
    """The fold's state before `next_seq`, for a view that starts there instead of at seq 0: the
    requests made so far, the header in force, the tool-history reducer (owned by the view from
    now on), the message window, known by reference until it is read, and when the step open
    there started. Handed from the indexed
    reader to `SessionView.seeded` only: a plain class (docs/decisions.md, *Plain classes*)."""

    __slots__ = ("next_seq", "requests", "header", "header_seq", "history", "window", "step_started_at")

    def __init__(
        self,
        *,
        next_seq: int,
        requests: int,
        header: events.RequestHeaderData | None,
        header_seq: int | None,
        history: ToolHistoryReducer,
        window: WindowBase | None,
        step_started_at: int | None,
    ) -> None:
        self.next_seq = next_seq
        self.requests = requests
        self.header = header
        self.header_seq = header_seq
        self.history = history
        self.window = window
        self.step_started_at = step_started_at


class SessionView:
    """Fold events with `apply()`; read `turns`, `requests`, `items`, `messages`.

    A seeded view (`seeded`) folds from a checkpoint: its lists hold only what it folded, and its
    requests are numbered and windowed exactly as a fold from seq 0 would have made them. A view
    made with `retain=False` keeps no turns, steps or items, and its reader takes its `requests`
    away as they come (`Session.folded_requests`): it holds the message window, not the session.
    """

    def __init__(self, header: events.SessionHeader, *, retain: bool = True) -> None:
        self.header = header
        self._retain = retain
        self.turns: list[Turn] = []
        self.requests: list[ModelRequest] = []
        self.items: list[Item] = []
        self.last_seq = -1
        self._request_count = 0
        self._base: WindowBase | None = None
        self._messages: list[Message] = []
        from app.session.tool_history import ToolHistoryReducer

        self._history = ToolHistoryReducer()
        self._header: events.RequestHeaderData | None = None
        self._header_seq: int | None = None
        self._step_started_at: int | None = None
        """When the step now open started (its step/start's time); None between steps."""

    @classmethod
    def seeded(cls, header: events.SessionHeader, seed: FoldSeed) -> SessionView:
        view = cls(header)
        view.last_seq = seed.next_seq - 1
        view._request_count = seed.requests
        view._base = seed.window
        view._history = seed.history
        view._header = seed.header
        view._header_seq = seed.header_seq
        view._step_started_at = seed.step_started_at
        return view

    @property
    def messages(self) -> MessageWindow:
        """The message list the next request would be sent with."""
        return MessageWindow(self._messages, len(self._messages), self._base)

    @property
    def current_header(self) -> events.RequestHeaderData | None:
        return self._header

    @property
    def history(self) -> ToolHistory:
        return self._history.snapshot()

    @property
    def open_turn(self) -> Turn | None:
        return self.turns[-1] if self.turns and self.turns[-1].open else None

    @property
    def open_step(self) -> Step | None:
        return open_step_of(self.open_turn)

    def apply(self, event: events.Envelope) -> None:
        item = item_of(event)
        if item is None:
            _BOUNDARIES[event.type](self, event)
        else:
            if isinstance(item, (AssistantItem, RequestErrorItem)):
                self._request(item, event.time)
            if isinstance(item, HeaderItem):
                self._header, self._header_seq = item.header, item.seq
            if self._retain:
                self._add(item)
            if isinstance(item, SummaryItem):
                # A new list, not an edit: earlier requests keep the window they were sent with.
                self._messages = [item, *(m for m in self.messages if m.seq > item.up_to_seq)]
                self._base = None
            elif isinstance(item, MESSAGE_ITEMS):
                self._messages.append(item)
        self._history.apply(event)
        self.last_seq = event.seq

    # --- boundaries ------------------------------------------------------------------------------

    def _turn_start(self, event: events.TurnStart) -> None:
        if self._retain:
            self.turns.append(Turn(number=event.data.turn, seq=event.seq))

    def _turn_end(self, event: events.TurnEnd) -> None:
        turn = self.open_turn
        if turn is not None:
            turn.end_seq = event.seq
            turn.end_reason = event.data.reason

    def _step_start(self, event: events.StepStart) -> None:
        turn = self.open_turn
        if turn is not None:
            turn.steps.append(Step(turn=event.data.turn, number=event.data.step, seq=event.seq))
        self._step_started_at = event.time

    def _step_end(self, event: events.StepEnd) -> None:
        self._step_started_at = None
        step = self.open_step
        if step is not None:
            step.end_seq = event.seq

    # --- helpers ---------------------------------------------------------------------------------

    def _add(self, item: Item) -> None:
        self.items.append(item)
        step = self.open_step
        if step is not None:
            step.items.append(item)
            return
        turn = self.open_turn
        if turn is not None:
            turn.items.append(item)

    def _request(self, outcome: AssistantItem | RequestErrorItem, time: int) -> None:
        self._request_count += 1
        step = self.open_step
        request = ModelRequest(
            index=self._request_count,
            seq=outcome.seq,
            turn=outcome.turn,
            step=outcome.step,
            route=outcome.route,
            header=self._header,
            header_seq=self._header_seq,
            history=self._history.snapshot(),
            outcome=outcome,
            messages=self.messages,
            answered_at=time,
            started_at=self._step_started_at,
        )
        self.requests.append(request)
        if step is not None:
            step.requests.append(request)
            self.turns[-1].requests.append(request)


_BOUNDARIES: dict[str, Callable[[SessionView, events.Envelope], None]] = {
    "turn/start": SessionView._turn_start,  # type: ignore[dict-item]
    "turn/end": SessionView._turn_end,  # type: ignore[dict-item]
    "step/start": SessionView._step_start,  # type: ignore[dict-item]
    "step/end": SessionView._step_end,  # type: ignore[dict-item]
}

MESSAGE_ITEMS = (UserItem, AssistantItem, ToolResultItem, ContextItem)
"""Items that join the message window (a summary replaces it)."""


def open_step_of(turn: Turn | None) -> Step | None:
    """The open step of the open turn `turn`, if any."""
    if turn is not None and turn.steps and turn.steps[-1].open:
        return turn.steps[-1]
    return None

"""The incremental session view that Chat, Trajectory, Inspector and the loop all read.

It folds events one at a time into turns → steps → model requests and items. Each
`assistant/message` or `agent/request-error` is one model request, numbered from 1 in log order,
with the header in force, the tool-history snapshot in force and the message list it was sent with.
No widget or command parses session JSON itself: they read this.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Union, overload

from app.session import structs
from app.session.lazy_events import events  # imported when first used: items are made from Structs
from app.session.structs import model_of

if TYPE_CHECKING:  # the reducer is imported by the first fold: reading a log's tail folds nothing
    from app.session.tool_history import ToolHistory, ToolHistoryReducer

# --- items ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UserItem:
    """A `user/message` event: what the user typed."""

    seq: int
    id: str
    text: str


@dataclass(frozen=True, slots=True)
class AssistantItem:
    """An `assistant/message` event: a request's answer (its content and usage are built as the
    models when first read, `_ModelPart`)."""

    seq: int
    turn: int
    step: int
    route: str
    model: str
    content: tuple[events.Content, ...]
    usage: events.Usage | None
    finish: str
    interrupted: bool

    @property
    def text(self) -> str:
        return "".join(part.text for part in stored_part(self, "content") if part.type == "text")

    @property
    def reasoning(self) -> str:
        return "".join(part.text for part in stored_part(self, "content") if part.type == "reasoning")

    @property
    def tool_calls(self) -> tuple[events.ToolCallContent, ...]:
        return tuple(part for part in self.content if part.type == "tool-call")

    @property
    def call_parts(self) -> tuple[events.ToolCallContent | structs.ToolCallContent, ...]:
        """`tool_calls` as stored (`stored_part`): for a reader of their fields, who needs no model."""
        return tuple(part for part in stored_part(self, "content") if part.type == "tool-call")


@dataclass(frozen=True, slots=True)
class ToolCallItem:
    """A `tool/call` event: the tool was about to run."""

    seq: int
    turn: int
    step: int
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolResultItem:
    """A `tool/result` event: what the tool returned, or why it failed."""

    seq: int
    turn: int
    step: int
    call_id: str
    name: str
    content: str
    is_error: bool
    error: events.ToolError | None


@dataclass(frozen=True, slots=True)
class ContextItem:
    """A developer message: a tool-registry change or an instructions update."""

    seq: int
    message: events.ToolRegistryUpdate | events.InstructionsUpdate

    @property
    def is_tool_change(self) -> bool:
        return stored_part(self, "message").source == "tool-registry"


@dataclass(frozen=True, slots=True)
class HeaderItem:
    """A `request/header` event: what the requests after it are sent with."""

    seq: int
    header: events.RequestHeaderData


@dataclass(frozen=True, slots=True)
class RequestErrorItem:
    """An `agent/request-error` event: a request that failed."""

    seq: int
    turn: int
    step: int
    route: str
    failure: events.Failure


@dataclass(frozen=True, slots=True)
class RetryItem:
    """An `llm/retry` event: a failed attempt, tried again after `delay_ms`."""

    seq: int
    turn: int
    step: int
    retry: int
    max_retries: int
    delay_ms: int
    failure: events.Failure


@dataclass(frozen=True, slots=True)
class SummaryItem:
    """A `compaction/summary` event: it stands for the messages up to `up_to_seq`."""

    seq: int
    summary: str
    up_to_seq: int
    sequence: int


class _ModelPart:
    """An item's part (content, usage, an error, a message, a header) kept as the msgspec Struct it
    was decoded as until first read, then built as its model (`model_of`) and kept in the slot.

    A tail or a window makes hundreds of items of which a few parts are read (a list shows 40
    rows; a request's projection reads its messages once): building every part's model up front
    was most of an item's cost. Reading gives the model a full fold gives, so equality, hashing,
    `repr`, pickling and `dataclasses` helpers (which all read the attribute) are unchanged."""

    __slots__ = ("_slot",)

    def __init__(self, slot: Any) -> None:
        self._slot = slot  # the dataclass's own slot descriptor

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = self._slot.__get__(instance, owner)
        model = model_of(value)
        if model is not value:
            self._slot.__set__(instance, model)
        return model

    def __set__(self, instance: object, value: Any) -> None:
        self._slot.__set__(instance, value)


def stored_part(item: object, name: str) -> Any:
    """An item's part as stored: the msgspec Struct it was decoded as until its model is built
    (`_ModelPart`), else the model. For a reader of its fields only (a widget drawing an item):
    both have the same fields and values, and reading the Struct's imports no pydantic."""
    part = type(item).__dict__[name]
    return part._slot.__get__(item) if isinstance(part, _ModelPart) else getattr(item, name)


def _parts_built_on_first_read(cls: type, *names: str) -> None:
    """Put a `_ModelPart` over each named field's slot (the slot keeps the value)."""
    for name in names:
        setattr(cls, name, _ModelPart(cls.__dict__[name]))


_parts_built_on_first_read(AssistantItem, "content", "usage")
_parts_built_on_first_read(ToolResultItem, "error")
_parts_built_on_first_read(ContextItem, "message")
_parts_built_on_first_read(HeaderItem, "header")
_parts_built_on_first_read(RequestErrorItem, "failure")
_parts_built_on_first_read(RetryItem, "failure")


Message = Union[UserItem, AssistantItem, ToolResultItem, ContextItem, SummaryItem]
"""What a model request is sent with (before any route's projection)."""

Item = Union[
    UserItem,
    AssistantItem,
    ToolCallItem,
    ToolResultItem,
    ContextItem,
    HeaderItem,
    RequestErrorItem,
    RetryItem,
    SummaryItem,
]

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
    now on) and the message window, known by reference until it is read. Handed from the indexed
    reader to `SessionView.seeded` only: a plain class, where a dataclass would be compiled before
    a resumed chat's first frame."""

    __slots__ = ("next_seq", "requests", "header", "header_seq", "history", "window")

    def __init__(
        self,
        *,
        next_seq: int,
        requests: int,
        header: events.RequestHeaderData | None,
        header_seq: int | None,
        history: ToolHistoryReducer,
        window: WindowBase | None,
    ) -> None:
        self.next_seq = next_seq
        self.requests = requests
        self.header = header
        self.header_seq = header_seq
        self.history = history
        self.window = window


class SessionView:
    """Fold events with `apply()`; read `turns`, `requests`, `items`, `messages`.

    A seeded view (`seeded`) folds from a checkpoint: its lists hold only what it folded, and its
    requests are numbered and windowed exactly as a fold from seq 0 would have made them.
    """

    def __init__(self, header: events.SessionHeader) -> None:
        self.header = header
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

    @classmethod
    def seeded(cls, header: events.SessionHeader, seed: FoldSeed) -> SessionView:
        view = cls(header)
        view.last_seq = seed.next_seq - 1
        view._request_count = seed.requests
        view._base = seed.window
        view._history = seed.history
        view._header = seed.header
        view._header_seq = seed.header_seq
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
                self._request(item)
            if isinstance(item, HeaderItem):
                self._header, self._header_seq = item.header, item.seq
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

    def _step_end(self, event: events.StepEnd) -> None:
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

    def _request(self, outcome: AssistantItem | RequestErrorItem) -> None:
        self._request_count += 1
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
        )
        self.requests.append(request)
        step = self.open_step
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


# --- items -----------------------------------------------------------------------------------------


def item_of(event: events.Envelope | structs.Envelope) -> Item | None:
    """The view item an event makes; None for the turn and step boundaries. The event may be the
    msgspec Struct of a line it validated (`Chain.decoded`): the item is the same, its parts built
    as the models."""
    maker = _ITEM_MAKERS.get(event.type)
    return maker(event) if maker is not None else None


def _constructors(*classes: type) -> list[Callable[..., Any]]:
    """`cls(*values)` for each frozen slots dataclass, its fields in order, without its `__init__`:
    that sets each field through `object.__setattr__` by name (frozen), three times the cost of
    calling the slots' own descriptors, as these do (items are made by the hundred for a window or
    a tail). One source for all, compiled once: a resumed chat's first frame waits for this module."""
    namespace: dict[str, Any] = {"new": object.__new__}
    source = []
    for number, cls in enumerate(classes):
        names = [field.name for field in fields(cls)]
        assert tuple(names) == cls.__slots__  # type: ignore[attr-defined]
        namespace[f"cls{number}"] = cls
        for name in names:  # a part built on first read is set through its own slot, as it is
            slot = cls.__dict__[name]
            namespace[f"set{number}_{name}"] = (slot._slot if isinstance(slot, _ModelPart) else slot).__set__
        source += [
            f"def make{number}({', '.join(names)}):",
            f"    instance = new(cls{number})",
            *(f"    set{number}_{name}(instance, {name})" for name in names),
            "    return instance",
        ]
    exec("\n".join(source), namespace)  # noqa: S102 - source made above from the dataclasses' own field names
    return [namespace[f"make{number}"] for number in range(len(classes))]


(
    _new_user, _new_header, _new_context, _new_assistant, _new_request_error, _new_tool_call, _new_tool_result,
    _new_retry, _new_summary,
) = _constructors(
    UserItem, HeaderItem, ContextItem, AssistantItem, RequestErrorItem, ToolCallItem, ToolResultItem, RetryItem,
    SummaryItem,
)  # fmt: skip


def _user(event: events.UserMessage) -> UserItem:
    data = event.data
    return _new_user(event.seq, data.id, data.text)


def _header(event: events.RequestHeader) -> HeaderItem:
    return _new_header(event.seq, event.data)


def _developer(event: events.DeveloperMessage) -> ContextItem:
    return _new_context(event.seq, event.data)


def _assistant(event: events.AssistantMessage) -> AssistantItem:
    data = event.data
    return _new_assistant(
        event.seq, data.turn, data.step, data.route, data.model, data.content, data.usage, data.finish,
        bool(data.interrupted),
    )


def _request_error(event: events.RequestError) -> RequestErrorItem:
    data = event.data
    return _new_request_error(event.seq, data.turn, data.step, data.route, data.failure)


def _tool_call(event: events.ToolCall) -> ToolCallItem:
    data = event.data
    return _new_tool_call(event.seq, data.turn, data.step, data.call_id, data.name, data.arguments)


def _tool_result(event: events.ToolResult) -> ToolResultItem:
    data = event.data
    return _new_tool_result(
        event.seq, data.turn, data.step, data.call_id, data.name, data.content, data.is_error, data.error
    )


def _retry(event: events.Retry) -> RetryItem:
    data = event.data
    return _new_retry(
        event.seq, data.turn, data.step, data.retry, data.max_retries, data.delay_ms, data.failure
    )


def _compaction(event: events.CompactionSummary) -> SummaryItem:
    data = event.data
    return _new_summary(event.seq, data.summary, data.up_to_seq, data.sequence)


def open_step_of(turn: Turn | None) -> Step | None:
    """The open step of the open turn `turn`, if any."""
    if turn is not None and turn.steps and turn.steps[-1].open:
        return turn.steps[-1]
    return None


_ITEM_MAKERS: dict[str, Callable[[events.Envelope], Item]] = {  # by the `type` tag: a model's or a Struct's
    "user/message": _user,  # type: ignore[dict-item]
    "request/header": _header,  # type: ignore[dict-item]
    "developer/message": _developer,  # type: ignore[dict-item]
    "assistant/message": _assistant,  # type: ignore[dict-item]
    "agent/request-error": _request_error,  # type: ignore[dict-item]
    "tool/call": _tool_call,  # type: ignore[dict-item]
    "tool/result": _tool_result,  # type: ignore[dict-item]
    "llm/retry": _retry,  # type: ignore[dict-item]
    "compaction/summary": _compaction,  # type: ignore[dict-item]
}

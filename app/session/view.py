"""The incremental session view that Chat, Trajectory, Inspector and the loop all read.

It folds events one at a time into turns → steps → model requests and items. Each
`assistant/message` or `agent/request-error` is one model request, numbered from 1 in log order,
with the header in force, the tool-history snapshot in force and the message list it was sent with.
No widget or command parses session JSON itself: they read this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from app.session.events import (
    AssistantMessage,
    CompactionSummary,
    Content,
    DeveloperMessage,
    Envelope,
    Failure,
    InstructionsUpdate,
    ReasoningContent,
    RequestError,
    RequestHeader,
    RequestHeaderData,
    Retry,
    SessionHeader,
    StepEnd,
    StepStart,
    TextContent,
    ToolCall,
    ToolCallContent,
    ToolError,
    ToolRegistryUpdate,
    ToolResult,
    TurnEnd,
    TurnStart,
    Usage,
    UserMessage,
)
from app.session.history import ToolHistory, ToolHistoryReducer

# --- items ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UserItem:
    seq: int
    id: str
    text: str


@dataclass(frozen=True, slots=True)
class AssistantItem:
    seq: int
    turn: int
    step: int
    route: str
    model: str
    content: tuple[Content, ...]
    usage: Usage | None
    finish: str
    interrupted: bool

    @property
    def text(self) -> str:
        return "".join(part.text for part in self.content if isinstance(part, TextContent))

    @property
    def reasoning(self) -> str:
        return "".join(part.text for part in self.content if isinstance(part, ReasoningContent))

    @property
    def tool_calls(self) -> tuple[ToolCallContent, ...]:
        return tuple(part for part in self.content if isinstance(part, ToolCallContent))


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
    seq: int
    turn: int
    step: int
    call_id: str
    name: str
    content: str
    is_error: bool
    error: ToolError | None


@dataclass(frozen=True, slots=True)
class ContextItem:
    """A developer message: a tool-registry change or an instructions update."""

    seq: int
    message: ToolRegistryUpdate | InstructionsUpdate

    @property
    def is_tool_change(self) -> bool:
        return isinstance(self.message, ToolRegistryUpdate)


@dataclass(frozen=True, slots=True)
class HeaderItem:
    seq: int
    header: RequestHeaderData


@dataclass(frozen=True, slots=True)
class RequestErrorItem:
    seq: int
    turn: int
    step: int
    route: str
    failure: Failure


@dataclass(frozen=True, slots=True)
class RetryItem:
    seq: int
    turn: int
    step: int
    retry: int
    max_retries: int
    delay_ms: int
    failure: Failure


@dataclass(frozen=True, slots=True)
class SummaryItem:
    seq: int
    summary: str
    up_to_seq: int
    sequence: int


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


@dataclass(eq=False, slots=True)
class ModelRequest:
    """One model request. `messages` is a window onto a shared list, so requests cost O(1) each."""

    index: int
    seq: int
    turn: int
    step: int
    route: str
    header: RequestHeaderData | None
    header_seq: int | None
    history: ToolHistory
    outcome: AssistantItem | RequestErrorItem
    _message_log: list[Message] = field(repr=False)
    message_count: int

    @property
    def messages(self) -> tuple[Message, ...]:
        return tuple(self._message_log[: self.message_count])

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
            self.messages,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModelRequest) and self._key() == other._key()


@dataclass(slots=True)
class Step:
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
    number: int
    seq: int
    items: list[Item] = field(default_factory=list)
    """Items of the turn outside any step (its user message, typically)."""
    steps: list[Step] = field(default_factory=list)
    end_seq: int | None = None
    end_reason: str | None = None

    @property
    def open(self) -> bool:
        return self.end_seq is None

    @property
    def requests(self) -> list[ModelRequest]:
        return [request for step in self.steps for request in step.requests]


# --- the view ------------------------------------------------------------------------------------


class SessionView:
    """Fold events with `apply()`; read `turns`, `requests`, `items`, `messages`."""

    def __init__(self, header: SessionHeader) -> None:
        self.header = header
        self.turns: list[Turn] = []
        self.requests: list[ModelRequest] = []
        self.items: list[Item] = []
        self.last_seq = -1
        self._messages: list[Message] = []
        self._history = ToolHistoryReducer()
        self._header: RequestHeaderData | None = None
        self._header_seq: int | None = None

    @property
    def messages(self) -> tuple[Message, ...]:
        """The message list the next request would be sent with."""
        return tuple(self._messages)

    @property
    def current_header(self) -> RequestHeaderData | None:
        return self._header

    @property
    def current_header_seq(self) -> int | None:
        return self._header_seq

    @property
    def history(self) -> ToolHistory:
        return self._history.snapshot()

    @property
    def open_turn(self) -> Turn | None:
        return self.turns[-1] if self.turns and self.turns[-1].open else None

    @property
    def open_step(self) -> Step | None:
        turn = self.open_turn
        if turn is not None and turn.steps and turn.steps[-1].open:
            return turn.steps[-1]
        return None

    def apply(self, event: Envelope) -> None:
        handler = _HANDLERS[type(event)]
        handler(self, event)
        self._history.apply(event)
        self.last_seq = event.seq

    # --- handlers --------------------------------------------------------------------------------

    def _turn_start(self, event: TurnStart) -> None:
        self.turns.append(Turn(number=event.data.turn, seq=event.seq))

    def _turn_end(self, event: TurnEnd) -> None:
        turn = self.open_turn
        if turn is not None:
            turn.end_seq = event.seq
            turn.end_reason = event.data.reason

    def _step_start(self, event: StepStart) -> None:
        turn = self.open_turn
        if turn is not None:
            turn.steps.append(Step(turn=event.data.turn, number=event.data.step, seq=event.seq))

    def _step_end(self, event: StepEnd) -> None:
        step = self.open_step
        if step is not None:
            step.end_seq = event.seq

    def _user(self, event: UserMessage) -> None:
        item = UserItem(seq=event.seq, id=event.data.id, text=event.data.text)
        self._add(item)
        self._messages.append(item)

    def _request_header(self, event: RequestHeader) -> None:
        self._header = event.data
        self._header_seq = event.seq
        self._add(HeaderItem(seq=event.seq, header=event.data))

    def _developer(self, event: DeveloperMessage) -> None:
        item = ContextItem(seq=event.seq, message=event.data)
        self._add(item)
        self._messages.append(item)

    def _assistant(self, event: AssistantMessage) -> None:
        data = event.data
        item = AssistantItem(
            seq=event.seq,
            turn=data.turn,
            step=data.step,
            route=data.route,
            model=data.model,
            content=data.content,
            usage=data.usage,
            finish=data.finish,
            interrupted=bool(data.interrupted),
        )
        self._request(item)
        self._add(item)
        self._messages.append(item)

    def _request_error(self, event: RequestError) -> None:
        data = event.data
        item = RequestErrorItem(
            seq=event.seq, turn=data.turn, step=data.step, route=data.route, failure=data.failure
        )
        self._request(item)
        self._add(item)

    def _tool_call(self, event: ToolCall) -> None:
        data = event.data
        self._add(
            ToolCallItem(
                seq=event.seq,
                turn=data.turn,
                step=data.step,
                call_id=data.call_id,
                name=data.name,
                arguments=data.arguments,
            )
        )

    def _tool_result(self, event: ToolResult) -> None:
        data = event.data
        item = ToolResultItem(
            seq=event.seq,
            turn=data.turn,
            step=data.step,
            call_id=data.call_id,
            name=data.name,
            content=data.content,
            is_error=data.is_error,
            error=data.error,
        )
        self._add(item)
        self._messages.append(item)

    def _retry(self, event: Retry) -> None:
        data = event.data
        self._add(
            RetryItem(
                seq=event.seq,
                turn=data.turn,
                step=data.step,
                retry=data.retry,
                max_retries=data.max_retries,
                delay_ms=data.delay_ms,
                failure=data.failure,
            )
        )

    def _compaction(self, event: CompactionSummary) -> None:
        data = event.data
        item = SummaryItem(
            seq=event.seq, summary=data.summary, up_to_seq=data.up_to_seq, sequence=data.sequence
        )
        self._add(item)
        # A new list, not an edit: earlier requests keep the window they were sent with.
        self._messages = [item, *(m for m in self._messages if m.seq > data.up_to_seq)]

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
        request = ModelRequest(
            index=len(self.requests) + 1,
            seq=outcome.seq,
            turn=outcome.turn,
            step=outcome.step,
            route=outcome.route,
            header=self._header,
            header_seq=self._header_seq,
            history=self._history.snapshot(),
            outcome=outcome,
            _message_log=self._messages,
            message_count=len(self._messages),
        )
        self.requests.append(request)
        step = self.open_step
        if step is not None:
            step.requests.append(request)


_HANDLERS = {
    TurnStart: SessionView._turn_start,
    TurnEnd: SessionView._turn_end,
    StepStart: SessionView._step_start,
    StepEnd: SessionView._step_end,
    UserMessage: SessionView._user,
    RequestHeader: SessionView._request_header,
    DeveloperMessage: SessionView._developer,
    AssistantMessage: SessionView._assistant,
    RequestError: SessionView._request_error,
    ToolCall: SessionView._tool_call,
    ToolResult: SessionView._tool_result,
    Retry: SessionView._retry,
    CompactionSummary: SessionView._compaction,
}

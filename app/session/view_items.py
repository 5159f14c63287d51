"""The view's items: what each event of a session becomes (`item_of`), one frozen dataclass per kind.

The session view (`app.session.view`) folds them into turns, steps and model requests; the chat,
the trajectory, the inspector and the exports read them. An item is made from the pydantic model
or straight from the msgspec Struct of a line (`app.session.structs`); its parts (content, usage, a
failure, a header) are built as the models only when first read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Union

from app.session import structs
from app.session.lazy_events import events  # imported when first used: items are made from Structs
from app.session.structs import model_of


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


# --- made from events ----------------------------------------------------------------------------


def item_of(event: events.Envelope | structs.Envelope) -> Item | None:
    """The view item an event makes; None for the turn and step boundaries. The event may be the
    msgspec Struct of a line it validated (`Chain.decoded`): the item is the same, its parts built
    as the models."""
    maker = _ITEM_MAKERS.get(event.type)
    return maker(event) if maker is not None else None


def _constructors(*classes: type) -> list[Callable[..., Any]]:
    """`cls(*values)` for each frozen slots dataclass, its fields in order, without its `__init__`:
    that sets each field through `object.__setattr__` by name (frozen), dearer than calling the
    slots' own descriptors, as these do (items are made by the hundred for a window or
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

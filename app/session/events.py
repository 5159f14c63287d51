"""Session log format version 1 (docs/architecture.md §4): the header line and one discriminated union of events.

The models are strict and closed: a reader refuses any key the format does not name, any value of
the wrong JSON type, and an empty `callId`. JSON keys are camelCase; Python attributes snake_case.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel

from app.session.ids import FORMAT_VERSION as FORMAT_VERSION  # re-exported: the format's version
from app.session.ids import SESSION_ID_PATTERN

NonEmptyStr = Annotated[str, Field(min_length=1)]
SessionId = Annotated[str, Field(pattern=f"^{SESSION_ID_PATTERN.pattern}$")]
Count = Annotated[int, Field(ge=0)]
Ordinal = Annotated[int, Field(ge=1)]


class Model(BaseModel):
    # Schemas are built on first use, not at import: reading a session builds none (the Structs
    # vouch for its lines, `app.session.structs`), so a resumed chat's first frame waits for no
    # schema; the chat builds them behind it (`build_models`).
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        strict=True,
        alias_generator=to_camel,
        populate_by_name=True,
        defer_build=True,
    )

    def to_json(self) -> dict[str, Any]:
        """The wire/log form: camelCase keys, optional keys left out when unset."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


# --- the header line -------------------------------------------------------------------------


class ParentRef(Model):
    id: SessionId
    seq: Count


class SessionHeader(Model):
    type: Literal["session"] = "session"
    version: int
    id: SessionId
    created_at: Count
    cwd: str
    parent: ParentRef | None

    def to_json(self) -> dict[str, Any]:
        # `parent` is written even when null: the header always names all its keys.
        return self.model_dump(mode="json", by_alias=True)


# --- shared pieces -----------------------------------------------------------------------------


class ToolDefinition(Model):
    """An effective tool as the registry assembled it, independent of any route's abilities."""

    name: NonEmptyStr
    description: str
    parameters: dict[str, Any]
    defer_loading: bool | None = None


class Usage(Model):
    input: Count
    output: Count
    cache_read: Count
    reasoning: Count
    cache_write: Count | None = None
    """The part of `input` written to the provider's prompt cache, where the wire reports it (the
    Anthropic Messages API); None elsewhere."""


class Failure(Model):
    code: NonEmptyStr
    message: str
    status: int | None = None
    retry_after_ms: Count | None = None


class ToolError(Model):
    code: NonEmptyStr
    message: str


class TextContent(Model):
    type: Literal["text"] = "text"
    text: str


class ReasoningContent(Model):
    type: Literal["reasoning"] = "reasoning"
    text: str


class ToolCallContent(Model):
    type: Literal["tool-call"] = "tool-call"
    call_id: NonEmptyStr
    name: NonEmptyStr
    arguments: str


Content = Annotated[
    Union[TextContent, ReasoningContent, ToolCallContent], Field(discriminator="type")
]


class ToolAddition(Model):
    name: NonEmptyStr
    header_seq: Count


# --- event data ----------------------------------------------------------------------------------

TurnEndReason = Literal["completed", "aborted", "error", "max-tokens", "interrupted"]
AssistantFinish = Literal["stop", "tool-calls", "max-tokens", "aborted"]
HeaderReason = Literal["initial", "resume", "change"]


class TurnStartData(Model):
    turn: Ordinal


class TurnEndData(Model):
    turn: Ordinal
    reason: TurnEndReason


class StepData(Model):
    turn: Ordinal
    step: Ordinal


class UserMessageData(Model):
    id: NonEmptyStr
    text: str


class RequestHeaderData(Model):
    reason: HeaderReason
    sequence: Count
    route: NonEmptyStr
    model: str
    system: str
    tools: tuple[ToolDefinition, ...]
    config: dict[str, Any]


class ToolRegistryUpdate(Model):
    id: NonEmptyStr
    source: Literal["tool-registry"] = "tool-registry"
    additions: tuple[ToolAddition, ...]
    removals: tuple[NonEmptyStr, ...]


class InstructionsUpdate(Model):
    id: NonEmptyStr
    source: Literal["instructions"] = "instructions"
    text: str
    header_seq: Count


DeveloperMessageData = Annotated[
    Union[ToolRegistryUpdate, InstructionsUpdate], Field(discriminator="source")
]


class AssistantMessageData(Model):
    turn: Ordinal
    step: Ordinal
    route: NonEmptyStr
    model: str
    content: tuple[Content, ...]
    usage: Usage | None = None
    finish: AssistantFinish
    interrupted: bool | None = None


class ToolCallData(Model):
    turn: Ordinal
    step: Ordinal
    call_id: NonEmptyStr
    name: NonEmptyStr
    arguments: str


class ToolResultData(Model):
    turn: Ordinal
    step: Ordinal
    call_id: NonEmptyStr
    name: NonEmptyStr
    content: str
    is_error: bool
    error: ToolError | None = None


class RequestErrorData(Model):
    turn: Ordinal
    step: Ordinal
    route: NonEmptyStr
    failure: Failure


class RetryData(Model):
    turn: Ordinal
    step: Ordinal
    retry: Ordinal
    max_retries: Count
    delay_ms: Count
    failure: Failure


class CompactionSummaryData(Model):
    summary: str
    up_to_seq: Count
    sequence: Count


# --- the envelope ------------------------------------------------------------------------------------


class Envelope(Model):
    type: str
    seq: Count
    time: Count


class TurnStart(Envelope):
    type: Literal["turn/start"] = "turn/start"
    data: TurnStartData


class TurnEnd(Envelope):
    type: Literal["turn/end"] = "turn/end"
    data: TurnEndData


class StepStart(Envelope):
    type: Literal["step/start"] = "step/start"
    data: StepData


class StepEnd(Envelope):
    type: Literal["step/end"] = "step/end"
    data: StepData


class UserMessage(Envelope):
    type: Literal["user/message"] = "user/message"
    data: UserMessageData


class RequestHeader(Envelope):
    type: Literal["request/header"] = "request/header"
    data: RequestHeaderData


class DeveloperMessage(Envelope):
    type: Literal["developer/message"] = "developer/message"
    data: DeveloperMessageData


class AssistantMessage(Envelope):
    type: Literal["assistant/message"] = "assistant/message"
    data: AssistantMessageData


class ToolCall(Envelope):
    type: Literal["tool/call"] = "tool/call"
    data: ToolCallData


class ToolResult(Envelope):
    type: Literal["tool/result"] = "tool/result"
    data: ToolResultData


class RequestError(Envelope):
    type: Literal["agent/request-error"] = "agent/request-error"
    data: RequestErrorData


class Retry(Envelope):
    type: Literal["llm/retry"] = "llm/retry"
    data: RetryData


class CompactionSummary(Envelope):
    type: Literal["compaction/summary"] = "compaction/summary"
    data: CompactionSummaryData


Event = Annotated[
    Union[
        TurnStart,
        TurnEnd,
        StepStart,
        StepEnd,
        UserMessage,
        RequestHeader,
        DeveloperMessage,
        AssistantMessage,
        ToolCall,
        ToolResult,
        RequestError,
        Retry,
        CompactionSummary,
    ],
    Field(discriminator="type"),
]

EVENT_TYPES: dict[str, type[Envelope]] = {
    cls.model_fields["type"].default: cls for cls in get_args(get_args(Event)[0])
}
"""Event class by its `type`, in the union's order."""

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event, config=ConfigDict(defer_build=True))
HEADER_ADAPTER: TypeAdapter[SessionHeader] = TypeAdapter(SessionHeader)


def build_models() -> None:
    """Build every schema now rather than when the first event is validated or written."""
    EVENT_ADAPTER.rebuild()
    HEADER_ADAPTER.rebuild()
    models = [Model]
    while models:
        model = models.pop()
        model.model_rebuild()
        models.extend(model.__subclasses__())


def make_event(type_: str, seq: int, time: int, data: BaseModel) -> Envelope:
    """Build an event of `type_` around already-validated data."""
    return EVENT_TYPES[type_](seq=seq, time=time, data=data)


def encode_event(event: Envelope) -> bytes:
    """One log line, newline included, with `type` as the first key (readers classify on it)."""
    return event.model_dump_json(by_alias=True, exclude_none=True).encode() + b"\n"


def encode_header(header: SessionHeader) -> bytes:
    return header.model_dump_json(by_alias=True).encode() + b"\n"

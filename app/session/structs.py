"""The session format's events as msgspec Structs: strict validation at the speed of parsing (docs/architecture.md §5).

A mirror of `app.session.events` that decodes and validates an event line in one pass, faster
than `json.loads` alone. It only says yes faster: a line it refuses goes through the
pydantic models, which accept it or name the reason, so it must refuse whatever they refuse (tests
hold the two together on the corrupt corpus and on generated and mutated lines). Strict validation
(`Chain.validate`) feeds what it decodes to the invariant checker and drops it; every other reader
gets the pydantic models, built from the Structs by `model_of` without validating again
(`event_model`, a fraction of the cost of pydantic's parse), except the view's items and messages:
`app.session.view_items` makes them straight from the Structs, their parts (content, usage, a failure,
a header) built as the models the same way when first read.
"""

# No `from __future__ import annotations`: msgspec would evaluate every field's annotation from its
# text when a class is made (much of this module's import, which a resumed chat's first frame
# waits for). Annotations that name the models are quoted (evaluating them would import pydantic).
from collections.abc import Callable
from itertools import product
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

import msgspec

from app.session.ids import SESSION_ID_PATTERN
from app.session.lazy_events import events  # imported by the first model built (`_Builders`), not by a read
from app.session.type_codes import TYPE_CODES, UNKNOWN, prefix_code
from app.untrusted_json import MAX_DEPTH

if TYPE_CHECKING:
    from pydantic import BaseModel

NonEmptyStr = Annotated[str, msgspec.Meta(min_length=1)]
Count = Annotated[int, msgspec.Meta(ge=0)]
Ordinal = Annotated[int, msgspec.Meta(ge=1)]
# msgspec searches with `re`, whose `$` also matches before a final newline; the models' `$` does not.
SessionId = Annotated[str, msgspec.Meta(pattern=f"^{SESSION_ID_PATTERN.pattern}\\Z")]


class Closed(msgspec.Struct, forbid_unknown_fields=True, rename="camel", frozen=True, gc=False):
    """Like `events.Model`: closed, camelCase keys, no coercion (msgspec never coerces JSON).
    Untracked by the collector (`gc=False`): a decoded line holds no cycles, and thousands of
    tracked objects made the collections that follow a bulk read cost time."""


class ParentRef(Closed):
    id: SessionId
    seq: Count


class SessionHeader(Closed, tag_field="type", tag="session"):
    type: ClassVar[str] = "session"  # the tag, as an attribute like the model's
    version: int
    id: SessionId
    created_at: Count
    cwd: str
    parent: ParentRef | None


class ToolDefinition(Closed):
    name: NonEmptyStr
    description: str
    parameters: dict[str, Any]
    defer_loading: bool | None = None


class Usage(Closed):
    input: Count
    output: Count
    cache_read: Count
    reasoning: Count
    cache_write: Count | None = None


class Failure(Closed):
    code: NonEmptyStr
    message: str
    status: int | None = None
    retry_after_ms: Count | None = None


class ToolError(Closed):
    code: NonEmptyStr
    message: str


class TextContent(Closed, tag_field="type", tag="text"):
    type: ClassVar[str] = "text"  # the tag, as an attribute like the model's
    text: str


class ReasoningContent(Closed, tag_field="type", tag="reasoning"):
    type: ClassVar[str] = "reasoning"  # the tag, as an attribute like the model's
    text: str


class ToolCallContent(Closed, tag_field="type", tag="tool-call"):
    type: ClassVar[str] = "tool-call"  # the tag, as an attribute like the model's
    call_id: NonEmptyStr
    name: NonEmptyStr
    arguments: str


class ToolAddition(Closed):
    name: NonEmptyStr
    header_seq: Count


class TurnStartData(Closed):
    turn: Ordinal


class TurnEndData(Closed):
    turn: Ordinal
    reason: Literal["completed", "aborted", "error", "max-tokens", "interrupted"]


class StepData(Closed):
    turn: Ordinal
    step: Ordinal


class UserMessageData(Closed):
    id: NonEmptyStr
    text: str


class RequestHeaderData(Closed):
    reason: Literal["initial", "resume", "change"]
    sequence: Count
    route: NonEmptyStr
    model: str
    system: str
    tools: tuple[ToolDefinition, ...]
    config: dict[str, Any]


class ToolRegistryUpdate(Closed, tag_field="source", tag="tool-registry"):
    source: ClassVar[str] = "tool-registry"  # the tag, as an attribute like the model's
    id: NonEmptyStr
    additions: tuple[ToolAddition, ...]
    removals: tuple[NonEmptyStr, ...]


class InstructionsUpdate(Closed, tag_field="source", tag="instructions"):
    source: ClassVar[str] = "instructions"  # the tag, as an attribute like the model's
    id: NonEmptyStr
    text: str
    header_seq: Count


class AssistantMessageData(Closed, kw_only=True):
    turn: Ordinal
    step: Ordinal
    route: NonEmptyStr
    model: str
    content: tuple[Union[TextContent, ReasoningContent, ToolCallContent], ...]
    usage: Usage | None = None
    finish: Literal["stop", "tool-calls", "max-tokens", "aborted"]
    interrupted: bool | None = None


class ToolCallData(Closed):
    turn: Ordinal
    step: Ordinal
    call_id: NonEmptyStr
    name: NonEmptyStr
    arguments: str


class ToolResultData(Closed):
    turn: Ordinal
    step: Ordinal
    call_id: NonEmptyStr
    name: NonEmptyStr
    content: str
    is_error: bool
    error: ToolError | None = None


class RequestErrorData(Closed):
    turn: Ordinal
    step: Ordinal
    route: NonEmptyStr
    failure: Failure


class RetryData(Closed):
    turn: Ordinal
    step: Ordinal
    retry: Ordinal
    max_retries: Count
    delay_ms: Count
    failure: Failure


class CompactionSummaryData(Closed):
    summary: str
    up_to_seq: Count
    sequence: Count


class Envelope(Closed, tag_field="type"):
    """`type` is the tag (and, as for the pydantic events, a class attribute the checker reads)."""

    type: ClassVar[str]
    seq: Count
    time: Count


class TurnStart(Envelope, tag="turn/start"):
    type = "turn/start"
    data: TurnStartData


class TurnEnd(Envelope, tag="turn/end"):
    type = "turn/end"
    data: TurnEndData


class StepStart(Envelope, tag="step/start"):
    type = "step/start"
    data: StepData


class StepEnd(Envelope, tag="step/end"):
    type = "step/end"
    data: StepData


class UserMessage(Envelope, tag="user/message"):
    type = "user/message"
    data: UserMessageData


class RequestHeader(Envelope, tag="request/header"):
    type = "request/header"
    data: RequestHeaderData


class DeveloperMessage(Envelope, tag="developer/message"):
    type = "developer/message"
    data: Union[ToolRegistryUpdate, InstructionsUpdate]


class AssistantMessage(Envelope, tag="assistant/message"):
    type = "assistant/message"
    data: AssistantMessageData


class ToolCall(Envelope, tag="tool/call"):
    type = "tool/call"
    data: ToolCallData


class ToolResult(Envelope, tag="tool/result"):
    type = "tool/result"
    data: ToolResultData


class RequestError(Envelope, tag="agent/request-error"):
    type = "agent/request-error"
    data: RequestErrorData


class Retry(Envelope, tag="llm/retry"):
    type = "llm/retry"
    data: RetryData


class CompactionSummary(Envelope, tag="compaction/summary"):
    type = "compaction/summary"
    data: CompactionSummaryData


EVENT_STRUCTS: tuple[type[Envelope], ...] = tuple(Envelope.__subclasses__())  # one per event type
STRUCT_CODES: dict[type[Envelope], int] = {struct: TYPE_CODES[struct.type] for struct in EVENT_STRUCTS}
"""The line index's type code of each Struct."""
_DECODER = msgspec.json.Decoder(Union[EVENT_STRUCTS])  # type: ignore[valid-type]
_HEADER_DECODER = msgspec.json.Decoder(SessionHeader)
_DECODE_ERRORS = (msgspec.DecodeError, RecursionError)  # msgspec.ValidationError is a DecodeError


def decode_valid(line: bytes) -> Envelope | None:
    """The event of `line` (without its newline) if it is a valid event line; None if not, or if
    msgspec cannot tell (the pydantic models then accept it or name the reason).

    msgspec nests about 1,000 levels deep, pydantic's parser 200 (`MAX_DEPTH`): only a header's
    free-form JSON (`config`, a tool's `parameters`) can nest that deep in a line the Structs
    accept, so a header with more brackets than that is left to the models to judge."""
    code = prefix_code(line)
    if code == UNKNOWN:
        return None  # spelt otherwise than the writer does: the models judge it, `type` key and all
    try:
        event = _DECODER.decode(line)
    except _DECODE_ERRORS:
        return None
    if STRUCT_CODES[type(event)] != code:
        return None  # a second `type` key: the models say why
    if type(event) is RequestHeader and not within_models_bound(line):
        return None
    return event  # type: ignore[no-any-return]


def within_models_bound(line: bytes) -> bool:
    """Whether `line` has too few brackets to nest deeper than the models parse (`decode_valid`)."""
    return line.count(b"[") + line.count(b"{") <= MAX_DEPTH


def decode_run(lines: bytes) -> list[Envelope] | None:
    """The events of newline-ended event lines, parsed in one call; None if any line is not one
    msgspec accepts (the caller then judges each line with `decode_valid` and the models). The
    caller vouches that each line starts with `{"type":` and has no header nested past the models'
    bound (`decode_valid`'s own checks)."""
    try:
        return _DECODER.decode_lines(lines)  # type: ignore[no-any-return]
    except _DECODE_ERRORS:
        return None


# --- the pydantic models, from Structs already validated -------------------------------------------

def _builder(struct: type[msgspec.Struct], model: type["BaseModel"]) -> Callable[[Any], "BaseModel"]:
    """Make `model` instances from `struct` ones the way pydantic's own validation leaves them: the
    same `__dict__` (in field order, which serialisation follows) without checking the values again.

    The function is written out per model, as `dataclasses` does, because a generic loop over the
    fields cost as much as pydantic's own parse. A field the Struct has as its tag (`type`,
    `source`) gets the model's literal. The fields set are the required ones and the optional ones
    not None (a `null` written out is not told apart from a key left out; nothing reads the
    difference)."""
    from pydantic import BaseModel

    struct_types = {field.name: field.type for field in msgspec.structs.fields(struct)}
    entries, optional = [], []
    for name, field in model.model_fields.items():
        if name not in struct_types:
            entries.append(f"{name!r}: {field.default!r}")
            continue
        entries.append(f"{name!r}: {_value_source(f'value.{name}', struct_types[name])}")
        if not field.is_required():
            optional.append(name)
    required = [name for name in model.model_fields if name not in optional]
    # The fields-set is one set per combination of optional fields present, shared by the instances
    # that have it: the models are frozen, so nothing adds to it (`model_copy` copies it first).
    assert model.model_config.get("frozen")
    fields_sets = {
        present: {*required, *(name for name, there in zip(optional, present) if there)}
        for present in product((False, True), repeat=len(optional))
    }
    present = ", ".join(f"fields[{name!r}] is not None" for name in optional)
    source = "\n".join([
        "def build(value):",
        f"    fields = {{{', '.join(entries)}}}",
        "    instance = new(model)",
        "    set_dict(instance, fields)",
        f"    set_fields_set(instance, fields_sets[({present}{',' if optional else ''})])",
        "    set_extra(instance, None)",
        "    set_private(instance, None)",
        "    return instance",
    ])
    slots = BaseModel.__dict__
    namespace = {
        "new": object.__new__,
        "model": model,
        "fields_sets": fields_sets,
        "builders": _BUILDERS,
        # The slots' own descriptors: what `object.__setattr__` finds by name, called directly.
        "set_dict": slots["__dict__"].__set__,
        "set_fields_set": slots["__pydantic_fields_set__"].__set__,
        "set_extra": slots["__pydantic_extra__"].__set__,
        "set_private": slots["__pydantic_private__"].__set__,
    }
    exec(source, namespace)  # noqa: S102 - source made above from the models' own field names
    return namespace["build"]  # type: ignore[no-any-return]


def _value_source(getter: str, annotation: Any) -> str:
    """The expression for one field's model value: a Struct (or a tuple or optional one) becomes
    its model; anything else (str, int, bool, a JSON dict) is the value itself."""
    if not _holds_struct(annotation):
        return getter
    arguments = get_args(annotation)
    if get_origin(annotation) is tuple:
        return f"tuple([builders[type(item)](item) for item in {getter}])"
    if type(None) in arguments:
        return f"None if {getter} is None else builders[type({getter})]({getter})"
    return f"builders[type({getter})]({getter})"


def _holds_struct(annotation: Any) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, msgspec.Struct):
        return True
    return any(_holds_struct(argument) for argument in get_args(annotation))


def model_of(value: Any) -> Any:
    """A value of an event as the models hold it: a Struct, or a tuple of them, as its model (built
    without a second validation); anything else (None, a str, a model already) as it is."""
    kind = type(value)
    if kind in _MODELLED:
        return _BUILDERS[kind](value)
    if kind is tuple and value and type(value[0]) in _MODELLED:
        return tuple([_BUILDERS[type(item)](item) for item in value])
    return value


class _Builders(dict[type, Callable[[Any], "BaseModel"]]):
    """Each Struct's builder, written out the first time it is needed: writing all of them slowed
    every start that reads a session (the chat's resume among them)."""

    def __missing__(self, struct: type) -> Callable[[Any], "BaseModel"]:
        if struct not in _MODELLED:
            raise KeyError(struct)
        build = self[struct] = _builder(struct, getattr(events, struct.__name__))
        return build


_BUILDERS = _Builders()
# Every Struct: the parts of an event that a view item holds (and the parts they hold), then the
# events' data and the events themselves (`Chain` reads an event line this way when msgspec says yes).
_MODELLED: frozenset[type] = frozenset((
    SessionHeader, ParentRef,
    TextContent, ReasoningContent, ToolCallContent, Usage, Failure, ToolError, ToolAddition, ToolRegistryUpdate,
    InstructionsUpdate, ToolDefinition, RequestHeaderData, TurnStartData, TurnEndData, StepData, UserMessageData,
    AssistantMessageData, ToolCallData, ToolResultData, RequestErrorData, RetryData, CompactionSummaryData,
    TurnStart, TurnEnd, StepStart, StepEnd, UserMessage, RequestHeader, DeveloperMessage, AssistantMessage,
    ToolCall, ToolResult, RequestError, Retry, CompactionSummary,
))


def event_model(line: bytes) -> "events.Envelope | None":
    """The pydantic event of a valid event line, built from its Struct without a second validation
    (`model_of`: the same values and field order as the models' own parse, at a fraction of its
    cost); None when msgspec does not say yes (the models then accept it or name the reason)."""
    decoded = decode_valid(line)
    return None if decoded is None else _BUILDERS[type(decoded)](decoded)  # type: ignore[return-value]


def decode_header(line: bytes) -> SessionHeader | None:
    """The Struct of a valid header line; None when msgspec does not say yes (the models then
    accept it or name the reason). Opening a session then imports no pydantic: a resumed chat's
    first frame does not wait for the models (`Chain.header` builds the header's when asked)."""
    try:
        return _HEADER_DECODER.decode(line)  # type: ignore[no-any-return]
    except _DECODE_ERRORS:
        return None

"""The agent loop (docs/architecture.md §3, §7): a prompt in, requests, tool calls and a durable log out.

Before every model request the loop settles the tool registry, assembles the request header and
appends it only when it changed, followed by one developer message for a change of tool names and
one for a change of instructions. It projects the request for the route from the session's
tool-history snapshot, streams the reply, and appends what happened. Failures arrive as error
finishes, become `agent/request-error`, and the retry policy alone decides what follows.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from app.agent.retry import RetryPolicy
from app.i18n import _, ngettext
from app.llm.dispatch import ModelClient, connect
from app.llm.errors import ABORTED
from app.llm.projection import project_tool_updates
from app.llm.routes import Route, RouteCatalog
from app.llm.stream import BlockDelta, BlockEnd, BlockStart, Finish, StreamEvent, UsageReport
from app.session.events import (
    AssistantMessageData,
    CompactionSummaryData,
    Content,
    Envelope,
    Failure,
    ReasoningContent,
    RequestErrorData,
    RequestHeaderData,
    RetryData,
    StepData,
    TextContent,
    ToolCallContent,
    ToolCallData,
    ToolError,
    ToolResultData,
    TurnEndData,
    TurnStartData,
    Usage,
    UserMessageData,
)
from app.session.headers import instructions_message, needs_new_header, tool_registry_message
from app.session.session import Session
from app.session.store import TOOL_NOT_STARTED, SessionWriter
from app.session.view_items import Message, SummaryItem, UserItem
from app.tools.approval import Approver
from app.tools.registry import ToolRegistry
from app.tools.tool import ToolContext, ToolOutcome

COMPACTION_PROMPT = (
    "Summarise the conversation so far for your own later use: the user's goals, decisions made, "
    "facts learned from tools (with file names and values), and what remains to do. Be concise."
)
"""Model-facing, so fixed English: the summary must not depend on the UI language."""

INTERRUPTED_RUNNING = "Interrupted by the user before the tool finished; its outcome is unknown."
INTERRUPTED_NOT_STARTED = "Interrupted by the user before the tool started."
"""Tool results the model reads in later requests: fixed English like every model-facing text;
a front end shows the error code in the interface language."""

ARGUMENTS_CUT_OFF = "ARGUMENTS_CUT_OFF"
CUT_OFF_RESULT = (
    "Not run: the reply reached the output token limit before this call's arguments were complete. "
    "Call the tool again with complete arguments; split large content over several calls."
)
"""The answer to a call the output limit cut short (docs/streaming.md): it is never run, and the
result keeps the history one every provider accepts (each call answered)."""


class AgentListener:
    """Hooks for a front end; every method is optional to override."""

    def event_appended(self, event: Envelope) -> None:
        """Called after each event is written to the log."""

    def stream_event(self, event: StreamEvent) -> None:
        """Called for each streamed piece of the reply being received."""


@dataclass(frozen=True, slots=True)
class CompactionSettings:
    auto: bool = True
    share: float = 0.8
    """Compact before the next request once this share of the route's context window is used."""


@dataclass(slots=True)
class TurnResult:
    reason: str
    text: str = ""
    failure: Failure | None = None


@dataclass(slots=True)
class _Reply:
    content: list[Content] = field(default_factory=list)
    usage: Usage | None = None
    finish: Finish | None = None
    cut_off: set[str] = field(default_factory=set)
    """Ids of the calls whose arguments the output limit left incomplete."""


class CompactionError(Exception):
    """The summary request failed; the conversation goes on uncompacted."""

    def __init__(self, failure: Failure) -> None:
        self.failure = failure
        super().__init__(failure.message)


class Agent:
    def __init__(
        self,
        writer: SessionWriter,
        tools: ToolRegistry,
        catalog: RouteCatalog,
        route_id: str,
        *,
        approver: Approver,
        system: str,
        config: Mapping[str, Any] | None = None,
        compaction: CompactionSettings = CompactionSettings(),
        connect_route: Callable[[Route], ModelClient] = connect,
        listener: AgentListener | None = None,
        max_steps: int = 50,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self.writer = writer
        self.tools = tools
        self.approver = approver
        self.catalog = catalog
        self.route = catalog.get(route_id)
        self.system = system
        self.config = dict(config or {})
        self._compaction = compaction
        self._connect = connect_route
        self._clients: dict[str, ModelClient] = {}
        self.listener = listener or AgentListener()
        self._max_steps = max_steps
        self._sleep = sleep
        view = writer.session.view()
        self._sequence = max(
            writer.session.tool_history().sequence,
            max((m.sequence for m in view.messages if isinstance(m, SummaryItem)), default=0),
        )
        self._headers_this_run = 0
        self._compact_before_next_request = False
        # What a cancel must close: the reply being streamed, the calls of the current reply
        # still without a result, and which of those had started.
        self._partial: _Reply | None = None
        self._unanswered: list[ToolCallContent] = []
        self._started: set[str] = set()

    # --- public controls ---------------------------------------------------------------------------

    @property
    def session(self) -> Session:
        return self.writer.session

    async def aclose(self) -> None:
        """Close the model clients this agent opened (one per route used)."""
        clients, self._clients = self._clients, {}
        for client in clients.values():
            await client.aclose()

    def switch_route(self, route_id: str) -> None:
        """A route switch is a header change, not a new sequence (docs/architecture.md §7)."""
        self.route = self.catalog.get(route_id)

    def new_sequence(self) -> None:
        """The user's `/new-sequence`: the next header starts a new projection sequence."""
        self._sequence += 1

    async def run_turn(self, text: str) -> TurnResult:
        turn = self._next_turn_number()
        self._append("turn/start", TurnStartData(turn=turn))
        self._append("user/message", UserMessageData(id=_new_id("u"), text=text))
        step = 0
        try:
            while True:
                step += 1
                if step > self._max_steps:
                    return self._end_turn(
                        turn,
                        "error",
                        failure=Failure(
                            code="MAX_STEPS",
                            message=ngettext(
                                "Stopped after {n} step without a final answer.",
                                "Stopped after {n} steps without a final answer.",
                                self._max_steps,
                            ).format(n=self._max_steps),
                        ),
                    )
                self._append("step/start", StepData(turn=turn, step=step))
                outcome = await self._request_with_retries(turn, step)
                if isinstance(outcome, Failure):
                    self._append("step/end", StepData(turn=turn, step=step))
                    return self._end_turn(turn, "error", failure=outcome)
                calls = [part for part in outcome.content if isinstance(part, ToolCallContent)]
                if calls:
                    await self._run_tools(turn, step, calls, cut_off=outcome.cut_off)
                self._append("step/end", StepData(turn=turn, step=step))
                if outcome.finish is not None and outcome.finish.reason == "max-tokens":
                    return self._end_turn(turn, "max-tokens", text=_text_of(outcome.content))
                if not calls:
                    return self._end_turn(turn, "completed", text=_text_of(outcome.content))
        except asyncio.CancelledError:
            self._close_cancelled_turn(turn)
            raise

    async def compact(self) -> SummaryItem:
        """Summarise the conversation in an auxiliary request and start a new sequence."""
        view = self.session.view()
        if not view.messages:
            raise CompactionError(
                Failure(code="NOTHING_TO_COMPACT", message=_("There is nothing to compact yet."))
            )
        await self.tools.settle()
        header = self._sync_header()
        view = self.session.view()
        messages = (*view.messages, UserItem(seq=-1, id="compaction", text=COMPACTION_PROMPT))
        # Its stream is not the conversation's: listeners see the summary once it is logged.
        reply = await self._stream(header, messages, show=False)
        failure = _failure_of(reply)
        if failure is not None:
            raise CompactionError(failure)
        self._sequence += 1
        event = self._append(
            "compaction/summary",
            CompactionSummaryData(
                summary=_text_of(reply.content),
                up_to_seq=self.writer.next_seq - 1,
                sequence=self._sequence,
            ),
        )
        self._compact_before_next_request = False
        return SummaryItem(
            seq=event.seq,
            summary=event.data.summary,
            up_to_seq=event.data.up_to_seq,
            sequence=event.data.sequence,
        )

    # --- one request, with retries -----------------------------------------------------------------

    async def _request_with_retries(self, turn: int, step: int) -> _Reply | Failure:
        retry = 0
        while True:
            if self._compact_before_next_request:
                await self._auto_compact()
            await self.tools.settle()
            header = self._sync_header()
            reply = await self._stream(header, self.session.view().messages)
            failure = _failure_of(reply)
            if failure is None:
                self._append_assistant(turn, step, reply)
                return reply
            self._append(
                "agent/request-error",
                RequestErrorData(turn=turn, step=step, route=self.route.id, failure=failure),
            )
            retry += 1
            policy = RetryPolicy.of(self.route)
            delay = policy.delay_for(failure, retry)
            if delay is None:
                return failure
            self._append(
                "llm/retry",
                RetryData(
                    turn=turn,
                    step=step,
                    retry=retry,
                    max_retries=policy.max_retries,
                    delay_ms=round(delay * 1000),
                    failure=failure,
                ),
            )
            await self._sleep(delay)

    async def _auto_compact(self) -> None:
        try:
            await self.compact()
        except CompactionError:
            # The request goes on with the full history; the provider may still accept it.
            self._compact_before_next_request = False

    async def _stream(
        self, header: RequestHeaderData, messages: Sequence[Message], *, show: bool = True
    ) -> _Reply:
        projected = project_tool_updates(messages, self.session.tool_history(), self.route)
        client = self._client()
        wire = client.build(projected, header)
        reply = _Reply()
        self._partial = reply
        blocks: dict[int, list[str]] = {}
        kinds: dict[int, str] = {}
        order: list[int] = []
        calls: dict[int, ToolCallContent] = {}
        try:
            async for event in client.stream(wire):
                if isinstance(event, BlockEnd) and kinds.get(event.index) == "tool-call":
                    event = self._with_unique_call_id(event, calls.values())
                if show:
                    self.listener.stream_event(event)
                if isinstance(event, BlockStart):
                    kinds[event.index] = event.kind
                    blocks[event.index] = []
                    order.append(event.index)
                elif isinstance(event, BlockDelta):
                    blocks[event.index].append(event.text)
                elif isinstance(event, BlockEnd) and kinds.get(event.index) == "tool-call":
                    calls[event.index] = ToolCallContent(
                        call_id=event.call_id, name=event.name, arguments=event.arguments
                    )
                    if event.cut_off:
                        reply.cut_off.add(event.call_id)
                elif isinstance(event, UsageReport):
                    reply.usage = Usage(
                        input=event.input,
                        output=event.output,
                        cache_read=event.cache_read,
                        reasoning=event.reasoning,
                        cache_write=event.cache_write,
                    )
                elif isinstance(event, Finish):
                    reply.finish = event
        except asyncio.CancelledError:
            # Keep what was visible for the interrupted assistant message.
            reply.content = _visible(order, kinds, blocks)
            raise
        self._partial = None
        for index in order:
            kind = kinds[index]
            if kind == "tool-call":
                if index in calls:
                    reply.content.append(calls[index])
            elif kind == "reasoning":
                reply.content.append(ReasoningContent(text="".join(blocks[index])))
            else:
                reply.content.append(TextContent(text="".join(blocks[index])))
        return reply

    def _with_unique_call_id(
        self, end: BlockEnd, this_reply: Iterable[ToolCallContent]
    ) -> BlockEnd:
        """Call ids are unique in the session (docs/architecture.md §4). A provider that repeats one, in one
        reply or across steps (gateways that number every reply's calls from `call_0`), gets a
        fresh id here, before the call is shown or logged: the log, the screen and every later
        request then carry the same id, each answered once."""
        taken = {call.call_id for call in this_reply}
        call_id = end.call_id
        while call_id is None or call_id in taken or self.session.invariants.call_id_taken(call_id):
            call_id = _new_id("call")
        return end if call_id == end.call_id else replace(end, call_id=call_id)

    def _client(self) -> ModelClient:
        client = self._clients.get(self.route.id)
        if client is None:
            client = self._clients[self.route.id] = self._connect(self.route)
        return client

    def _append_assistant(self, turn: int, step: int, reply: _Reply) -> None:
        has_calls = any(isinstance(part, ToolCallContent) for part in reply.content)
        reason = reply.finish.reason if reply.finish else "stop"
        # A cut reply says so even when it has calls: the turn ends there, whatever ran.
        finish = "max-tokens" if reason == "max-tokens" else ("tool-calls" if has_calls else "stop")
        self._append(
            "assistant/message",
            AssistantMessageData(
                turn=turn,
                step=step,
                route=self.route.id,
                model=self.route.model,
                content=tuple(reply.content),
                usage=reply.usage,
                finish=finish,
            ),
        )
        if (
            self._compaction.auto
            and reply.usage is not None
            and reply.usage.input >= self._compaction.share * self.route.context_window
        ):
            self._compact_before_next_request = True

    # --- headers and developer messages ------------------------------------------------------------

    def _sync_header(self) -> RequestHeaderData:
        view = self.session.view()
        previous = view.current_header
        if self._headers_this_run == 0 and previous is None:
            reason = "initial"
        elif self._headers_this_run == 0:
            reason = "resume"
        else:
            reason = "change"
        candidate = RequestHeaderData(
            reason=reason,
            sequence=self._sequence,
            route=self.route.id,
            model=self.route.model,
            system=self.system,
            tools=self.tools.definitions(),
            config=self.config,
        )
        if previous is not None and not needs_new_header(previous, candidate):
            return previous
        header_event = self._append("request/header", candidate)
        self._headers_this_run += 1
        update = tool_registry_message(previous, candidate, header_event.seq, _new_id("d"))
        if update is not None:
            self._append("developer/message", update)
        instructions = instructions_message(previous, candidate, header_event.seq, _new_id("d"))
        if instructions is not None:
            self._append("developer/message", instructions)
        return candidate

    # --- tools -------------------------------------------------------------------------------------

    async def _run_tools(
        self, turn: int, step: int, calls: list[ToolCallContent], *, cut_off: Container[str] = ()
    ) -> None:
        """Run calls in model order; consecutive read-only calls run together. A call in `cut_off`
        is logged and answered with `ARGUMENTS_CUT_OFF`, never run."""
        self._unanswered = list(calls)
        self._started = set()
        for batch in _batches(calls, self.tools.is_read_only):
            for call in batch:
                self._append_call(turn, step, call)
            outcomes = await asyncio.gather(
                *(
                    _answer_cut_off()
                    if call.call_id in cut_off
                    else self.tools.execute(
                        call.name, call.arguments, ToolContext(self.approver, call.call_id)
                    )
                    for call in batch
                )
            )
            for call, outcome in zip(batch, outcomes):
                self._append_result(turn, step, call, outcome)

    def _append_call(self, turn: int, step: int, call: ToolCallContent) -> None:
        """Committed before the tool runs, so a crash can tell 'not started' from 'unknown'."""
        self._append(
            "tool/call",
            ToolCallData(
                turn=turn, step=step, call_id=call.call_id, name=call.name, arguments=call.arguments
            ),
        )
        self._started.add(call.call_id)

    def _append_result(self, turn: int, step: int, call: ToolCallContent, outcome: ToolOutcome) -> None:
        error = (
            ToolError(code=outcome.error_code, message=outcome.error_message or "")
            if outcome.error_code
            else None
        )
        self._append(
            "tool/result",
            ToolResultData(
                turn=turn,
                step=step,
                call_id=call.call_id,
                name=call.name,
                content=outcome.content,
                is_error=outcome.is_error,
                error=error,
            ),
        )
        self._unanswered = [c for c in self._unanswered if c.call_id != call.call_id]

    # --- endings -----------------------------------------------------------------------------------

    def _end_turn(
        self, turn: int, reason: str, *, text: str = "", failure: Failure | None = None
    ) -> TurnResult:
        self._append("turn/end", TurnEndData(turn=turn, reason=reason))
        return TurnResult(reason=reason, text=text, failure=failure)

    def _close_cancelled_turn(self, turn: int) -> None:
        """Leave the log closed after a cancel: the visible text, answered calls, the closers."""
        step = self.session.view().open_step
        partial, self._partial = self._partial, None
        if step is not None:
            if partial is not None and partial.content:
                self._append(
                    "assistant/message",
                    AssistantMessageData(
                        turn=turn,
                        step=step.number,
                        route=self.route.id,
                        model=self.route.model,
                        content=tuple(partial.content),
                        finish="aborted",
                        interrupted=True,
                    ),
                )
            for call in list(self._unanswered):
                # Every call of the reply gets an answer, or no provider would accept the history.
                if call.call_id in self._started:
                    outcome = _interrupted(INTERRUPTED_RUNNING)
                else:
                    self._append_call(turn, step.number, call)
                    outcome = _interrupted(INTERRUPTED_NOT_STARTED, TOOL_NOT_STARTED)
                self._append_result(turn, step.number, call, outcome)
            self._append("step/end", StepData(turn=turn, step=step.number))
        self._append("turn/end", TurnEndData(turn=turn, reason="aborted"))

    # --- plumbing ----------------------------------------------------------------------------------

    def _append(self, type_: str, data: Any) -> Envelope:
        event = self.writer.append(type_, data)
        self.listener.event_appended(event)
        return event

    def _next_turn_number(self) -> int:
        turns = self.session.view().turns
        return turns[-1].number + 1 if turns else 1


def _batches(
    calls: list[ToolCallContent], is_read_only: Callable[[str], bool]
) -> list[list[ToolCallContent]]:
    batches: list[list[ToolCallContent]] = []
    for call in calls:
        if batches and is_read_only(call.name) and all(is_read_only(c.name) for c in batches[-1]):
            batches[-1].append(call)
        else:
            batches.append([call])
    return batches


async def _answer_cut_off() -> ToolOutcome:
    return ToolOutcome(
        content=CUT_OFF_RESULT, is_error=True, error_code=ARGUMENTS_CUT_OFF, error_message=CUT_OFF_RESULT
    )


def _interrupted(message: str, code: str = ABORTED) -> ToolOutcome:
    return ToolOutcome(content=message, is_error=True, error_code=code, error_message=message)


def _failure_of(reply: _Reply) -> Failure | None:
    finish = reply.finish
    if finish is None:
        return Failure(code="STREAM_CLOSED", message=_("The reply was cut off before the provider finished it."))
    if finish.reason == "error":
        return finish.failure
    return None


def _visible(order: list[int], kinds: dict[int, str], blocks: dict[int, list[str]]) -> list[Content]:
    content: list[Content] = []
    for index in order:
        if kinds[index] == "text":
            content.append(TextContent(text="".join(blocks[index])))
        elif kinds[index] == "reasoning":
            content.append(ReasoningContent(text="".join(blocks[index])))
    return content


def _text_of(content: list[Content]) -> str:
    return "".join(part.text for part in content if isinstance(part, TextContent))


def _new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"

"""An imperative session-log builder for tests: it follows the loop's header rules (docs/architecture.md §7)
through the real functions of `app.session.headers`, so logs it builds are valid by construction."""

from __future__ import annotations

from typing import Any

from app.session.events import (
    AssistantMessageData,
    CompactionSummaryData,
    Envelope,
    Failure,
    ParentRef,
    RequestErrorData,
    RequestHeaderData,
    RetryData,
    SessionHeader,
    StepData,
    TextContent,
    ToolCallContent,
    ToolCallData,
    ToolDefinition,
    ToolResultData,
    TurnEndData,
    TurnStartData,
    UserMessageData,
    make_event,
)
from app.session.headers import instructions_message, needs_new_header, tool_registry_message


def tool(name: str, description: str | None = None, *, defer: bool = False, **params: Any) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=description if description is not None else f"The {name} tool.",
        parameters={"type": "object", "properties": params},
        defer_loading=True if defer else None,
    )


class LogBuilder:
    def __init__(self, session_id: str = "test", *, parent: ParentRef | None = None) -> None:
        self.header = SessionHeader(
            version=1, id=session_id, created_at=1_700_000_000_000, cwd="/tmp", parent=parent
        )
        self.events: list[Envelope] = []
        self.next_seq = parent.seq + 1 if parent else 0
        self.turn_number = 0
        self.step_number = 0
        self.sequence = 0
        self.last_header: RequestHeaderData | None = None
        self._ids = 0
        self._waited_ms = 0

    def emit(self, type_: str, data: Any) -> Envelope:
        """An event 1 ms after the one before (plus any `wait`)."""
        event = make_event(type_, self.next_seq, 1_700_000_000_000 + self.next_seq + self._waited_ms, data)
        self.events.append(event)
        self.next_seq += 1
        return event

    def _id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}{self._ids}"

    def wait(self, seconds: float) -> None:
        """The next event comes `seconds` later than it would."""
        self._waited_ms += round(seconds * 1000)

    # --- structure --------------------------------------------------------------------------------

    def start_turn(self, text: str = "hello") -> None:
        self.turn_number += 1
        self.step_number = 0
        self.emit("turn/start", TurnStartData(turn=self.turn_number))
        self.emit("user/message", UserMessageData(id=self._id("u"), text=text))

    def start_step(self) -> None:
        self.step_number += 1
        self.emit("step/start", StepData(turn=self.turn_number, step=self.step_number))

    def end_step(self) -> None:
        self.emit("step/end", StepData(turn=self.turn_number, step=self.step_number))

    def end_turn(self, reason: str = "completed") -> None:
        self.emit("turn/end", TurnEndData(turn=self.turn_number, reason=reason))

    # --- the loop's header rules ---------------------------------------------------------------------

    def header_for(
        self,
        tools: list[ToolDefinition],
        *,
        system: str = "You are helpful.",
        route: str = "offline/demo",
        model: str = "demo",
        new_sequence: bool = False,
    ) -> list[Envelope]:
        """Append the header (if changed) and the developer messages it implies."""
        if new_sequence:
            self.sequence += 1
        candidate = RequestHeaderData(
            reason="initial" if self.last_header is None else "change",
            sequence=self.sequence,
            route=route,
            model=model,
            system=system,
            tools=tuple(tools),
            config={"temperature": 0},
        )
        if not needs_new_header(self.last_header, candidate):
            return []
        previous = self.last_header
        header = self.emit("request/header", candidate)
        appended = [header]
        update = tool_registry_message(previous, candidate, header.seq, self._id("d"))
        if update is not None:
            appended.append(self.emit("developer/message", update))
        text = instructions_message(previous, candidate, header.seq, self._id("d"))
        if text is not None:
            appended.append(self.emit("developer/message", text))
        self.last_header = candidate
        return appended

    def assistant(
        self, text: str = "ok", calls: list[tuple[str, str, str]] = (), finish: str | None = None
    ) -> Envelope:
        content: list[Any] = [TextContent(text=text)] if text else []
        content += [ToolCallContent(call_id=c, name=n, arguments=a) for c, n, a in calls]
        return self.emit(
            "assistant/message",
            AssistantMessageData(
                turn=self.turn_number,
                step=self.step_number,
                route=self.last_header.route if self.last_header else "offline/demo",
                model="demo",
                content=tuple(content),
                finish=finish or ("tool-calls" if calls else "stop"),
            ),
        )

    def tool_round(self, call_id: str, name: str, result: str = "done", arguments: str = "{}") -> None:
        self.emit(
            "tool/call",
            ToolCallData(
                turn=self.turn_number, step=self.step_number, call_id=call_id, name=name, arguments=arguments
            ),
        )
        self.emit(
            "tool/result",
            ToolResultData(
                turn=self.turn_number,
                step=self.step_number,
                call_id=call_id,
                name=name,
                content=result,
                is_error=False,
            ),
        )

    def request_error(self, code: str = "SERVER") -> Envelope:
        return self.emit(
            "agent/request-error",
            RequestErrorData(
                turn=self.turn_number,
                step=self.step_number,
                route=self.last_header.route if self.last_header else "offline/demo",
                failure=Failure(code=code, message="boom"),
            ),
        )

    def retry(self, n: int = 1) -> Envelope:
        return self.emit(
            "llm/retry",
            RetryData(
                turn=self.turn_number,
                step=self.step_number,
                retry=n,
                max_retries=5,
                delay_ms=500,
                failure=Failure(code="SERVER", message="boom"),
            ),
        )

    def compaction(self, summary: str = "summary") -> Envelope:
        return self.emit(
            "compaction/summary",
            CompactionSummaryData(
                summary=summary, up_to_seq=self.next_seq - 1, sequence=self.sequence + 1
            ),
        )

    # --- whole turns ---------------------------------------------------------------------------------

    def simple_turn(self, tools: list[ToolDefinition], text: str = "hi", **header: Any) -> None:
        """A turn of one step: header, request, answer."""
        self.start_turn(text)
        self.start_step()
        self.header_for(tools, **header)
        self.assistant(f"answer to {text}")
        self.end_step()
        self.end_turn()

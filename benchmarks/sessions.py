"""Realistic long session logs for the benchmarks (issue 11).

A generated session reads like a long agent run: turns of a user message and one to four steps,
reasoning, text and tool calls with their results (some failing), failed requests followed by an
`llm/retry`, a tool change (header + developer message, by the loop's own rules in
`app.session.headers`) every few dozen turns, a route switch now and then, and an automatic
compaction (summary + new sequence) every couple of hundred turns, so the message window of a late
request is what a real long session's would be. Lines are written in batches: memory stays flat
however many events are asked for.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from app.session.events import (
    AssistantMessageData,
    CompactionSummaryData,
    Failure,
    ReasoningContent,
    RequestErrorData,
    RequestHeaderData,
    RetryData,
    SessionHeader,
    StepData,
    TextContent,
    ToolCallContent,
    ToolCallData,
    ToolDefinition,
    ToolError,
    ToolResultData,
    TurnEndData,
    TurnStartData,
    Usage,
    UserMessageData,
    encode_event,
    encode_header,
    make_event,
)
from app.session.headers import needs_new_header, tool_registry_message

WORDS = (
    "tool history projection route header sequence prefix cache declaration addition removal "
    "session reducer stream translator model request terminal chat inspector trajectory"
).split()
ROUTES = ("deepseek/deepseek-flash", "anthropic/claude-sonnet")
SYSTEM = "You are a careful assistant."
BATCH = 4096  # lines per write


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _tool(number: int) -> ToolDefinition:
    return ToolDefinition(
        name=f"tool_{number}",
        description=f"Tool number {number} does useful work on files.",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["path"],
        },
    )


class _Writer:
    """Assigns seq and time and writes lines in batches."""

    def __init__(self, path: Path, header: SessionHeader) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self.handle = os.fdopen(fd, "wb")
        self.lines: list[bytes] = [encode_header(header)]
        self.seq = 0

    def emit(self, type_: str, data) -> int:  # type: ignore[no-untyped-def]
        self.lines.append(encode_event(make_event(type_, self.seq, 1_700_000_000_000 + self.seq, data)))
        self.seq += 1
        if len(self.lines) >= BATCH:
            self.flush()
        return self.seq - 1

    def flush(self) -> None:
        self.handle.write(b"".join(self.lines))
        self.lines = []

    def close(self) -> None:
        self.flush()
        self.handle.close()


def write_large_session(
    path: Path, events: int = 100_000, seed: int = 7, *, compaction_every: int = 200
) -> int:
    """Write a session of about `events` events to `path` (its id is the file's stem); return how
    many were written. A compaction comes every `compaction_every` turns (± a quarter)."""
    rng = random.Random(seed)
    out = _Writer(
        path, SessionHeader(version=1, id=path.stem, created_at=1_700_000_000_000, cwd="/work", parent=None)
    )
    registry = list(range(10))  # tool numbers, in registry order
    next_tool = 10
    route = ROUTES[0]
    sequence = 0
    previous: RequestHeaderData | None = None
    turn = 0
    next_compaction = compaction_every
    calls = 0

    def sync_header(reason_changed: bool) -> None:
        nonlocal previous
        header = RequestHeaderData(
            reason="initial" if previous is None else ("change" if reason_changed else "resume"),
            sequence=sequence,
            route=route,
            model=route.split("/")[1],
            system=SYSTEM,
            tools=tuple(_tool(number) for number in registry),
            config={"temperature": 0.2},
        )
        if not needs_new_header(previous, header):
            return
        header_seq = out.emit("request/header", header)
        update = tool_registry_message(previous, header, header_seq, f"d{header_seq}")
        if update is not None:
            out.emit("developer/message", update)
        previous = header

    while out.seq < events:
        turn += 1
        out.emit("turn/start", TurnStartData(turn=turn))
        out.emit("user/message", UserMessageData(id=f"u{turn}", text=_text(rng, rng.randint(8, 60))))
        if turn % 40 == 0:  # a plugin toggled or an MCP server's tools/list_changed
            if len(registry) > 6 and rng.random() < 0.5:
                registry.pop(rng.randrange(len(registry)))
            else:
                registry.append(next_tool)
                next_tool += 1
        if turn % 97 == 0:
            route = ROUTES[(ROUTES.index(route) + 1) % len(ROUTES)]
        steps = rng.choice((1, 2, 2, 3, 4))
        for step in range(1, steps + 1):
            out.emit("step/start", StepData(turn=turn, step=step))
            if step == 1 and turn >= next_compaction:
                # Automatic compaction before the request: a summary, then a new sequence.
                sequence += 1
                out.emit(
                    "compaction/summary",
                    CompactionSummaryData(summary=_text(rng, 300), up_to_seq=out.seq - 1, sequence=sequence),
                )
                next_compaction = turn + rng.randint(compaction_every * 3 // 4, compaction_every * 5 // 4)
            sync_header(reason_changed=True)
            if rng.random() < 0.04:
                failure = Failure(code="RATE_LIMITED", message="429 Too Many Requests", status=429, retry_after_ms=2000)
                out.emit("agent/request-error", RequestErrorData(turn=turn, step=step, route=route, failure=failure))
                out.emit(
                    "llm/retry",
                    RetryData(turn=turn, step=step, retry=1, max_retries=4, delay_ms=2000, failure=failure),
                )
            last = step == steps
            content: list = [ReasoningContent(text=_text(rng, rng.randint(20, 160)))]
            content.append(TextContent(text=_text(rng, rng.randint(20, 150 if last else 40))))
            step_calls: list[ToolCallContent] = []
            if not last:
                for _ in range(rng.choice((1, 1, 1, 2))):
                    calls += 1
                    name = f"tool_{rng.choice(registry)}"
                    step_calls.append(
                        ToolCallContent(call_id=f"call_{calls}", name=name, arguments='{"path": "README.md"}')
                    )
            content.extend(step_calls)
            out.emit(
                "assistant/message",
                AssistantMessageData(
                    turn=turn, step=step, route=route, model=route.split("/")[1], content=tuple(content),
                    usage=Usage(input=1200 + 40 * turn % 90_000, output=300, cache_read=1000, reasoning=120),
                    finish="tool-calls" if step_calls else "stop",
                ),
            )
            for call in step_calls:
                out.emit(
                    "tool/call",
                    ToolCallData(turn=turn, step=step, call_id=call.call_id, name=call.name, arguments=call.arguments),
                )
            for call in step_calls:
                failed = rng.random() < 0.08
                out.emit(
                    "tool/result",
                    ToolResultData(
                        turn=turn, step=step, call_id=call.call_id, name=call.name,
                        content="No such file: README.md" if failed else _text(rng, rng.randint(40, 400)),
                        is_error=failed,
                        error=ToolError(code="ENOENT", message="No such file: README.md") if failed else None,
                    ),
                )
            out.emit("step/end", StepData(turn=turn, step=step))
        out.emit("turn/end", TurnEndData(turn=turn, reason="completed"))
    out.close()
    return out.seq

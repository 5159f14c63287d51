"""A realistic large session log for the benchmarks: turns with reasoning, text, tool calls and
results, and a tool change (header + developer message) every few dozen turns."""

from __future__ import annotations

import os
import random
from pathlib import Path

from app.session.events import (
    AssistantMessageData,
    ReasoningContent,
    RequestHeaderData,
    SessionHeader,
    StepData,
    TextContent,
    ToolCallContent,
    ToolCallData,
    ToolDefinition,
    ToolResultData,
    TurnEndData,
    TurnStartData,
    Usage,
    UserMessageData,
    encode_event,
    encode_header,
    make_event,
)
from app.session.headers import tool_registry_message

WORDS = (
    "tool history projection route header sequence prefix cache declaration addition removal "
    "session reducer stream translator model request terminal chat inspector trajectory"
).split()


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def _tools(count: int, generation: int) -> tuple[ToolDefinition, ...]:
    return tuple(
        ToolDefinition(
            name=f"tool_{(generation + i) % (count + 3)}",
            description=f"Tool number {(generation + i) % (count + 3)} does useful work on files.",
            parameters={
                "type": "object",
                "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["path"],
            },
        )
        for i in range(count)
    )


def write_large_session(path: Path, events: int = 100_000, seed: int = 7) -> int:
    """Write a session of about `events` events to `path`; return the number written."""
    rng = random.Random(seed)
    lines: list[bytes] = [
        encode_header(
            SessionHeader(version=1, id=path.stem, created_at=1_700_000_000_000, cwd="/work", parent=None)
        )
    ]
    seq = 0
    previous: RequestHeaderData | None = None
    turn = 0

    def emit(type_: str, data) -> int:  # type: ignore[no-untyped-def]
        nonlocal seq
        lines.append(encode_event(make_event(type_, seq, 1_700_000_000_000 + seq, data)))
        seq += 1
        return seq - 1

    while seq < events:
        turn += 1
        emit("turn/start", TurnStartData(turn=turn))
        emit("user/message", UserMessageData(id=f"u{turn}", text=_text(rng, 50)))
        emit("step/start", StepData(turn=turn, step=1))
        if previous is None or turn % 40 == 0:
            header = RequestHeaderData(
                reason="initial" if previous is None else "change",
                sequence=0,
                route="deepseek/deepseek-flash",
                model="deepseek-chat",
                system="You are a careful assistant.",
                tools=_tools(10, turn // 40),
                config={"temperature": 0.2},
            )
            header_seq = emit("request/header", header)
            update = tool_registry_message(previous, header, header_seq, f"d{turn}")
            if update is not None:
                emit("developer/message", update)
            previous = header
        call = f"call_{turn}"
        emit(
            "assistant/message",
            AssistantMessageData(
                turn=turn, step=1, route="deepseek/deepseek-flash", model="deepseek-chat",
                content=(
                    ReasoningContent(text=_text(rng, 160)),
                    TextContent(text=_text(rng, 80)),
                    ToolCallContent(call_id=call, name=previous.tools[0].name, arguments='{"path": "README.md"}'),
                ),
                usage=Usage(input=1200, output=300, cache_read=1000, reasoning=120),
                finish="tool-calls",
            ),
        )
        emit("tool/call", ToolCallData(turn=turn, step=1, call_id=call, name=previous.tools[0].name, arguments='{"path": "README.md"}'))
        emit("tool/result", ToolResultData(turn=turn, step=1, call_id=call, name=previous.tools[0].name, content=_text(rng, 270), is_error=False))
        emit("step/end", StepData(turn=turn, step=1))
        emit("step/start", StepData(turn=turn, step=2))
        emit(
            "assistant/message",
            AssistantMessageData(
                turn=turn, step=2, route="deepseek/deepseek-flash", model="deepseek-chat",
                content=(TextContent(text=_text(rng, 150)),),
                usage=Usage(input=1500, output=200, cache_read=1400, reasoning=0),
                finish="stop",
            ),
        )
        emit("step/end", StepData(turn=turn, step=2))
        emit("turn/end", TurnEndData(turn=turn, reason="completed"))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(b"".join(lines))
    return seq

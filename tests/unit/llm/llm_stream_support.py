"""Helpers for the translator tests: build DeepSeek chunks, run a translator, assemble its events."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from app.llm.deepseek.translator import DeepSeekTranslator
from app.llm.stream import BlockDelta, BlockEnd, BlockStart, Finish, StreamEvent, UsageReport, check_stream


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> str:
    """One DeepSeek `data:` payload with a single choice."""
    return json.dumps({"choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}], **extra})


def call(index: int, id: Any = None, name: Any = None, arguments: Any = None, **omit: bool) -> str:
    """A chunk carrying one tool-call fragment; pass `id=...` etc. to send the member (even `None`),
    leave it out to omit it. Keyword `bare=True` sends no `function` object at all."""
    fragment: dict[str, Any] = {"index": index}
    if id is not None or omit.get("null_id"):
        fragment["id"] = id
    if not omit.get("bare"):
        function: dict[str, Any] = {}
        if name is not None or omit.get("null_name"):
            function["name"] = name
        if arguments is not None or omit.get("null_arguments"):
            function["arguments"] = arguments
        fragment["function"] = function
    return chunk({"tool_calls": [fragment]})


def usage_chunk(**usage: Any) -> str:
    return json.dumps({"choices": [], "usage": usage})


def translate(payloads: list[str], *, eof: bool = True) -> list[StreamEvent]:
    translator = DeepSeekTranslator()
    events: list[StreamEvent] = []
    for payload in payloads:
        events += translator.feed(payload)
    if eof:
        events += translator.end_of_stream()
    return events


@dataclass
class Assembled:
    """What a consumer builds from a checked event stream."""

    text: str = ""
    reasoning: str = ""
    calls: list[tuple[str, str, str]] = field(default_factory=list)
    usage: UsageReport | None = None
    finish: Finish | None = None
    starts: list[BlockStart] = field(default_factory=list)
    ends: list[BlockEnd] = field(default_factory=list)

    @property
    def code(self) -> str | None:
        return self.finish.failure.code if self.finish and self.finish.failure else None


def assemble(events: list[StreamEvent]) -> Assembled:
    check_stream(events)
    out = Assembled()
    kinds: dict[int, str] = {}
    for event in events:
        if isinstance(event, BlockStart):
            kinds[event.index] = event.kind
            out.starts.append(event)
        elif isinstance(event, BlockDelta):
            if kinds[event.index] == "text":
                out.text += event.text
            elif kinds[event.index] == "reasoning":
                out.reasoning += event.text
        elif isinstance(event, BlockEnd):
            out.ends.append(event)
            if kinds[event.index] == "tool-call":
                assert event.call_id and event.name and event.arguments is not None
                out.calls.append((event.call_id, event.name, event.arguments))
        elif isinstance(event, UsageReport):
            out.usage = event
        elif isinstance(event, Finish):
            out.finish = event
    return out

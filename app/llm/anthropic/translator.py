"""Anthropic Messages SSE events → stream events (docs/architecture.md §9), with the DeepSeek translator's rules.

Pure and incremental: `feed(event, data)` per SSE event, `end_of_stream` at EOF. Events are told
apart by the payload's `type` (the SSE `event:` name when it has none):
- `message_start` and `message_delta` carry usage (the later counts win); `message_delta` the
  `stop_reason`: `max_tokens` and `model_context_window_exceeded` end as `max-tokens`, anything else
  as `stop` or `tool-calls` by what was produced (`StreamTranslator._complete`).
- `content_block_start` opens `text` and `thinking` lazily (an empty block opens nothing) and
  `tool_use` at once, with its `id` and `name` taken only when non-empty strings; other block types
  are skipped with their deltas: `redacted_thinking` (encrypted, nothing to show, and the history
  sends no thinking back) and server tools (`server_tool_use`, `*_tool_result`: the provider ran
  them, so the loop must not, and their results reach the user through the text that follows).
- `content_block_delta`: `text_delta`, `thinking_delta`, `input_json_delta` (arguments concatenate);
  `signature_delta`, `citations_delta` and unknown kinds are ignored.
- `content_block_stop` closes the block; a tool call without `id` or `name` stays open, and
  `message_stop` then ends in `MALFORMED_TOOL_CALL` (held usage first, no block-end). A call
  still open at a `max_tokens` stop was cut mid-JSON: it is closed `cut_off`.
- `error` ends with its mapped failure; `ping` and unknown events are ignored; EOF before
  `message_stop` is `STREAM_CLOSED`; bad JSON or mis-shaped members are `MALFORMED_RESPONSE`.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from app.i18n import _
from app.llm.errors import MALFORMED_RESPONSE, Failure
from app.llm.provider_errors import failure_from_error_payload
from app.llm.stream import BlockKind, OpenToolCall, StreamEvent, StreamTranslator, UsageReport, identity

_TRUNCATING_STOP_REASONS = frozenset({"max_tokens", "model_context_window_exceeded"})
_FLOW_KINDS: dict[str, tuple[BlockKind, str, str]] = {
    "text": ("text", "text_delta", "text"),
    "thinking": ("reasoning", "thinking_delta", "thinking"),
}
_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


class _Malformed(Exception):
    """A payload member of the wrong shape; `args[0]` names it."""


class _Flow:
    """A text or thinking content block; it becomes a stream block at its first non-empty text."""

    __slots__ = ("kind", "delta_type", "field", "index")

    def __init__(self, kind: BlockKind, delta_type: str, field: str) -> None:
        self.kind = kind
        self.delta_type = delta_type
        self.field = field
        self.index = -1


class _Skipped:
    """A content block of a type this client does not show; its deltas are dropped."""


class AnthropicTranslator(StreamTranslator):
    __slots__ = ("_blocks", "_usage_counts", "_stop_reason", "_handlers")

    def __init__(self) -> None:
        super().__init__()
        self._blocks: dict[int, _Flow | OpenToolCall | _Skipped] = {}
        self._usage_counts: dict[str, int] = {}
        self._stop_reason: str | None = None
        self._handlers: dict[str, Callable[[dict], list[StreamEvent]]] = {
            "message_start": self._message_start,
            "content_block_start": self._block_start,
            "content_block_delta": self._block_delta,
            "content_block_stop": self._block_stop,
            "message_delta": self._message_delta,
            "message_stop": self._message_stop,
            "error": self._error,
        }

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        if self.finished:
            return []
        try:
            payload = json.loads(data)
        except (ValueError, RecursionError):
            if not data.strip():
                return []
            return self.fail(_malformed(event or "data"))
        if type(payload) is not dict:
            return self.fail(_malformed(event or "data"))
        kind = payload.get("type")
        handler = self._handlers.get(kind if type(kind) is str else event)
        if handler is None:
            return []  # `ping`, and event types added after this was written
        try:
            return handler(payload)
        except _Malformed as problem:
            return self.fail(_malformed(problem.args[0]))

    def _message_start(self, payload: dict) -> list[StreamEvent]:
        message = _member(payload, "message", dict)
        if message is not None:
            self._take_usage(_member(message, "usage", dict))
        return []

    def _message_delta(self, payload: dict) -> list[StreamEvent]:
        delta = _member(payload, "delta", dict)
        if delta is not None:
            reason = delta.get("stop_reason")
            if type(reason) is str:
                self._stop_reason = reason
        self._take_usage(_member(payload, "usage", dict))
        return []

    def _take_usage(self, usage: dict | None) -> None:
        if usage is None:
            return
        for name in _USAGE_FIELDS:
            value = usage.get(name)
            if type(value) is int and value >= 0:
                self._usage_counts[name] = value
        counts = self._usage_counts
        cache_read = counts.get("cache_read_input_tokens", 0)
        cache_write = counts.get("cache_creation_input_tokens")
        self._usage = UsageReport(
            input=counts.get("input_tokens", 0) + cache_read + (cache_write or 0),
            output=counts.get("output_tokens", 0),
            cache_read=cache_read,
            reasoning=0,
            cache_write=cache_write,
        )

    def _block_start(self, payload: dict) -> list[StreamEvent]:
        wire_index = _block_index(payload)
        if wire_index in self._blocks:
            raise _Malformed("content_block_start.index")
        block = _member(payload, "content_block", dict) or {}
        block_type = block.get("type")
        events: list[StreamEvent] = []
        if type(block_type) is str and block_type in _FLOW_KINDS:
            flow = _Flow(*_FLOW_KINDS[block_type])
            self._blocks[wire_index] = flow
            self._flow_text(flow, block.get(flow.field), events)
        elif block_type == "tool_use":
            call_id, name = identity(block.get("id")), identity(block.get("name"))
            call = self._open_call(wire_index, call_id, name, events)
            start_input = block.get("input")
            if type(start_input) is dict and start_input:
                call.empty_arguments = json.dumps(start_input)
            else:
                call.empty_arguments = "{}"
            self._blocks[wire_index] = call
        else:
            self._blocks[wire_index] = _Skipped()
        return events

    def _block_delta(self, payload: dict) -> list[StreamEvent]:
        block = self._blocks.get(_block_index(payload))
        if block is None:
            raise _Malformed("content_block_delta.index")
        delta = _member(payload, "delta", dict) or {}
        delta_type = delta.get("type")
        events: list[StreamEvent] = []
        if isinstance(block, _Flow):
            if delta_type == block.delta_type:
                self._flow_text(block, delta.get(block.field), events)
            elif delta_type in ("text_delta", "thinking_delta", "input_json_delta"):
                raise _Malformed("content_block_delta.delta.type")
        elif isinstance(block, OpenToolCall):
            if delta_type == "input_json_delta":
                fragment = delta.get("partial_json")
                if fragment and type(fragment) is str:
                    self._delta(block.index, fragment, events, block.parts)
            elif delta_type in ("text_delta", "thinking_delta"):
                raise _Malformed("content_block_delta.delta.type")
        return events

    def _flow_text(self, flow: _Flow, text: object, events: list[StreamEvent]) -> None:
        if not text or type(text) is not str:
            return
        if flow.index < 0 or flow.index != self._flow_index:
            if flow.index >= 0:
                raise _Malformed("content_block_delta.index")  # a closed block cannot reopen
            flow.index = self._open_flow(flow.kind, events)
        self._delta(flow.index, text, events)

    def _block_stop(self, payload: dict) -> list[StreamEvent]:
        block = self._blocks.pop(_block_index(payload), None)
        if block is None:
            raise _Malformed("content_block_stop.index")
        events: list[StreamEvent] = []
        if isinstance(block, _Flow):
            if block.index >= 0 and block.index == self._flow_index:
                self._close_flow(events)
        elif isinstance(block, OpenToolCall):
            self._close_call(block, events)  # without identity it stays open for message_stop to reject
        return events

    def _message_stop(self, payload: dict) -> list[StreamEvent]:
        return self._complete(truncated=self._stop_reason in _TRUNCATING_STOP_REASONS)

    def _cut_off(self, call: OpenToolCall) -> bool:
        # Still open at a truncating stop: its `content_block_stop` never came, whatever its JSON.
        return True

    def _error(self, payload: dict) -> list[StreamEvent]:
        return self.fail(failure_from_error_payload(payload.get("error", payload)))


def _member(payload: dict, name: str, kind: type) -> dict | None:
    value = payload.get(name)
    if value is None:
        return None
    if type(value) is not kind:
        raise _Malformed(name)
    return value


def _block_index(payload: dict) -> int:
    index = payload.get("index")
    if type(index) is not int:
        raise _Malformed(f"{payload.get('type')}.index")
    return index


def _malformed(member: str) -> Failure:
    return Failure(
        code=MALFORMED_RESPONSE,
        message=_("The provider sent a malformed stream event ({member}).").format(member=member),
    )

"""DeepSeek chat-completions SSE payloads → stream events (docs/architecture.md §9, seed 004).

Pure and incremental: `feed` takes one `data:` payload (`[DONE]` included), `end_of_stream` the EOF.
It runs once per chunk of every response, so it reads the parsed JSON with plain dict access and
type checks instead of validating `wire.WireChunk` models (the tests prove the two agree).

Rules, beyond the shared ones in `StreamTranslator`:
- A tool call's `id` and `function.name` are identity: taken only when a non-empty string. `None`,
  `""` and non-strings keep the established value; identity is never concatenated. `arguments`
  concatenate. Calls are keyed by `index`, so parallel calls keep their own identity; a fragment
  without `index` (Mistral) is keyed by its position in the `tool_calls` array.
- Reasoning is `reasoning_content` (DeepSeek), else `reasoning` (Groq, OpenRouter, vLLM), else the
  text of `reasoning_details` (OpenRouter): one field per delta, as they repeat each other.
- Empty `content` / reasoning (and a first tool-call fragment with nothing usable) open nothing.
- The finish reason is held until `[DONE]`, because the usage chunk comes after it. After
  `length`, a call whose arguments are not a whole JSON object is closed `cut_off`.
- `[DONE]` with a call still missing `id` or `name` ends in `MALFORMED_TOOL_CALL` (held usage first,
  no block-end); EOF before `[DONE]` is `STREAM_CLOSED`; unparsable or mis-shaped chunks are
  `MALFORMED_RESPONSE`; an `error` member ends with its mapped failure.
"""

from __future__ import annotations

import json

from app.i18n import _
from app.llm.errors import MALFORMED_RESPONSE, SERVER, Failure
from app.llm.provider_errors import failure_from_error_payload
from app.llm.stream import OpenToolCall, StreamEvent, StreamTranslator, UsageReport, identity

_decode = json.JSONDecoder().decode


class _Malformed(Exception):
    """A chunk member of the wrong shape; `args[0]` names it."""


class DeepSeekTranslator(StreamTranslator):
    __slots__ = ("_calls_by_wire_index", "_finish_reason")

    def __init__(self) -> None:
        super().__init__()
        self._calls_by_wire_index: dict[int, OpenToolCall] = {}
        self._finish_reason: str | None = None

    def feed(self, data: str) -> list[StreamEvent]:
        if self.finished:
            return []
        if data == "[DONE]":
            return self._done()
        try:
            chunk = _decode(data)
        except (ValueError, RecursionError):
            stripped = data.strip()
            if stripped == "[DONE]":
                return self._done()
            if not stripped:
                return []  # an SSE event carrying only `id:` or `retry:`
            return self.fail(_malformed("data"))
        if type(chunk) is not dict:
            return self.fail(_malformed("data"))
        events: list[StreamEvent] = []
        try:
            choices = chunk.get("choices")
            if choices:
                if type(choices) is not list:
                    raise _Malformed("choices")
                for choice in choices:
                    self._feed_choice(choice, events)
            usage = chunk.get("usage")
            if usage is not None:
                if type(usage) is not dict:
                    raise _Malformed("usage")
                self._usage = _usage_report(usage)
        except _Malformed as problem:
            return events + self.fail(_malformed(problem.args[0]))
        error = chunk.get("error")
        if error is not None:
            return events + self.fail(failure_from_error_payload(error))
        return events

    def _feed_choice(self, choice: object, events: list[StreamEvent]) -> None:
        if type(choice) is not dict:
            raise _Malformed("choices[]")
        choice_index = choice.get("index")
        if choice_index is not None:
            if type(choice_index) is not int:
                raise _Malformed("choices[].index")
            if choice_index != 0:
                return  # only one choice is ever requested
        delta = choice.get("delta")
        if delta:
            if type(delta) is not dict:
                raise _Malformed("choices[].delta")
            text = _reasoning_of(delta)
            if text:
                if self._flow_kind != "reasoning":
                    self._open_flow("reasoning", events)
                self._delta(self._flow_index, text, events)
            text = delta.get("content")
            if text and type(text) is str:
                if self._flow_kind != "text":
                    self._open_flow("text", events)
                self._delta(self._flow_index, text, events)
            fragments = delta.get("tool_calls")
            if fragments is not None:
                if type(fragments) is not list:
                    raise _Malformed("choices[].delta.tool_calls")
                for position, fragment in enumerate(fragments):
                    self._feed_tool_call(position, fragment, events)
        reason = choice.get("finish_reason")
        if reason is not None and type(reason) is str:
            self._finish_reason = reason

    def _feed_tool_call(self, position: int, fragment: object, events: list[StreamEvent]) -> None:
        if type(fragment) is not dict:
            raise _Malformed("tool_calls[]")
        wire_index = fragment.get("index")
        if wire_index is None:
            wire_index = position  # Mistral's API sends no `index`: the array position is the call
        elif type(wire_index) is not int:
            raise _Malformed("tool_calls[].index")
        function = fragment.get("function")
        if function is None:
            name = arguments = None
        elif type(function) is dict:
            name = function.get("name")
            arguments = function.get("arguments")
        else:
            raise _Malformed("tool_calls[].function")
        call_id = identity(fragment.get("id"))
        name = identity(name)
        call = self._calls_by_wire_index.get(wire_index)
        if call is None:
            if call_id is None and name is None and not (arguments and type(arguments) is str):
                return
            call = self._open_call(wire_index, call_id, name, events)
            self._calls_by_wire_index[wire_index] = call
        else:
            if call_id is not None:
                call.call_id = call_id
            if name is not None:
                call.name = name
        if arguments and type(arguments) is str:
            self._delta(call.index, arguments, events, call.parts)

    def _done(self) -> list[StreamEvent]:
        if self._finish_reason == "insufficient_system_resource":
            message = _("The provider ran out of capacity and cut the response short.")
            return self.fail(Failure(code=SERVER, message=message))
        return self._complete(truncated=self._finish_reason == "length")


def _reasoning_of(delta: dict) -> str | None:
    """The delta's reasoning text, from the first field that carries some: DeepSeek's
    `reasoning_content`, then `reasoning` (Groq, OpenRouter, vLLM), then the text entries of
    OpenRouter's `reasoning_details`. One field only, because OpenRouter sends the same text in
    `reasoning` and `reasoning_details` (and some vLLM versions in both `reasoning*` fields)."""
    for name in ("reasoning_content", "reasoning"):
        text = delta.get(name)
        if text and type(text) is str:
            return text
    details = delta.get("reasoning_details")
    if type(details) is not list:
        return None
    texts = []
    for detail in details:
        if type(detail) is dict:
            kind = detail.get("type")
            text = detail.get("text" if kind == "reasoning.text" else "summary" if kind == "reasoning.summary" else "")
            if text and type(text) is str:
                texts.append(text)
    return "".join(texts)


def _malformed(member: str) -> Failure:
    return Failure(
        code=MALFORMED_RESPONSE,
        message=_("The provider sent a malformed stream chunk ({member}).").format(member=member),
    )


def _usage_report(usage: dict) -> UsageReport:
    cache_read = usage.get("prompt_cache_hit_tokens")
    if type(cache_read) is not int:
        details = usage.get("prompt_tokens_details")
        cache_read = details.get("cached_tokens") if type(details) is dict else None
    details = usage.get("completion_tokens_details")
    reasoning = details.get("reasoning_tokens") if type(details) is dict else None
    return UsageReport(
        _count(usage.get("prompt_tokens")),
        _count(usage.get("completion_tokens")),
        _count(cache_read),
        _count(reasoning),
    )


def _count(value: object) -> int:
    return value if type(value) is int and value >= 0 else 0

"""The `deepseek-chat` wire body (docs/architecture.md §8): one projected request → one chat-completions POST.

The same body is what the `offline` model reads (it speaks this wire) and, without update blocks or
`defer_loading` (its projection never has them), what the `openai-sdk` route's client sends.
Nothing here decides *what* a route receives — `app.llm.projection` does; this only renders it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from app.llm.projection import Declaration, ProjectedRequest, UpdateBlock
from app.llm.routes import ReasoningHistory
from app.llm.stream import is_json_object
from app.session.view_items import AssistantItem, Message, SummaryItem, ToolResultItem, UserItem

SUMMARY_PREFIX = "Summary of the earlier conversation (it was compacted):\n\n"
"""Put before a compaction summary sent as a user message. Fixed English on purpose: the model reads
it, and a localized prefix would make the same session render differently per UI language."""

THINKING_OFF = frozenset({"off", "none", "disabled"})
"""`reasoning_effort` values that turn thinking off instead of choosing its depth."""


@dataclass(frozen=True, slots=True)
class WireRequest:
    """A request body plus the extra HTTP headers it needs (only the tool-update beta, if any).

    `group_indexes[i]` is the index in `body["messages"]` of the system message that carries
    `projected.groups[i]`, so an inspector can point at it without re-deriving the layout.
    """

    body: dict[str, Any]
    headers: dict[str, str]
    group_indexes: tuple[int, ...]


def summary_text(item: SummaryItem) -> str:
    return SUMMARY_PREFIX + item.summary


def beta_headers(projected: ProjectedRequest) -> dict[str, str]:
    """The beta header travels only with update blocks: a request without them must not opt in."""
    if projected.beta is None or not projected.groups:
        return {}
    name, value = projected.beta
    return {name: value}


def assemble(
    projected: ProjectedRequest,
    messages: list[dict[str, Any]],
    append: Callable[[list[dict[str, Any]], Message], None],
) -> tuple[int, ...]:
    """Append the conversation to `messages` (each item through `append`), with every update group
    as one system message before its position; return each group's index, in `groups` order.

    The anthropic-messages wire renders update groups the same way, so it assembles through here.
    """
    groups = {group.position: group for group in projected.groups}
    placed: dict[int, int] = {}
    for position in range(len(projected.conversation) + 1):
        group = groups.get(position)
        if group is not None:
            placed[position] = len(messages)
            messages.append(
                {"role": "system", "content": [_block(block) for block in group.blocks]}
            )
        if position < len(projected.conversation):
            append(messages, projected.conversation[position])
    return tuple(placed[group.position] for group in projected.groups)


def _block(block: UpdateBlock) -> dict[str, Any]:
    if block.kind == "text":
        return {"type": "text", "text": block.text}
    return {"type": block.kind, "tool": {"type": "tool_reference", "name": block.name}}


def build_chat_request(
    projected: ProjectedRequest,
    *,
    model: str,
    config: Mapping[str, Any],
    reasoning_field: ReasoningHistory = "reasoning_content",
) -> WireRequest:
    """Render `projected` for `model` with the header's `config` (temperature, max_tokens,
    reasoning_effort; other keys are not request settings of this wire and are left out).
    Past reasoning goes back in `reasoning_field` (the route's `reasoning_history`)."""
    messages: list[dict[str, Any]] = []
    if projected.system:
        messages.append({"role": "system", "content": projected.system})

    def append(messages: list[dict[str, Any]], item: Message) -> None:
        messages.append(_message(item, reasoning_field))

    group_indexes = assemble(projected, messages, append)

    body: dict[str, Any] = {"model": model, "messages": messages}
    if projected.declarations:
        body["tools"] = [_tool(declaration) for declaration in projected.declarations]
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    body.update(_settings(config))
    return WireRequest(body, beta_headers(projected), group_indexes)


def _tool(declaration: Declaration) -> dict[str, Any]:
    tool = declaration.tool
    wire: dict[str, Any] = {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }
    if declaration.defer_loading:
        wire["defer_loading"] = True
    return wire


def _message(item: Message, reasoning_field: ReasoningHistory) -> dict[str, Any]:
    if isinstance(item, UserItem):
        return {"role": "user", "content": item.text}
    if isinstance(item, SummaryItem):
        return {"role": "user", "content": summary_text(item)}
    if isinstance(item, ToolResultItem):
        return {"role": "tool", "tool_call_id": item.call_id, "content": item.content}
    if isinstance(item, AssistantItem):
        return _assistant(item, reasoning_field)
    # A developer message reaches the wire only as an update group, never as a message.
    raise TypeError(f"not a conversation message: {item!r}")


def _assistant(item: AssistantItem, reasoning_field: ReasoningHistory) -> dict[str, Any]:
    # `content` is a string even on tool-call turns: DeepSeek's history check rejects null there.
    wire: dict[str, Any] = {"role": "assistant", "content": item.text}
    if item.reasoning and reasoning_field != "none":
        # DeepSeek's thinking-mode tool loops must pass reasoning back, or the API answers 400.
        wire[reasoning_field] = item.reasoning
    if item.tool_calls:
        wire["tool_calls"] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": _wire_arguments(call.arguments)},
            }
            for call in item.tool_calls
        ]
    return wire


def _wire_arguments(arguments: str) -> str:
    """A call's arguments as the history sends them: verbatim when a JSON object, else `{}`.

    Arguments the output limit cut off (or that a model wrote broken) are kept in the log, and the
    call's error result says what happened; servers that parse the history (vLLM's chat templates
    do) would refuse the whole request over them. The anthropic-messages body does the same."""
    return arguments if is_json_object(arguments) else "{}"


def _settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """DeepSeek's controls: `thinking` toggles reasoning, `reasoning_effort` sets its depth (the API
    maps minimal/low → low, medium/high/xhigh → high, max/ultra → max itself)."""
    settings: dict[str, Any] = {}
    if "temperature" in config:
        settings["temperature"] = config["temperature"]
    if "max_tokens" in config:
        settings["max_tokens"] = config["max_tokens"]
    effort = config.get("reasoning_effort")
    if effort is not None:
        if str(effort).lower() in THINKING_OFF:
            settings["thinking"] = {"type": "disabled"}
        else:
            settings["thinking"] = {"type": "enabled"}
            settings["reasoning_effort"] = effort
    return settings

"""The `anthropic-messages` wire body (docs/architecture.md §8): one projected request → one `/v1/messages` body.

Update groups become `role: "system"` messages between turns. The API accepts them only at certain
places, so the finished body is checked here: a body that breaks a rule is a projection bug and is
never sent (`WirePlacementError`).

Two things of the session history do not reach this wire:
- reasoning: the API accepts a past `thinking` block only with the signature it issued, and the
  session log keeps reasoning text without one, so history assistant turns carry text and
  `tool_use` only;
- a `tool_use` whose recorded arguments are not a JSON object (invalid or truncated JSON, or
  nested deeper than `app.untrusted_json.MAX_DEPTH`): the API needs an object as `input`, so it
  gets `{}`; the raw text stays in the session log. The tool never ran on such arguments (the
  registry refuses them the same way), and its error result says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.llm.deepseek.body import (
    THINKING_OFF,
    WireRequest,
    assemble,
    beta_headers,
    summary_text,
)
from app.llm.projection import Declaration, ProjectedRequest
from app.llm.routes import CacheWrite
from app.session.view_items import AssistantItem, Message, SummaryItem, ToolResultItem, UserItem
from app.untrusted_json import loads

DEFAULT_MAX_TOKENS = 32_000
"""`max_tokens` when neither the header's config nor the caller gives one."""

EFFORT_ALIASES = {"minimal": "low", "ultra": "max"}
"""Effort names other wires use, mapped onto the ones `output_config.effort` accepts."""


class WirePlacementError(Exception):
    """A system message at a place the API refuses. A bug in projection or rendering, never sent."""

    def __init__(self, index: int, rule: str) -> None:
        self.index = index
        self.rule = rule
        super().__init__(f"system message at /messages/{index}: {rule}")


def build_messages_request(
    projected: ProjectedRequest,
    *,
    model: str,
    config: Mapping[str, Any],
    default_max_tokens: int = DEFAULT_MAX_TOKENS,
    cache_write: CacheWrite | None = None,
) -> WireRequest:
    """Render `projected` for `model` with the header's `config` (max_tokens, reasoning_effort);
    `max_tokens` is required on this wire, so `default_max_tokens` (the route's output limit)
    stands in when the config does not set it.

    `cache_write`: ask for prompt caching, each prefix kept that long (a top-level `cache_control`:
    the API puts the breakpoint on the last block and moves it as the conversation grows, so the
    messages are the same as without it); None asks for none.

    `temperature` is not sent: the official request types no longer carry it and current models
    refuse non-default sampling settings.
    """
    messages, group_indexes = assemble_messages(projected)
    check_placement(messages)

    body: dict[str, Any] = {
        "model": model,
        "max_tokens": config.get("max_tokens", default_max_tokens),
    }
    if projected.system:
        body["system"] = projected.system
    body["messages"] = messages
    if projected.declarations:
        body["tools"] = [_tool(declaration) for declaration in projected.declarations]
    body["stream"] = True
    if cache_write is not None:
        body["cache_control"] = {"type": "ephemeral", "ttl": cache_write}
    body.update(_settings(config))
    return WireRequest(body, beta_headers(projected), group_indexes)


def assemble_messages(projected: ProjectedRequest) -> tuple[list[dict[str, Any]], tuple[int, ...]]:
    """The messages of `projected`'s conversation and update groups, and each group's index,
    before the placement rules are checked (they hold for a whole body, not for a part of one)."""
    messages: list[dict[str, Any]] = []
    return messages, assemble(projected, messages, _append)


def check_placement(messages: list[dict[str, Any]]) -> None:
    """Raise `WirePlacementError` unless every system message is not first, directly follows a
    user message (tool results are user messages), and does not separate a `tool_use` from any
    of its `tool_result`s."""
    unanswered: set[str] = set()
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "assistant":
            unanswered = {
                block["id"] for block in message["content"] if block["type"] == "tool_use"
            }
        elif role == "user":
            if isinstance(message["content"], list):
                unanswered -= {
                    block["tool_use_id"]
                    for block in message["content"]
                    if block["type"] == "tool_result"
                }
        elif index == 0:
            raise WirePlacementError(index, "a system message cannot open the conversation")
        elif unanswered:
            raise WirePlacementError(
                index, f"between tool_use and tool_result ({', '.join(sorted(unanswered))})"
            )
        elif messages[index - 1]["role"] != "user":
            raise WirePlacementError(index, "a system message must directly follow a user turn")


def _tool(declaration: Declaration) -> dict[str, Any]:
    tool = declaration.tool
    wire: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.parameters,
    }
    if declaration.defer_loading:
        wire["defer_loading"] = True
    return wire


def _append(messages: list[dict[str, Any]], item: Message) -> None:
    if isinstance(item, UserItem):
        messages.append({"role": "user", "content": item.text})
    elif isinstance(item, SummaryItem):
        messages.append({"role": "user", "content": summary_text(item)})
    elif isinstance(item, ToolResultItem):
        _append_tool_result(messages, item)
    elif isinstance(item, AssistantItem):
        content = _assistant_content(item)
        if content:
            # An assistant turn with neither text nor calls (reasoning only, or interrupted
            # before any output) has nothing this wire can carry: the API refuses empty content.
            messages.append({"role": "assistant", "content": content})
    else:
        # A developer message reaches the wire only as an update group, never as a message.
        raise TypeError(f"not a conversation message: {item!r}")


def _append_tool_result(messages: list[dict[str, Any]], item: ToolResultItem) -> None:
    """Results of one step go back in one user message, as the API documents."""
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": item.call_id}
    if item.content:
        block["content"] = item.content
    if item.is_error:
        block["is_error"] = True
    previous = messages[-1] if messages else None
    if (
        previous is not None
        and previous["role"] == "user"
        and isinstance(previous["content"], list)
        and all(part["type"] == "tool_result" for part in previous["content"])
    ):
        previous["content"].append(block)
    else:
        messages.append({"role": "user", "content": [block]})


def _assistant_content(item: AssistantItem) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if item.text:
        content.append({"type": "text", "text": item.text})
    for call in item.tool_calls:
        content.append(
            {
                "type": "tool_use",
                "id": call.call_id,
                "name": call.name,
                "input": _input(call.arguments),
            }
        )
    return content


def _input(arguments: str) -> dict[str, Any]:
    try:
        value = loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _settings(config: Mapping[str, Any]) -> dict[str, Any]:
    effort = config.get("reasoning_effort")
    if effort is None:
        return {}
    if str(effort).lower() in THINKING_OFF:
        return {"thinking": {"type": "disabled"}}
    return {"output_config": {"effort": EFFORT_ALIASES.get(effort, effort)}}

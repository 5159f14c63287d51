"""The chat-completions body the `openai` client sends for an `openai-sdk` route.

The messages and tools are the deepseek-chat builder's (an `openai-sdk` route never gets update
blocks or `defer_loading`, so that body is plain chat completions); only the settings differ:
OpenAI's current models take `max_completion_tokens` and a bare `reasoning_effort`, and know no
`thinking` switch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.llm.deepseek.body import WireRequest, build_chat_request
from app.llm.projection import ProjectedRequest
from app.llm.routes import ReasoningHistory


def build_openai_request(
    projected: ProjectedRequest,
    *,
    model: str,
    config: Mapping[str, Any],
    reasoning_field: ReasoningHistory = "reasoning_content",
) -> WireRequest:
    wire = build_chat_request(projected, model=model, config={}, reasoning_field=reasoning_field)
    wire.body.update(_settings(config))
    return wire


def _settings(config: Mapping[str, Any]) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if "temperature" in config:
        settings["temperature"] = config["temperature"]
    if "max_tokens" in config:
        settings["max_completion_tokens"] = config["max_tokens"]
    if config.get("reasoning_effort") is not None:
        settings["reasoning_effort"] = config["reasoning_effort"]
    return settings

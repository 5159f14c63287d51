"""The `anthropic-messages` adapter: one streamed POST to `{base_url}/v1/messages` (docs/architecture.md §9).

Works with Anthropic and with Anthropic-compatible endpoints (DeepSeek's among them). The body
arrives already projected (`app.llm.anthropic.body`); this switches streaming on, adds `x-api-key`
and `anthropic-version`, and translates the SSE stream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from httpx_sse import ServerSentEvent

from app.llm.anthropic.translator import AnthropicTranslator
from app.llm.http import StreamingAdapter
from app.llm.stream import StreamEvent

ANTHROPIC_VERSION = "2023-06-01"


class AnthropicAdapter(StreamingAdapter):
    path = "/v1/messages"
    credential_headers = frozenset({"x-api-key", "authorization", "anthropic-version"})

    def _credential(self, api_key: str) -> dict[str, str]:
        return {"x-api-key": api_key, "anthropic-version": ANTHROPIC_VERSION}

    def _wire_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """The given body (its `model` wins over the route's) with streaming on."""
        return {"model": self.model, **body, "stream": True}

    def _translator(self) -> tuple[AnthropicTranslator, Callable[[ServerSentEvent], list[StreamEvent]]]:
        translator = AnthropicTranslator()
        return translator, lambda sse: translator.feed(sse.event, sse.data)

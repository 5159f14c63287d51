"""The `deepseek-chat` adapter: one streamed POST to `{base_url}/chat/completions` (docs/architecture.md §9).

The body arrives already projected (`app.llm.deepseek.body`); this only switches streaming on, asks
for the usage chunk, adds the bearer credential and translates the SSE stream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from httpx_sse import ServerSentEvent

from app.llm.deepseek.translator import DeepSeekTranslator
from app.llm.http import StreamingAdapter
from app.llm.stream import StreamEvent


class DeepSeekAdapter(StreamingAdapter):
    path = "/chat/completions"
    credential_headers = frozenset({"authorization"})

    def _credential(self, api_key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"}

    def _wire_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """The given body (its `model` wins over the route's) with streaming and the usage chunk on."""
        stream_options = body.get("stream_options")
        if not isinstance(stream_options, dict):
            stream_options = {}
        return {
            "model": self.model,
            **body,
            "stream": True,
            "stream_options": {**stream_options, "include_usage": True},
        }

    def _translator(self) -> tuple[DeepSeekTranslator, Callable[[ServerSentEvent], list[StreamEvent]]]:
        translator = DeepSeekTranslator()
        return translator, lambda sse: translator.feed(sse.data)

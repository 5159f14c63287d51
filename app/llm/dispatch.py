"""From a route to something that can send a projected request: its wire body builder and adapter.

`deepseek-chat` and `offline` routes speak the chat-completions wire (the offline model through an
in-process transport); `anthropic-messages` routes the Messages wire; `openai-sdk` routes go through
the official `openai` client.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from app.llm.anthropic.body import assemble_messages, build_messages_request, check_placement
from app.llm.deepseek.body import WireRequest, build_chat_request
from app.llm.openai_sdk.body import build_openai_request
from app.llm.projection import ProjectedRequest
from app.llm.routes import Route
from app.session.events import RequestHeaderData

if TYPE_CHECKING:  # the adapters and httpx are imported by `connect`: a report only builds bodies
    import httpx

    from app.llm.stream import StreamEvent


class ModelClient(Protocol):
    def build(self, projected: ProjectedRequest, header: RequestHeaderData) -> WireRequest: ...

    def stream(self, wire: WireRequest) -> AsyncIterator[StreamEvent]: ...

    async def aclose(self) -> None: ...


class _StreamingAdapter(Protocol):
    def stream(self, body: dict, headers: dict) -> AsyncIterator[StreamEvent]: ...

    async def aclose(self) -> None: ...


@dataclass
class _RouteClient:
    route: Route
    adapter: _StreamingAdapter

    def build(self, projected: ProjectedRequest, header: RequestHeaderData) -> WireRequest:
        return build_wire(projected, self.route, header.config)

    def stream(self, wire: WireRequest) -> AsyncIterator[StreamEvent]:
        return self.adapter.stream(wire.body, wire.headers)

    async def aclose(self) -> None:
        await self.adapter.aclose()


def build_wire(projected: ProjectedRequest, route: Route, config: Mapping[str, Any]) -> WireRequest:
    """The body and headers `route` sends for `projected`: its own model, the request's settings."""
    if route.dialect == "anthropic-messages":
        return build_messages_request(
            projected,
            model=route.model,
            config=config,
            default_max_tokens=route.max_output_tokens,
            cache_write=route.cache_write if route.cache_control else None,
        )
    if route.dialect == "openai-sdk":
        return build_openai_request(
            projected, model=route.model, config=config, reasoning_field=route.reasoning_history
        )
    return build_chat_request(
        projected, model=route.model, config=config, reasoning_field=route.reasoning_history
    )


def conversation_wire(projected: ProjectedRequest, route: Route) -> list[dict[str, Any]]:
    """The messages `route`'s wire makes of `projected`'s conversation and update groups alone
    (its top system text and tools left out, the placement rules unchecked): a part of a body,
    to append to the previous one."""
    if route.dialect == "anthropic-messages":
        return assemble_messages(projected)[0]
    return build_chat_request(projected, model=route.model, config={}, reasoning_field=route.reasoning_history).body["messages"]


def check_wire_placement(messages: list[dict[str, Any]], route: Route) -> None:
    """Raise `WirePlacementError` when `route`'s wire would refuse these messages (only the
    Messages wire has placement rules)."""
    if route.dialect == "anthropic-messages":
        check_placement(messages)


def connect(route: Route, *, http_client: httpx.AsyncClient | None = None) -> ModelClient:
    """A client for `route`; `http_client` is borrowed (tests point it at a loopback server)."""
    from app.llm.deepseek.adapter import DeepSeekAdapter
    from app.llm.offline.transport import OFFLINE_CACHE_FILE, OfflineTransport
    from app.paths import data_home

    if route.dialect == "offline":
        # The offline model answers in-process: no socket, no key, nothing to time out.
        adapter: _StreamingAdapter = DeepSeekAdapter(
            route.base_url,
            None,
            route.model,
            transport=OfflineTransport(
                (route.beta_header, route.tool_update_beta), cache_file=data_home() / "cache" / OFFLINE_CACHE_FILE
            ),
        )
    else:
        adapter = _adapter_class(route)(
            route.base_url,
            route.api_key_env,
            route.model,
            http_client=http_client,
            idle_timeout=route.idle_timeout,
            request_timeout=route.request_timeout,
        )
    return _RouteClient(route, adapter)


def _adapter_class(route: Route) -> type[_StreamingAdapter]:
    if route.dialect == "anthropic-messages":
        from app.llm.anthropic.adapter import AnthropicAdapter

        return AnthropicAdapter
    if route.dialect == "openai-sdk":
        # The openai package is imported only by the routes that use it.
        from app.llm.openai_sdk.adapter import OpenAISdkAdapter

        return OpenAISdkAdapter
    from app.llm.deepseek.adapter import DeepSeekAdapter

    return DeepSeekAdapter

"""What `toolscope run` and the chat both assemble from the config: the route, the tool registry,
the session writer and the system prompt."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from app.i18n import _
from app.llm.routes import Route, RouteCatalog, RouteConfigError, load_catalog
from app.session.errors import SessionError

if TYPE_CHECKING:
    # Imported where used: the chat resolves its route with this module before its first frame,
    # which must not wait for the agent loop, httpx, the tool registry or the session store.
    from app.agent.loop import CompactionSettings
    from app.config import Config
    from app.session.session import Session
    from app.session.store import SessionStore, SessionWriter
    from app.tools.registry import ToolRegistry

OFFLINE_ROUTE = "offline/demo"
KEYED_DEFAULT_ROUTE = "deepseek/deepseek-flash"

SYSTEM_PROMPT = (
    "You are toolscope's assistant, working in the directory {cwd}. Use the tools you are given "
    "when they help, say what you did, and answer in Markdown."
)
"""Model-facing, so fixed English: the prompt (and so the prompt cache) must not depend on the UI
language."""


def catalog_from(config: Config | None) -> RouteCatalog:
    """The built-in routes with the config's `[[routes]]`; an error names the config file."""
    if config is None:
        return load_catalog(())
    try:
        return load_catalog(config.routes)
    except RouteConfigError as error:
        raise _in_config_file(config, str(error)) from None


def default_route_id(catalog: RouteCatalog, config: Config | None) -> str:
    """The config's `[defaults] route`, else DeepSeek when its key is set, else the offline model."""
    if config is not None and config.defaults.route:
        try:
            catalog.get(config.defaults.route)
        except RouteConfigError as error:
            raise _in_config_file(config, f"[defaults] route: {error}") from None
        return config.defaults.route
    keyed = catalog.get(KEYED_DEFAULT_ROUTE) if KEYED_DEFAULT_ROUTE in catalog else None
    if keyed is not None and keyed.api_key_env and os.environ.get(keyed.api_key_env, "").strip():
        return KEYED_DEFAULT_ROUTE
    return OFFLINE_ROUTE


def _in_config_file(config: Config, message: str) -> RouteConfigError:
    if config.source is None:
        return RouteConfigError(message)
    return RouteConfigError(_("{file}: {problem}").format(file=config.source, problem=message))


def missing_key(route: Route) -> str | None:
    """Why `route` cannot be used for lack of a usable API key (naming the variable), or None.

    Asked before a session is created, so a missing key leaves nothing behind."""
    from app.llm.http import unusable_key

    if route.api_key_env is None:
        return None
    unusable = unusable_key(route.api_key_env, os.environ.get(route.api_key_env, "").strip())
    return unusable.message if unusable is not None else None


def build_registry(config: Config | None, cwd: Path) -> ToolRegistry:
    """The registry with the sources the config switches on (`[plugins] enabled`, every
    `[mcp.servers.*]` but those with `enabled = false`); `start()` is the caller's."""
    from app.config import Tools
    from app.tools.builtins import builtin_tools
    from app.tools.command_tool import CommandSettings
    from app.tools.file_tools import Workspace
    from app.tools.plugins import available_plugins
    from app.tools.registry import ToolRegistry

    servers = config.mcp.servers if config is not None else {}
    if servers:
        # The MCP SDK is slow to import: only when a server is configured.
        from app.tools.mcp_source import McpServerSource, McpServerSpec
        from app.tools.seen_tools import SeenToolsStore, default_path

        seen = SeenToolsStore(default_path())
    tools = config.tools if config is not None else Tools()
    workspace = Workspace(cwd, tuple(Path(root).expanduser() for root in tools.extra_roots))
    commands = CommandSettings(
        default_timeout=tools.command_timeout,
        max_timeout=max(tools.command_timeout, CommandSettings.max_timeout),
    )
    return ToolRegistry(
        builtins=builtin_tools(workspace, commands=commands),
        plugins=available_plugins(),
        enabled_plugins=config.plugins.enabled if config is not None else (),
        mcp_servers=[
            McpServerSource(
                McpServerSpec(
                    name=name,
                    command=server.command or "",
                    args=tuple(server.args),
                    env=dict(server.env),
                    restart=server.restart,
                    cwd=cwd,
                    url=server.url or "",
                    headers=dict(server.headers),
                    bearer_token_env=server.bearer_token_env or "",
                ),
                seen=seen,
            )
            for name, server in servers.items()
        ],
        servers_off=[name for name, server in servers.items() if not server.enabled],
    )


async def restore_switches(registry: ToolRegistry, session: Session) -> None:
    """Switch the plugins and MCP servers as they were for the session's last request (its last
    header's tools), so a continued session goes on with the tools it ended with and its next
    request records no change; a session without a request keeps the config's."""
    header = session.view().current_header
    if header is not None:
        await registry.apply_switches(registry.switches_in(header.tools))


def compaction_settings(config: Config | None) -> CompactionSettings:
    """`[compaction] auto`, `share` from the config."""
    from app.agent.loop import CompactionSettings

    if config is None:
        return CompactionSettings()
    return CompactionSettings(auto=config.compaction.auto, share=config.compaction.share)


def open_session(store: SessionStore, ref: str | None, cwd: Path) -> SessionWriter:
    """Continue the session `ref` (an id or a file), or start a new one in `cwd`."""
    return store.open_writer(ref) if ref else store.create(cwd)


def latest_session(directory: Path) -> str:
    """The id of the session written to last in the store at `directory` (`-c`, as `llm -c` and
    `claude -c` continue)."""
    from app.session.listing import list_sessions

    readable = [summary for summary in list_sessions(directory) if summary.problem is None]
    if not readable:
        raise SessionError(_("there is no session to continue yet"))
    return max(readable, key=lambda summary: summary.mtime_ns).id


def system_prompt(cwd: Path) -> str:
    return SYSTEM_PROMPT.format(cwd=cwd)

"""What `toolscope run` and the chat both assemble from the config: the route, the tool registry,
the session writer and the system prompt."""

from __future__ import annotations

import os
from pathlib import Path

from app.agent.loop import CompactionSettings
from app.config import Config, Tools
from app.llm.routes import RouteCatalog, load_catalog
from app.session.store import SessionStore, SessionWriter
from app.tools.builtins import CommandSettings, Workspace, builtin_tools
from app.tools.plugins import available_plugins
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
    return load_catalog(config.routes if config is not None else ())


def default_route_id(catalog: RouteCatalog, config: Config | None) -> str:
    """The config's `[defaults] route`, else DeepSeek when its key is set, else the offline model."""
    if config is not None and config.defaults.route:
        catalog.get(config.defaults.route)
        return config.defaults.route
    keyed = catalog.get(KEYED_DEFAULT_ROUTE) if KEYED_DEFAULT_ROUTE in catalog else None
    if keyed is not None and keyed.api_key_env and os.environ.get(keyed.api_key_env, "").strip():
        return KEYED_DEFAULT_ROUTE
    return OFFLINE_ROUTE


def build_registry(config: Config | None, cwd: Path) -> ToolRegistry:
    servers = config.mcp.servers if config is not None else {}
    if servers:
        # The MCP SDK costs about half a second to import: only when a server is configured.
        from app.tools.mcp_source import McpServerSource, McpServerSpec
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
                    command=server.command,
                    args=tuple(server.args),
                    env=dict(server.env),
                    restart=server.restart,
                    cwd=cwd,
                )
            )
            for name, server in servers.items()
        ],
    )


def compaction_settings(config: Config | None) -> CompactionSettings:
    """`[compaction] auto`, `share` from the config."""
    if config is None:
        return CompactionSettings()
    return CompactionSettings(auto=config.compaction.auto, share=config.compaction.share)


def open_session(store: SessionStore, ref: str | None, cwd: Path) -> SessionWriter:
    """Continue the session `ref` (an id or a file), or start a new one in `cwd`."""
    return store.open_writer(ref) if ref else store.create(cwd)


def system_prompt(cwd: Path) -> str:
    return SYSTEM_PROMPT.format(cwd=cwd)

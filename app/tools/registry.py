"""The tool registry: the one ordered list of effective tools, and the way to run them.

Sources, in registry order (each source's tools keep their own order):

1. built-in tools (`app.tools.builtins`),
2. plugins, in configuration order (those not named in the configuration follow in catalog
   order); a disabled plugin contributes nothing but keeps its place,
3. MCP servers, in configuration order (`app.tools.mcp_source`); their tools are always named
   `<server>__<tool>`.

Names are unique: when two sources offer the same name the earlier one in registry order wins,
and the later tool is left out and reported as a `SourceProblem`.

What the agent loop uses:

- `await registry.settle()` right before assembling each request header. It returns once every
  change announced so far is applied — in particular an MCP `tools/list_changed` received during
  the previous tool call, whose re-list may still be in flight.
- `registry.definitions()` — the effective `ToolDefinition`s, in registry order (a snapshot).
- `registry.is_read_only(name)` — read-only tools may run in parallel; others run one at a time.
- `await registry.execute(name, arguments_json, ToolContext(approver, call_id))` → `ToolOutcome`.
  It never raises for a tool's failure: unknown names, bad arguments, refused approvals and tool
  exceptions all become error outcomes with a code from `ToolErrorCode`.
- `registry.on_change(callback)` — called with the new definitions whenever they change.

The UI and CLI also use `plugins()` / `enable_plugin()` / `disable_plugin()`, `mcp_servers()` /
`start_mcp_server()` / `stop_mcp_server()`, `problems()` / `on_problem()`, each source's own tools
(`builtin_definitions()`, `plugin_definitions(name)`, `server_definitions(name)`, whether or not
they are effective), the sources switched on as one value (`switches()`, `switches_in(tools)` for
a logged header's tools, `apply_switches()` to resume them), and the lifecycle:
`await registry.start()` (connects the MCP servers switched on) and `await registry.aclose()` (or
`async with`).

Tool results and error messages are written for the model and the session log, so they are
English; what the user reads about sources (problems, plugin titles) is localized at use time.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from app.i18n import _
from app.session.events import ToolDefinition
from app.tools.seen_tools import SeenTools
from app.tools.source_state import (
    ManagedSource,
    Plugin,
    PluginState,
    ProblemKind,
    ServerStatus,
    SourceProblem,
    UnknownPluginError,
)
from app.tools.tool import (
    OutputLimits,
    Tool,
    ToolContext,
    ToolErrorCode,
    ToolFailure,
    ToolOutcome,
    bound_text,
    with_notice,
)
from app.untrusted_json import loads

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolSwitches:
    """Which plugins and MCP servers are switched on (the built-ins always are): what a resumed
    session restores and what the tools screen compares with the config."""

    plugins: frozenset[str] = frozenset()
    servers: frozenset[str] = frozenset()


# --- the registry ------------------------------------------------------------------------------


@dataclass
class _Listeners:
    on_change: list[Callable[[tuple[ToolDefinition, ...]], None]] = field(default_factory=list)
    on_problem: list[Callable[[SourceProblem], None]] = field(default_factory=list)


class ToolRegistry:
    """The effective tools, assembled from built-ins, plugins and MCP servers (see module doc)."""

    def __init__(
        self,
        *,
        builtins: Sequence[Tool] = (),
        plugins: Sequence[Plugin] = (),
        enabled_plugins: Sequence[str] = (),
        mcp_servers: Sequence[ManagedSource] = (),
        servers_off: Sequence[str] = (),
        limits: OutputLimits = OutputLimits(),
    ) -> None:
        """`servers_off`: MCP servers `start()` leaves stopped (switched off in the config)."""
        self._builtins = tuple(builtins)
        self._limits = limits
        self._listeners = _Listeners()
        self._problems: list[SourceProblem] = []
        self._reported_duplicates: set[tuple[str, str]] = set()

        catalog = {plugin.name: plugin for plugin in plugins}
        configured = [name for name in dict.fromkeys(enabled_plugins) if name in catalog]
        # Configured plugins first, in configuration order; the rest keep catalog order.
        self._plugins = {name: catalog[name] for name in configured} | catalog
        self._enabled_plugins = set(configured)

        self._servers: dict[str, ManagedSource] = {}
        for server in mcp_servers:
            if server.name in self._servers:
                raise ValueError(f"two MCP servers are named {server.name!r}")
            self._servers[server.name] = server
            server.bind(self._rebuild, self._report)
        # The servers the user wants running, whatever state each is in (a failed one included).
        self._servers_on = set(self._servers) - set(servers_off)
        self._started = False

        self._tools: dict[str, Tool] = {}
        self._definitions: tuple[ToolDefinition, ...] = ()
        self._ever_seen: set[str] = set()
        for name in dict.fromkeys(enabled_plugins):
            if name not in catalog:
                self._report(SourceProblem(ProblemKind.UNKNOWN_PLUGIN, name))
        self._rebuild()

    # --- lifecycle

    async def start(self) -> None:
        """Start the MCP servers switched on, all at once; returns when each has listed its tools
        or failed."""
        self._started = True
        async with anyio.create_task_group() as group:
            for server in self._servers.values():
                if server.name in self._servers_on:
                    group.start_soon(server.start)

    async def aclose(self) -> None:
        """Stop every MCP server (their processes end); the registry keeps working without them."""
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for server in self._servers.values():
                    group.start_soon(server.stop)

    async def __aenter__(self) -> ToolRegistry:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # --- what the loop reads

    def definitions(self) -> tuple[ToolDefinition, ...]:
        return self._definitions

    def is_read_only(self, name: str) -> bool:
        """True when the current tool `name` only reads (so it may run alongside others)."""
        tool = self._tools.get(name)
        return tool is not None and tool.read_only

    async def settle(self) -> None:
        """Wait until every announced change is applied; call it right before each request header.

        Bounded: a pending MCP re-list ends within that server's request timeout.
        """
        for server in self._servers.values():
            await server.settle()

    async def execute(self, name: str, arguments_json: str, context: ToolContext) -> ToolOutcome:
        """Run the current tool `name`; every failure is an error outcome, never an exception.

        Empty arguments (`""`) count as `{}`: models send them for tools without parameters.
        """
        tool = self._tools.get(name)
        if tool is None:
            return ToolFailure(ToolErrorCode.UNKNOWN_TOOL, self._unknown_tool_message(name)).outcome()
        try:
            arguments = _parse_arguments(arguments_json)
            tool.check_arguments(arguments)
            content = await tool.handler(arguments, context)
        except ToolFailure as failure:
            outcome = failure.outcome()
        except Exception as exc:
            logger.debug("tool %s raised", name, exc_info=True)
            message = f"{name} failed: {type(exc).__name__}: {exc}"
            outcome = ToolOutcome(message, True, ToolErrorCode.TOOL_FAILED, message)
        else:
            outcome = ToolOutcome(content)
        return self._bounded(outcome)

    def on_change(
        self, callback: Callable[[tuple[ToolDefinition, ...]], None]
    ) -> Callable[[], None]:
        """Call `callback(definitions)` after every change of the effective tools; returns an
        unsubscribe function. Callbacks run synchronously and must not block."""
        self._listeners.on_change.append(callback)
        return lambda: self._listeners.on_change.remove(callback)

    # --- each source's own tools (the tools screen lists them, effective or not)

    def builtin_definitions(self) -> tuple[ToolDefinition, ...]:
        return tuple(tool.definition for tool in self._builtins)

    def plugin_definitions(self, name: str) -> tuple[ToolDefinition, ...]:
        """The plugin's tools, whether it is switched on or off."""
        if name not in self._plugins:
            raise UnknownPluginError(name)
        return tuple(tool.definition for tool in self._plugins[name].tools)

    def server_definitions(self, name: str) -> tuple[ToolDefinition, ...]:
        """The tools the server lists now (none while it is stopped), clashing ones included."""
        return tuple(tool.definition for tool in self._server(name).tools())

    def server_last_seen(self, name: str) -> SeenTools | None:
        """The tools the server listed when last seen (for a server not running): shown, never
        declared."""
        return self._server(name).last_seen()

    # --- plugins

    def plugins(self) -> tuple[PluginState, ...]:
        return tuple(
            PluginState(
                name=plugin.name,
                title=_(plugin.title),
                description=_(plugin.description),
                enabled=plugin.name in self._enabled_plugins,
                tool_names=tuple(tool.name for tool in plugin.tools),
            )
            for plugin in self._plugins.values()
        )

    def enable_plugin(self, name: str) -> None:
        self._set_plugin(name, True)

    def disable_plugin(self, name: str) -> None:
        self._set_plugin(name, False)

    def _set_plugin(self, name: str, enabled: bool) -> None:
        if name not in self._plugins:
            raise UnknownPluginError(name)
        if enabled:
            self._enabled_plugins.add(name)
        else:
            self._enabled_plugins.discard(name)
        self._rebuild()

    # --- MCP servers

    def mcp_servers(self) -> tuple[ServerStatus, ...]:
        return tuple(server.status() for server in self._servers.values())

    async def start_mcp_server(self, name: str) -> None:
        server = self._server(name)
        self._servers_on.add(name)
        await server.start()

    async def stop_mcp_server(self, name: str) -> None:
        server = self._server(name)
        self._servers_on.discard(name)
        await server.stop()

    # --- switches

    def switches(self) -> ToolSwitches:
        """The plugins and servers switched on now (a server that failed is still switched on)."""
        return ToolSwitches(frozenset(self._enabled_plugins), frozenset(self._servers_on))

    def switches_in(self, tools: Iterable[ToolDefinition]) -> ToolSwitches:
        """The sources that were switched on when these tools were in force (a logged header's):
        a plugin or server with at least one tool among them.

        A server that had no tool listed then reads as off; a tool name two servers' prefixes fit
        (`a` and `a__b`) is the longer one's.
        """
        names = {tool.name for tool in tools}
        plugins = {
            plugin.name for plugin in self._plugins.values() if any(tool.name in names for tool in plugin.tools)
        }
        by_prefix = sorted(self._servers.values(), key=lambda server: len(server.tool_prefix), reverse=True)
        servers: set[str] = set()
        for name in names:
            owner = next((server for server in by_prefix if name.startswith(server.tool_prefix)), None)
            if owner is not None:
                servers.add(owner.name)
        return ToolSwitches(frozenset(plugins), frozenset(servers))

    async def apply_switches(self, switches: ToolSwitches) -> None:
        """Switch every plugin and server as `switches` says (unknown names are ignored). Before
        `start()` this only chooses the servers it starts; after it, servers start or stop now."""
        self._enabled_plugins = set(switches.plugins) & set(self._plugins)
        self._rebuild()
        wanted = set(switches.servers) & set(self._servers)
        if not self._started:
            self._servers_on = wanted
            return
        async with anyio.create_task_group() as group:
            for name in wanted - self._servers_on:
                group.start_soon(self.start_mcp_server, name)
            for name in self._servers_on - wanted:
                group.start_soon(self.stop_mcp_server, name)

    def _server(self, name: str) -> ManagedSource:
        try:
            return self._servers[name]
        except KeyError:
            raise LookupError(_("Unknown MCP server: {name}").format(name=name)) from None

    # --- problems

    def problems(self) -> tuple[SourceProblem, ...]:
        """Every problem reported so far, oldest first."""
        return tuple(self._problems)

    def on_problem(self, callback: Callable[[SourceProblem], None]) -> Callable[[], None]:
        """Call `callback(problem)` for each new problem; returns an unsubscribe function."""
        self._listeners.on_problem.append(callback)
        return lambda: self._listeners.on_problem.remove(callback)

    def _report(self, problem: SourceProblem) -> None:
        self._problems.append(problem)
        for callback in list(self._listeners.on_problem):
            _call_safely(callback, problem)

    # --- assembling

    def _sourced_tools(self) -> Iterator[tuple[str, Tool]]:
        for tool in self._builtins:
            yield "builtin", tool
        for plugin in self._plugins.values():
            if plugin.name in self._enabled_plugins:
                for tool in plugin.tools:
                    yield plugin.name, tool
        for server in self._servers.values():
            for tool in server.tools():
                yield server.name, tool

    def _rebuild(self) -> None:
        tools: dict[str, Tool] = {}
        for source, tool in self._sourced_tools():
            if tool.name not in tools:
                tools[tool.name] = tool
            elif (source, tool.name) not in self._reported_duplicates:
                self._reported_duplicates.add((source, tool.name))
                self._report(SourceProblem(ProblemKind.DUPLICATE_TOOL, source, tool=tool.name))
        self._tools = tools
        self._ever_seen.update(tools)
        definitions = tuple(tool.definition for tool in tools.values())
        if definitions != self._definitions:
            self._definitions = definitions
            for callback in list(self._listeners.on_change):
                _call_safely(callback, definitions)

    def _unknown_tool_message(self, name: str) -> str:
        if name in self._ever_seen:
            return f"tool {name!r} is no longer available"
        return f"unknown tool {name!r}"

    def _bounded(self, outcome: ToolOutcome) -> ToolOutcome:
        if not bound_text(outcome.content, self._limits)[1]:
            return outcome
        content, _cut = bound_text(outcome.content, self._limits.reserving(1))
        notice = f"output truncated to {self._limits.max_lines} lines / {self._limits.max_bytes} bytes"
        return ToolOutcome(
            with_notice(content, notice), outcome.is_error, outcome.error_code, outcome.error_message
        )


def _parse_arguments(arguments_json: str) -> dict[str, Any]:
    if not arguments_json.strip():
        return {}
    try:
        arguments = loads(arguments_json)
    except json.JSONDecodeError as exc:  # nesting deeper than MAX_DEPTH included
        raise ToolFailure(
            ToolErrorCode.INVALID_ARGUMENTS, f"arguments are not valid JSON: {exc}"
        ) from None
    if not isinstance(arguments, dict):
        raise ToolFailure(
            ToolErrorCode.INVALID_ARGUMENTS,
            f"arguments must be a JSON object, not {type(arguments).__name__}",
        )
    return arguments


def _call_safely(callback: Callable[[Any], None], value: Any) -> None:
    """A failing listener must not break the source that announced the change."""
    try:
        callback(value)
    except Exception:
        logger.exception("tool registry listener %r failed", callback)

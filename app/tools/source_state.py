"""What the registry says about its sources besides their tools: the plugins and their states,
the problems a source reports, an MCP server's status, and what a source whose tools change on their
own (an MCP server) provides the registry.

What the user reads about sources (problems, plugin titles) is localized at use time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from app.i18n import _, ngettext
from app.tools.seen_tools import SeenTools
from app.tools.tool import Tool

@dataclass(frozen=True)
class Plugin:
    """A named group of tools the user switches on and off while chatting.

    `title` and `description` are English source strings marked with `N_`; show them through
    `_()` (see `PluginState`).
    """

    name: str
    title: str
    description: str
    tools: tuple[Tool, ...]


@dataclass(frozen=True)
class PluginState:
    name: str
    title: str
    description: str
    enabled: bool
    tool_names: tuple[str, ...]


class UnknownPluginError(LookupError):
    def __init__(self, name: str) -> None:
        super().__init__(_("Unknown plugin: {name}").format(name=name))
        self.name = name


# --- problems and managed sources --------------------------------------------------------------


class ProblemKind(StrEnum):
    UNKNOWN_PLUGIN = "unknown-plugin"
    DUPLICATE_TOOL = "duplicate-tool"
    MCP_START_FAILED = "mcp-start-failed"
    MCP_EXITED = "mcp-exited"
    MCP_RESTARTING = "mcp-restarting"
    MCP_GAVE_UP = "mcp-gave-up"
    MCP_LIST_FAILED = "mcp-list-failed"


@dataclass(frozen=True)
class SourceProblem:
    """Something about a tool source the user should know; everything else goes on without it.

    `detail` is technical text from the OS or the server (not translated); `message()` is the
    localized sentence to show.
    """

    kind: ProblemKind
    source: str
    detail: str = ""
    tool: str = ""
    attempt: int = 0
    max_attempts: int = 0
    delay: float = 0.0

    def message(self) -> str:
        name = self.source
        match self.kind:
            case ProblemKind.UNKNOWN_PLUGIN:
                text = _("Unknown plugin “{name}” in the configuration; it is ignored.").format(
                    name=name
                )
            case ProblemKind.DUPLICATE_TOOL:
                text = _(
                    "Tool “{tool}” from “{name}” is left out: "
                    "an earlier source already provides it."
                ).format(tool=self.tool, name=name)
            case ProblemKind.MCP_START_FAILED:
                text = _("MCP server “{name}” could not start.").format(name=name)
            case ProblemKind.MCP_EXITED:
                text = _("MCP server “{name}” exited; its tools were removed.").format(name=name)
            case ProblemKind.MCP_RESTARTING:
                # TRANSLATORS: {delay:.1f} is a number of seconds with one decimal, e.g. 2.0.
                text = _(
                    "Restarting MCP server “{name}” in {delay:.1f} s (attempt {attempt} of {total})."
                ).format(name=name, delay=self.delay, attempt=self.attempt, total=self.max_attempts)
            case ProblemKind.MCP_GAVE_UP:
                text = ngettext(
                    "MCP server “{name}” is not restarted again after {total} attempt.",
                    "MCP server “{name}” is not restarted again after {total} attempts.",
                    self.max_attempts,
                ).format(name=name, total=self.max_attempts)
            case ProblemKind.MCP_LIST_FAILED:
                text = _("MCP server “{name}” did not list its tools.").format(name=name)
        return f"{text} {self.detail}" if self.detail else text


TRANSPORT_NAMES = {"stdio": "stdio", "http": "HTTP"}
"""How a server's transport is named to the user (protocol names, not translated)."""


class ServerState(StrEnum):
    STOPPED = "stopped"
    STARTING = "starting"
    RUNNING = "running"
    RESTARTING = "restarting"
    FAILED = "failed"


@dataclass(frozen=True)
class ServerStatus:
    name: str
    state: ServerState
    tool_names: tuple[str, ...] = ()
    transport: str = ""
    """"stdio" or "http"."""
    revision: str = ""
    """The MCP protocol revision of the running session (e.g. "2026-07-28"), "" when none."""


def connected_line(status: ServerStatus) -> str:
    """What `toolscope run` says of a server once it listed its tools."""
    count = len(status.tool_names)
    # TRANSLATORS: {transport} is "stdio" or "HTTP"; {revision} an MCP date, e.g. 2026-07-28.
    return ngettext(
        "MCP server “{name}”: {count} tool, {transport}, revision {revision}.",
        "MCP server “{name}”: {count} tools, {transport}, revision {revision}.",
        count,
    ).format(
        name=status.name,
        count=count,
        transport=TRANSPORT_NAMES.get(status.transport, status.transport),
        revision=status.revision,
    )


class ManagedSource(Protocol):
    """A source whose tools change on their own (an MCP server); see `McpServerSource`."""

    @property
    def name(self) -> str: ...

    @property
    def tool_prefix(self) -> str:
        """What the name of every tool the source could list starts with (`<server>__`)."""
        ...

    def tools(self) -> tuple[Tool, ...]: ...

    def last_seen(self) -> SeenTools | None:
        """The tools it listed when last seen, in this session or an earlier one (a cache)."""
        ...

    def bind(
        self, on_tools_changed: Callable[[], None], on_problem: Callable[[SourceProblem], None]
    ) -> None:
        """Called once by the registry: how the source announces changes and problems."""
        ...

    async def start(self) -> None:
        """Connect; returns after the first attempt (its tools are listed, or it failed)."""
        ...

    async def stop(self) -> None: ...

    async def settle(self) -> None:
        """Return once every change announced so far is applied to `tools()`."""
        ...

    def status(self) -> ServerStatus: ...

"""The tools screen (`/tools`, a binding, the palette): every tool source with its tools, its state
and a switch, in registry order — the built-ins (always on), each plugin, each MCP server.

Switching a plugin changes the registry at once. Switching a server starts or stops its process in
an app-level worker, so closing the screen does not cancel a start half-way; the panel says
"starting…"/"stopping…" meanwhile. Either way the registry's `on_change` reaches the agent loop,
which gives the next request a new header and one developer message.

Each panel says where its source is switched otherwise than the config ("on in this session · off
in config"), and the screen says whether a switch is saved to the config file (`[tools]
remember_switches`, `SwitchSettings`); a save runs in an app-level worker too.

The screen follows the registry live. Its `on_change`/`on_problem` callbacks may run in any task
(an MCP supervisor) or thread, so they only schedule a refresh on the app's event loop. Tool names,
descriptions and failure reasons come from MCP servers: shown through the one literal path
(`app.ui.text`), never as markup. Dismisses with None.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Checkbox, Static

from app.config import (
    REMEMBER_IN_CONFIG,
    Config,
    ConfigError,
    Tools,
    save_plugin_switch,
    save_server_switch,
)
from app.i18n import _, ngettext
from app.paths import data_home
from app.session.events import ToolDefinition
from app.terminal import printable
from app.tools.registry import ToolRegistry, ToolSwitches
from app.tools.source_state import TRANSPORT_NAMES, ProblemKind, ServerState, SourceProblem
from app.ui.screens.modal import ClosableModal
from app.ui.text import literal, literal_text

ACTIVE_SERVER_STATES = (ServerState.STARTING, ServerState.RUNNING, ServerState.RESTARTING)


class SourceKind(StrEnum):
    BUILTIN = "builtin"
    PLUGIN = "plugin"
    SERVER = "server"


class SwitchSettings:
    """What the config says about switches: the sources it switches on, and whether a switch made
    in the screen is saved to it (`remember`) and where. One for the app's life: a save changes
    `configured`."""

    def __init__(self, configured: ToolSwitches, remember: str, path: Path) -> None:
        self.configured = configured
        self.remember = remember
        self.path = path
        self._saving = asyncio.Lock()

    @classmethod
    def of(cls, config: Config | None) -> SwitchSettings:
        """From the config read at start; with no config file, a save creates the default one."""
        if config is None:
            return cls(ToolSwitches(), Tools().remember_switches, data_home() / "config.toml")
        servers = frozenset(name for name, server in config.mcp.servers.items() if server.enabled)
        path = config.source if config.source is not None else data_home() / "config.toml"
        return cls(ToolSwitches(frozenset(config.plugins.enabled), servers), config.tools.remember_switches, path)

    @property
    def saves_to_config(self) -> bool:
        return self.remember == REMEMBER_IN_CONFIG

    async def save(self, kind: SourceKind, name: str, on: bool) -> None:
        """Write one switch to the config file (in a thread, one save at a time); raises
        `ConfigError`. `configured` says so at once, so the panel shows no difference while the
        file is written, and is set back if it cannot be."""
        plugin = kind is SourceKind.PLUGIN
        was = name in (self.configured.plugins if plugin else self.configured.servers)
        self._configure(plugin, name, on)
        async with self._saving:
            try:
                await asyncio.to_thread(save_plugin_switch if plugin else save_server_switch, self.path, name, on)
            except ConfigError:
                self._configure(plugin, name, was)
                raise

    def _configure(self, plugin: bool, name: str, on: bool) -> None:
        names = self.configured.plugins if plugin else self.configured.servers
        names = names | {name} if on else names - {name}
        self.configured = replace(self.configured, **{"plugins" if plugin else "servers": names})


@dataclass(frozen=True)
class SourceView:
    """What one panel shows, worked out from the registry (no widget state)."""

    title: str
    kind_and_state: str
    switched_on: bool
    switchable: bool
    failing: bool
    reasons: tuple[str, ...]
    description: str
    tools: tuple[ToolDefinition, ...]
    against_config: str = ""
    """Where the source is switched otherwise than the config says, in words; else empty."""
    last_seen: str = ""
    """For a server not running, when `tools` were listed (they are not declared); else empty."""


class RegistryChanged(Message):
    """The registry changed somewhere; the screen reads it again."""


class SourceSwitch(Checkbox):
    """A checkbox whose box is empty when off: Textual's shows the same X either way, in colours
    that are hard to tell apart on many themes."""

    @property
    def BUTTON_INNER(self) -> str:  # type: ignore[override]  # noqa: N802 (Textual's name)
        return "✓" if self.value else " "


class SourcePanel(Vertical):
    """One source: a switch with its name, its state, any reasons, and its tools."""

    def __init__(self, kind: SourceKind, name: str, index: int) -> None:
        super().__init__(id=f"source-{index}", classes=f"source source-{kind}")
        self.kind = kind
        self.source_name = name
        self._shown: SourceView | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(classes="source-header"):
            yield SourceSwitch(classes="source-switch")
            yield Static(classes="source-state")
        yield Static(classes="source-config")
        yield Static(classes="source-reasons")
        yield Static(classes="source-description")
        yield Static(classes="source-seen")
        yield Static(classes="source-tools")

    def show(self, view: SourceView) -> None:
        """Update what differs from the view shown last (docs/decisions.md: a tool change then
        redraws one panel's tool lines, not every panel)."""
        before, self._shown = self._shown, view

        def changed(field: str) -> bool:
            return before is None or getattr(before, field) != getattr(view, field)

        if changed("title") or changed("switched_on") or changed("switchable"):
            switch = self.query_one(SourceSwitch)
            switch.label = literal_text(view.title)
            with switch.prevent(Checkbox.Changed):
                switch.value = view.switched_on
            switch.disabled = not view.switchable
            self.set_class(not view.switched_on, "-off")
        if changed("failing"):
            self.set_class(view.failing, "-failing")
        if changed("kind_and_state"):
            self.query_one(".source-state", Static).update(literal_text(view.kind_and_state))
        lines = (
            ("against_config", ".source-config", view.against_config),
            ("reasons", ".source-reasons", "\n".join(view.reasons)),
            ("description", ".source-description", view.description),
            ("last_seen", ".source-seen", view.last_seen),
        )
        for field, selector, text in lines:
            if changed(field):
                line = self.query_one(selector, Static)
                line.display = bool(text)
                line.update(literal_text(text))
        if changed("last_seen"):
            self.set_class(bool(view.last_seen), "-last-seen")
        if changed("tools"):
            self.query_one(".source-tools", Static).update(_tool_lines(view.tools))


def _tool_lines(tools: tuple[ToolDefinition, ...]) -> Text:
    if not tools:
        return Text(_("no tools"), style="italic")
    lines = Text()
    for number, tool in enumerate(tools):
        if number:
            lines.append("\n")
        lines.append(printable(tool.name), style="bold")
        summary = " ".join(printable(tool.description).split("\n", 1)[0].split())
        if summary:
            lines.append("  " + summary)
    return lines


class ToolsScreen(ClosableModal[None]):
    """Tool sources with switches (see the module doc)."""

    CSS_PATH = "tools.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        # Priority: the scrolling list would take the arrows for itself; moving between switches
        # scrolls the focused one into view anyway.
        Binding("down", "app.focus_next", show=False, priority=True),
        Binding("up", "app.focus_previous", show=False, priority=True),
    ]

    def __init__(self, registry: ToolRegistry, settings: SwitchSettings) -> None:
        super().__init__()
        self.registry = registry
        self.settings = settings
        self._loop: asyncio.AbstractEventLoop | None = None
        self._unsubscribe: list[Callable[[], None]] = []
        # A server being started or stopped from this screen: name → switched on.
        self._pending: dict[str, bool] = {}
        # Problems older than the user's last switch of a source are history, not its state.
        self._problems_seen: dict[str, int] = {}

    def compose(self) -> ComposeResult:
        with Vertical(id="tools-dialog"):
            yield Static(literal(_("Tools")), id="tools-title")
            yield Static(id="tools-summary")
            yield Static(id="tools-remember")
            with VerticalScroll(id="tools-sources", can_focus=False):
                yield SourcePanel(SourceKind.BUILTIN, "", 0)
                sources = [(SourceKind.PLUGIN, plugin.name) for plugin in self.registry.plugins()]
                sources += [(SourceKind.SERVER, server.name) for server in self.registry.mcp_servers()]
                for index, (kind, name) in enumerate(sources, start=1):
                    yield SourcePanel(kind, name, index)
            yield Static(
                literal(_("Space or click switches a source · ↑↓ Tab move · Esc close")), id="tools-hint"
            )

    def on_mount(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._unsubscribe = [
            self.registry.on_change(self._schedule_refresh),
            self.registry.on_problem(self._schedule_refresh),
        ]
        self._refresh_sources()
        switches = [switch for switch in self.query(Checkbox) if not switch.disabled]
        if switches:
            switches[0].focus()

    def on_unmount(self) -> None:
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []

    def _schedule_refresh(self, _change: object = None) -> None:
        """Safe from any task or thread: the refresh itself runs in the screen's message loop."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.post_message, RegistryChanged())

    @on(RegistryChanged)
    def _refresh_sources(self) -> None:
        for panel in self.query(SourcePanel):
            panel.show(self._view(panel.kind, panel.source_name))
        count = len(self.registry.definitions())
        self.query_one("#tools-summary", Static).update(
            literal(ngettext("{count} tool is on.", "{count} tools are on.", count).format(count=count))
        )
        if self.settings.saves_to_config:
            remember = _("Switches are saved to {file}.").format(file=self.settings.path)
        else:
            remember = _("Switches last for this session only ([tools] remember_switches in {file}).").format(
                file=self.settings.path
            )
        self.query_one("#tools-remember", Static).update(literal(remember))

    # --- what each source shows

    def _view(self, kind: SourceKind, name: str) -> SourceView:
        match kind:
            case SourceKind.BUILTIN:
                return SourceView(
                    title=_("Built-in tools"),
                    kind_and_state=_("always on"),
                    switched_on=True,
                    switchable=False,
                    failing=False,
                    reasons=(),
                    description="",
                    tools=self.registry.builtin_definitions(),
                )
            case SourceKind.PLUGIN:
                return self._plugin_view(name)
            case SourceKind.SERVER:
                return self._server_view(name)

    def _plugin_view(self, name: str) -> SourceView:
        state = next(plugin for plugin in self.registry.plugins() if plugin.name == name)
        reasons = tuple(problem.message() for problem in self._problems_of(name, active=state.enabled))
        configured = name in self.settings.configured.plugins
        return SourceView(
            title=state.title,
            kind_and_state=_("plugin · on") if state.enabled else _("plugin · off"),
            switched_on=state.enabled,
            switchable=True,
            failing=bool(reasons),
            reasons=reasons,
            description=state.description,
            tools=self.registry.plugin_definitions(name),
            against_config=_against_config(state.enabled, configured),
        )

    def _server_view(self, name: str) -> SourceView:
        status = next(server for server in self.registry.mcp_servers() if server.name == name)
        pending = self._pending.get(name)
        if pending is not None:
            state_text = _("MCP server · starting…") if pending else _("MCP server · stopping…")
            switched_on = pending
        elif status.state is ServerState.RUNNING:
            # TRANSLATORS: {transport} is "stdio" or "HTTP"; {revision} an MCP date, e.g. 2026-07-28.
            state_text = _("MCP server · running · {transport} · revision {revision}").format(
                transport=TRANSPORT_NAMES.get(status.transport, status.transport), revision=status.revision
            )
            switched_on = True
        else:
            state_text = {
                ServerState.STOPPED: _("MCP server · off"),
                ServerState.STARTING: _("MCP server · starting…"),
                ServerState.RESTARTING: _("MCP server · restarting"),
                ServerState.FAILED: _("MCP server · failed"),
            }[status.state]
            switched_on = status.state in ACTIVE_SERVER_STATES
        running = status.state is ServerState.RUNNING
        problems = self._problems_of(name, active=running)
        if running:
            # Running again: earlier start failures and restarts are over.
            problems = [problem for problem in problems if problem.kind is ProblemKind.DUPLICATE_TOOL]
        reasons = tuple(problem.message() for problem in problems)
        # The user's choice, not the process: a server switched on that failed is still on.
        on = name in self.registry.switches().servers
        tools = self.registry.server_definitions(name)
        last_seen = ""
        seen = None if running or tools else self.registry.server_last_seen(name)
        if seen is not None:
            tools = seen.tools
            # TRANSLATORS: {when} is a local date and time, e.g. 2026-12-03 14:05.
            last_seen = _("Last seen {when}; offered to the model only while the server runs.").format(
                when=seen.seen_at.astimezone().strftime("%Y-%m-%d %H:%M")
            )
        return SourceView(
            title=name,
            kind_and_state=state_text,
            switched_on=switched_on,
            switchable=True,
            failing=status.state is ServerState.FAILED or bool(reasons),
            reasons=reasons,
            description="",
            tools=tools,
            against_config=_against_config(on, name in self.settings.configured.servers),
            last_seen=last_seen,
        )

    def _problems_of(self, name: str, *, active: bool) -> list[SourceProblem]:
        """What went wrong with the source since the user last switched it, and, while it is on,
        its tools left out by a clash (reported once, but true as long as both sources are on)."""
        seen = self._problems_seen.get(name, 0)
        return [
            problem
            for number, problem in enumerate(self.registry.problems())
            if problem.source == name
            and (active if problem.kind is ProblemKind.DUPLICATE_TOOL else number >= seen)
        ]

    # --- switching

    @on(Checkbox.Changed, ".source-switch")
    def _switched(self, event: Checkbox.Changed) -> None:
        panel = next(ancestor for ancestor in event.checkbox.ancestors if isinstance(ancestor, SourcePanel))
        name, on_ = panel.source_name, event.value
        self._problems_seen[name] = len(self.registry.problems())
        if panel.kind is SourceKind.PLUGIN:
            if on_:
                self.registry.enable_plugin(name)
            else:
                self.registry.disable_plugin(name)
        elif panel.kind is SourceKind.SERVER:
            self._pending[name] = on_
            self.app.run_worker(self._switch_server(name, on_), group="tools-screen-servers")
        if self.settings.saves_to_config:
            self.app.run_worker(self._save(panel.kind, name, on_), group="tools-screen-saves")
        self._refresh_sources()

    async def _save(self, kind: SourceKind, name: str, on_: bool) -> None:
        app = self.app  # the screen may be closed by the time the file is written
        try:
            await self.settings.save(kind, name, on_)
        except ConfigError as error:
            # The switch holds for this session all the same; the panel says it differs.
            app.notify(str(error), title=_("The switch was not saved"), severity="error", timeout=10)
        self._schedule_refresh()

    async def _switch_server(self, name: str, on_: bool) -> None:
        try:
            if on_:
                await self.registry.start_mcp_server(name)
            else:
                await self.registry.stop_mcp_server(name)
        finally:
            self._pending.pop(name, None)
            self._schedule_refresh()


def _against_config(on: bool, configured: bool) -> str:
    if on == configured:
        return ""
    return _("on in this session · off in config") if on else _("off in this session · on in config")

"""The toolscope chat: a Textual app that runs the agent in a worker on its own event loop.

The app owns the runtime `toolscope run` assembles (route catalog, tool registry, session writer,
agent); the chat screen renders what the agent logs. Nothing here blocks the loop: the session is
opened and reduced in a thread, MCP servers start in the background, and a turn runs as an async
worker that Escape cancels (the loop then closes the log exactly as `run` does on Ctrl+C).
"""

from __future__ import annotations

import asyncio
import gc
import sys
from contextlib import suppress
from pathlib import Path
from time import monotonic
from typing import TYPE_CHECKING, Any

from textual import events
from textual.binding import Binding
from textual.signal import Signal
from textual.worker import Worker, WorkerCancelled, WorkerFailed

from app import i18n
from app.i18n import N_, _, ngettext
from app.session.errors import SessionError, SessionLockedError
from app.ui import keymap, slash
from app.ui.commands import EXPORT_COMMANDS, SCREEN_COMMANDS, SystemCommands
from app.ui.prompt_history import append_history, keeps, load_history
from app.ui.messages import ProblemReported, PromptSubmitted
from app.ui.palette import ChatCommands
from app.ui.screens.chat import ChatScreen
from app.ui.text import LiteralApp

QUIT_AGAIN_WITHIN = 4.0
"""Seconds in which a second quit key quits a chat that has queued prompts."""

if TYPE_CHECKING:
    # The agent, the LLM adapters (httpx), the tool registry (jsonschema, MCP) and the session
    # store are imported by the code that needs them, after the first frame is painted.
    from app.agent.loop import Agent
    from app.config import Config
    from app.llm.routes import RouteCatalog
    from app.report.prices import PriceBook
    from app.session.events import Envelope
    from app.session.session import Session
    from app.session.store import SessionWriter
    from app.session.view import SessionView
    from app.tools.registry import ToolRegistry
    from app.tools.source_state import SourceProblem
    from app.ui.bridge import ChatApprover, ChatListener
    from app.ui.screens.tools import SwitchSettings


class ChatOptions:
    """What `toolscope chat` resolved before the app starts (bad input fails there, as usage).
    A plain class (docs/decisions.md, *Plain classes*)."""

    def __init__(
        self,
        catalog: RouteCatalog,
        route_id: str,
        session_path: Path | None = None,
        config: Config | None = None,
        cwd: Path | None = None,
        agent_options: dict[str, Any] | None = None,
    ) -> None:
        self.catalog = catalog
        self.route_id = route_id
        self.session_path = session_path
        self.config = config
        self.cwd = cwd if cwd is not None else Path.cwd()
        self.agent_options = agent_options if agent_options is not None else {}
        """Extra `Agent` keyword arguments (tests pass a `sleep`)."""


class ToolscopeApp(LiteralApp[None]):
    TITLE = "toolscope"
    # The chat screen's own stylesheet, read with the app's: pushing the screen then finds it read
    # and does not parse the whole stylesheet again before the first frame.
    CSS_PATH = Path(__file__).parent / "screens" / "chat.tcss"
    COMMANDS = {SystemCommands, ChatCommands} | SCREEN_COMMANDS | EXPORT_COMMANDS
    BINDINGS = [
        Binding(keymap.QUIT, "quit", N_("Quit"), priority=True),
        Binding(keymap.TOOLS, "open_tools", N_("Tools")),
        Binding(keymap.ROUTES, "pick_route", N_("Route")),
        Binding(keymap.SESSIONS, "pick_session", N_("Sessions"), show=False),
        Binding(keymap.INSPECT, "inspect", N_("Inspect")),
        # Not in the footer, which is full: in the palette, /help and the README.
        Binding(keymap.TRAJECTORY, "open_trajectory", N_("Trajectory"), show=False),
        Binding(keymap.HELP, "help", N_("Help"), show=False),
    ]

    def __init__(self, options: ChatOptions) -> None:
        super().__init__()
        self.options = options
        self.catalog = options.catalog
        self.route = options.catalog.get(options.route_id)
        self.registry: ToolRegistry | None = None
        self.switch_settings: SwitchSettings | None = None
        self.writer: SessionWriter | None = None
        self.read_only: Session | None = None
        self._prices: PriceBook | None = None
        self.agent: Agent | None = None
        self._chat = ChatScreen()
        self._bridge: tuple[ChatListener, ChatApprover] | None = None
        self._turn: Worker[None] | None = None
        self._tools_ready = asyncio.Event()
        self._new_sequence_pending = False
        self._quit_asked = -QUIT_AGAIN_WITHIN
        self._quitting = False
        self.session_advanced: Signal[Envelope | None] = Signal(self, "session-advanced")
        """Published after the chat rendered a logged event (None: the whole session was replaced);
        live views of the session (trajectory, inspector) subscribe to it and re-read `view()`."""

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and self.screen is self._chat:
            self._chat.focus_prompt_for(event)
        await super().on_event(event)

    # --- start-up and shut-down --------------------------------------------------------------------

    def on_mount(self) -> None:
        # Pushed rather than the default screen, so its `.tcss` is loaded with it.
        self.push_screen(self._chat)

    def on_ready(self) -> None:
        """The first frame is on the screen: collect garbage again if `toolscope chat` paused the
        collector for its start-up, unless a resumed conversation is still to come (it needs no
        collection either: it is read and mounted just after, `_resume_then_start_tools`)."""
        if self.options.session_path is None:
            self._collect_garbage()

    @staticmethod
    def _collect_garbage() -> None:
        """What start-up built lives as long as the app, so it is frozen out of later collections
        (they stay short while a reply streams)."""
        if not gc.isenabled():
            gc.freeze()
            gc.enable()

    @property
    def chat(self) -> ChatScreen:
        return self._chat

    def start_runtime(self) -> None:
        """Called by the chat screen once it is mounted: tools, history and the session load behind it."""
        if self.registry is not None or self._tools_ready.is_set():
            return
        self.run_worker(self._load_history(), name="history", group="startup")
        if self.options.session_path is None:
            self.run_worker(self._start_tools(), name="tools", group="startup")
        else:
            self.run_worker(self._resume_then_start_tools(self.options.session_path), name="session", group="startup")

    async def _resume_then_start_tools(self, path: Path) -> None:
        """The resumed conversation is painted first; the tools start behind it (a prompt waits)."""
        try:
            await self._open_session(path)
        finally:
            self.call_after_refresh(self._collect_garbage)  # once the conversation is on the screen
        self.call_after_refresh(self.run_worker, self._start_tools, name="tools", group="startup")

    async def _start_tools(self) -> None:
        """The config's sources; a resumed session's are those of its last request instead."""
        from app.agent.runtime import build_registry, restore_switches
        from app.session.events import build_models
        from app.ui.screens.tools import SwitchSettings

        registry = build_registry(self.options.config, self.options.cwd)
        for problem in registry.problems():
            self._notify_problem(problem)
        registry.on_problem(lambda problem: self.post_message(ProblemReported(problem)))
        if self.session is not None:
            await restore_switches(registry, self.session)
        self.switch_settings = SwitchSettings.of(self.options.config)
        self.registry = registry
        try:
            # The event models' schemas are built while the servers start, not when the first
            # prompt is written.
            await asyncio.gather(registry.start(), asyncio.to_thread(build_models))
        finally:
            self._tools_ready.set()

    async def _load_history(self) -> None:
        prompts = await asyncio.to_thread(load_history)
        self.chat.load_prompts(prompts)

    async def _open_session(self, path: Path) -> None:
        """Resume `path` (reduced in a thread); a session another process writes opens read-only."""
        try:
            writer = await asyncio.to_thread(_open_writer, path)
        except SessionLockedError as error:
            self.notify(
                _("This session is being written by another toolscope; it is shown read-only.\n{reason}").format(
                    reason=error
                ),
                severity="warning",
                timeout=10,
            )
            session = await asyncio.to_thread(_load_session, path)
            self.read_only = session
            self.chat.show_read_only(True)
        except SessionError as error:
            self.notify(str(error), title=_("Cannot open the session"), severity="error", timeout=10)
            return
        else:
            self._report_repairs(writer)
            self.writer = writer
            session = writer.session
        await self.chat.show_session(session.path)

    def _report_repairs(self, writer: SessionWriter) -> None:
        if writer.torn_path is not None:
            self.notify(
                _("The last line of the session was incomplete (left by a crash); it was set aside in {path}.").format(
                    path=writer.torn_path
                ),
                severity="warning",
            )
        if writer.repaired:
            self.notify(_("The previous turn was left open by a crash; it is now closed as interrupted."), severity="warning")

    def prices(self) -> PriceBook:
        """The config's prices, made when first asked (after the first frame); a `[prices]` table
        that cannot apply is said, and the bundled ones used (the chat runs whatever its prices say)."""
        if self._prices is None:
            from app.config import ConfigError
            from app.report.prices import PriceBook

            try:
                self._prices = PriceBook.of(self.options.config)
            except ConfigError as error:
                self.notify(str(error), title=_("No prices from config.toml"), severity="error", timeout=10)
                self._prices = PriceBook.of(None)
        return self._prices

    @property
    def session(self) -> Session | None:
        """The session shown: the one this chat writes, or one shown read-only."""
        return self.writer.session if self.writer is not None else self.read_only

    def view(self) -> SessionView | None:
        session = self.session
        return session.view() if session is not None else None

    async def action_quit(self) -> None:
        queued = self.chat.queued_count if self.chat.is_attached else 0
        if queued and monotonic() - self._quit_asked > QUIT_AGAIN_WITHIN:
            # Queued prompts were typed to be sent: quitting drops them, so it is asked first.
            self._quit_asked = monotonic()
            self.notify(
                ngettext(
                    "{count} queued prompt would not be sent. Press {key} again to quit.",
                    "{count} queued prompts would not be sent. Press {key} again to quit.",
                    queued,
                ).format(count=queued, key=keymap.QUIT),
                severity="warning",
                timeout=QUIT_AGAIN_WITHIN,
            )
            return
        self._quitting = True
        await self._end_turn()
        self.exit()

    async def on_unmount(self) -> None:
        """However the app ends, the turn is closed in the log, servers stop, the lock is released."""
        self._quitting = True
        await self._end_turn()
        if self.agent is not None:
            await self.agent.aclose()
        if self.registry is not None:
            await self.registry.aclose()
        if self.writer is not None:
            self.writer.close()

    # --- turns -------------------------------------------------------------------------------------

    async def on_prompt_submitted(self, message: PromptSubmitted) -> None:
        text = message.text
        command = slash.find(text)
        if command is not None:
            await self.run_action(command.action)
            return
        if self.read_only is not None:
            self.notify(_("This session is read-only here."), severity="warning")
            return
        if keeps(text):
            self.run_worker(asyncio.to_thread(append_history, text), group="history")
        if self.turn_running:
            self.chat.queue(text)  # sent when the turn ends: a prompt is never thrown away
            return
        await self._start_turn(text)

    async def _start_turn(self, text: str) -> None:
        await self.chat.action_jump_to_end()  # the prompt sent and what follows it are shown
        self._turn = self.run_worker(self._run_turn(text), name="turn", group="turn", exit_on_error=False)

    async def _send_queued(self) -> None:
        """The oldest queued prompt, once no turn runs (a cancelled turn keeps the queue going)."""
        if self.turn_running or self.read_only is not None or self._quitting:
            return  # a queue left when the app closes was confirmed away (`action_quit`)
        text = self.chat.take_queued()
        if text is not None:
            await self._start_turn(text)

    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "turn" and event.worker.is_finished:
            await self._send_queued()

    async def _run_turn(self, text: str) -> None:
        await self._tools_ready.wait()
        try:
            agent = await self._ensure_agent()
            result = await agent.run_turn(text)
        except asyncio.CancelledError:
            raise
        except SessionError as error:
            self.notify(str(error), title=_("Session error"), severity="error", timeout=10)
            return
        except Exception as error:  # an unexpected failure must not kill the chat
            self.notify(f"{type(error).__name__}: {error}", title=_("The turn failed"), severity="error", timeout=10)
            return
        if result.failure is not None:
            self.notify(result.failure.message, title=result.failure.code, severity="error", timeout=8)

    @property
    def bridge(self) -> tuple[ChatListener, ChatApprover]:
        """How the agent reaches the chat screen: its listener and approver (one approver for the
        app's life, so "allow for this session" outlives a resumed session's new agent)."""
        if self._bridge is None:
            from app.ui.bridge import ChatApprover, ChatListener

            self._bridge = ChatListener(self._chat), ChatApprover(self._chat)
        return self._bridge

    async def _ensure_agent(self) -> Agent:
        if self.agent is None:
            from app.agent.loop import Agent
            from app.agent.runtime import compaction_settings, system_prompt
            from app.session.store import SessionStore

            if self.writer is None:
                # A new chat's log is created with its first prompt, so opening and quitting leaves nothing.
                self.writer = await asyncio.to_thread(SessionStore().create, self.options.cwd)
            assert self.registry is not None
            listener, approver = self.bridge
            self.agent = Agent(
                self.writer,
                self.registry,
                self.catalog,
                self.route.id,
                approver=approver,
                system=system_prompt(self.options.cwd),
                listener=listener,
                compaction=compaction_settings(self.options.config),
                **self.options.agent_options,
            )
            if self._new_sequence_pending:
                self.agent.new_sequence()
                self._new_sequence_pending = False
        return self.agent

    async def _end_turn(self) -> None:
        worker = self._turn
        if worker is None or worker.is_finished:
            return
        worker.cancel()
        with suppress(WorkerCancelled, WorkerFailed):
            await worker.wait()

    def cancel_turn(self) -> None:
        if self._turn is not None and self._turn.is_running:
            self._turn.cancel()
            self.notify(_("Turn cancelled; the partial answer is kept."), timeout=3)

    @property
    def turn_running(self) -> bool:
        return self._turn is not None and self._turn.is_running

    # --- actions (keys, slash commands, the palette) ------------------------------------------------

    def switch_route(self, route_id: str) -> None:
        self.route = self.catalog.get(route_id)
        if self.agent is not None:
            self.agent.switch_route(route_id)
        self.chat.show_route(self.route)
        self.notify(_("Route: {route}").format(route=self.route.display_label), timeout=3)

    def action_new_sequence(self) -> None:
        if self.agent is not None:
            self.agent.new_sequence()
        else:
            self._new_sequence_pending = True
        self.notify(_("The next request starts a new projection sequence."), timeout=4)

    def action_compact(self) -> None:
        if self.turn_running:
            self.notify(_("A turn is still running; Escape cancels it."), severity="warning")
            return
        self._turn = self.run_worker(self._compact(), name="compact", group="turn", exit_on_error=False)

    async def _compact(self) -> None:
        from app.agent.loop import CompactionError

        await self._tools_ready.wait()
        if self.read_only is not None:
            self.notify(_("This session is read-only here."), severity="warning")
            return
        agent = await self._ensure_agent()
        self.notify(_("Compacting the conversation…"), timeout=3)
        try:
            await agent.compact()
        except CompactionError as error:
            self.notify(error.failure.message, title=_("Compaction failed"), severity="error", timeout=8)

    def action_inspect(self) -> None:
        """The inspector on the latest request, following the session as it is logged."""
        from app.report.prices import PriceBook
        from app.ui.screens.inspector import InspectorScreen

        self.push_screen(InspectorScreen(follow_latest=True, prices=PriceBook.of(self.options.config)))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """On the inspector, its own key does not open another one (nor shows in the footer)."""
        # Asked without importing the inspector (the request reports, httpx): until it was
        # imported, no screen is one.
        inspector = sys.modules.get("app.ui.screens.inspector")
        if action == "inspect" and inspector is not None and isinstance(self.screen, inspector.InspectorScreen):
            return False
        return super().check_action(action, parameters)

    def action_export(self, fmt: str) -> None:
        """Export the session (`md`, `html`, `json`) where the user says, offering the working
        directory."""
        from app.ui.exporting import ask_and_export

        session = self.session
        ask_and_export(
            self, (session.id, session.path) if session is not None else None, list(self.catalog), fmt, self.options.cwd
        )

    async def action_switch_language(self) -> None:
        language = "en" if i18n.current_language() == "zh_CN" else "zh_CN"
        i18n.set_language(language)
        await self.rerender()

    async def rerender(self) -> None:
        """Build the chat's texts again in the current language, from the log."""
        chat = self.chat
        await chat.recompose()  # its status line reads the route and the read-only state again
        session = self.session
        await chat.show_session(session.path if session is not None else None)
        chat.focus_composer()

    def action_help(self) -> None:
        from app.ui.screens.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss(None)
        else:
            self.push_screen(HelpScreen())

    def action_open_tools(self) -> None:
        if self.registry is None or self.switch_settings is None:
            self.notify(_("The tools are still starting."), timeout=3)
            return
        from app.ui.screens.tools import ToolsScreen

        self.push_screen(ToolsScreen(self.registry, self.switch_settings))

    def action_open_trajectory(self) -> None:
        """The trajectory of this session over the chat; it follows the session as it grows."""
        from app.trajectory.source import LiveSource
        from app.ui.trajectory.screen import TrajectoryScreen

        if isinstance(self.screen, TrajectoryScreen):
            return
        self.push_screen(TrajectoryScreen(LiveSource(self.view)))

    def action_pick_route(self) -> None:
        from app.ui.screens.route_picker import RoutePickerScreen

        def chosen(route_id: str | None) -> None:
            if route_id:
                self.switch_route(route_id)

        self.push_screen(RoutePickerScreen(self.catalog, self.route.id), chosen)

    def action_pick_session(self) -> None:
        from app.session.listing import list_sessions
        from app.ui.screens.session_picker import SessionPickerScreen

        def chosen(path: str | None) -> None:
            if path:
                self.run_worker(self.resume(Path(path)), group="session", exclusive=True)

        self.push_screen(SessionPickerScreen(list_sessions), chosen)

    async def resume(self, path: Path) -> None:
        """Leave the current session (after any running turn ends) and open `path`."""
        if self.turn_running:
            self.notify(_("A turn is still running; Escape cancels it."), severity="warning")
            return
        if self.agent is not None:
            await self.agent.aclose()
            self.agent = None
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        self.read_only = None
        self.chat.show_read_only(False)
        await self._open_session(path)
        if self.registry is not None and self.session is not None:
            # Tools still starting read the session themselves (`_start_tools`).
            from app.agent.runtime import restore_switches

            await restore_switches(self.registry, self.session)

    # --- problems ----------------------------------------------------------------------------------

    def on_problem_reported(self, message: ProblemReported) -> None:
        self._notify_problem(message.problem)

    def _notify_problem(self, problem: SourceProblem) -> None:
        self.notify(problem.message(), title=_("Tools"), severity="warning", timeout=10)


def _open_writer(path: Path) -> SessionWriter:
    """Open `path` for writing, importing the session store here: in a thread, the chat keeps
    answering while pydantic and the event models load."""
    from app.session.store import SessionStore

    return SessionStore().open_writer(path)


def _load_session(path: Path) -> Session:
    from app.session.session import Session

    return Session.open(path).load()


def run_chat(options: ChatOptions) -> int:
    """The chat until it is quit; 1 when it ended on an error (Textual has shown it)."""
    app = ToolscopeApp(options)
    app.run()
    return app.return_code or 0

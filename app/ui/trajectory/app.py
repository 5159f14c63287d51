"""`toolscope view`: the Trajectory of one session, or the session picker first.

A small App of its own rather than the chat in a view mode: browsing needs no route, tool
registry, MCP servers or session writer, so nothing is started, locked or repaired, and a session
another process is writing opens as it is (`docs/decisions.md`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.binding import Binding

from app.i18n import N_, _
from app.llm.routes import RouteCatalog
from app.session.listing import SessionSummary
from app.trajectory.source import SessionFileSource, TrajectorySource
from app.ui import keymap
from app.ui.commands import EXPORT_COMMANDS, SystemCommands
from app.ui.text import LiteralApp
from app.ui.trajectory.screen import TrajectoryScreen, TrajectorySessionPicker

if TYPE_CHECKING:
    from textual.signal import Signal

    from app.session.events import Envelope
    from app.session.view import SessionView


class TrajectoryApp(LiteralApp[None]):
    TITLE = "toolscope view"  # the command's name, which stays `view` (docs/decisions.md)
    COMMANDS = {SystemCommands} | EXPORT_COMMANDS
    BINDINGS = [Binding(keymap.QUIT, "quit", N_("Quit"), priority=True)]
    session_advanced: Signal[Envelope | None] | None = None
    """A file browsed does not grow while it is shown (`app.ui.contract.SessionHost`)."""

    def __init__(
        self,
        source: TrajectorySource | None = None,
        sessions: list[SessionSummary] | None = None,
        catalog: RouteCatalog | None = None,
    ) -> None:
        """With a `source`, its trajectory; otherwise the picker over `sessions` first. `catalog`
        holds the routes the inspector compares (default: the built-in routes)."""
        super().__init__()
        if catalog is None:
            from app.agent.runtime import catalog_from

            catalog = catalog_from(None)
        self.catalog = catalog
        self._source = source
        self._sessions = sessions or []

    def on_mount(self) -> None:
        if self._source is not None:
            self.push_screen(TrajectoryScreen(self._source), lambda _result: self.exit())
        else:
            self._pick()

    def _pick(self) -> None:
        self.push_screen(TrajectorySessionPicker(self._sessions), self._chosen)

    def _chosen(self, path: str | None) -> None:
        if not path:
            self.exit()
            return
        # Read by the screen's worker: a file that turns out unreadable is reported there.
        self.push_screen(TrajectoryScreen(SessionFileSource(Path(path))), lambda _result: self._pick())

    def _trajectory(self) -> TrajectoryScreen | None:
        """The trajectory being browsed (under the screens over it), if any."""
        return next((screen for screen in reversed(self.screen_stack) if isinstance(screen, TrajectoryScreen)), None)

    def view(self) -> SessionView | None:
        """The session being browsed, as the inspector over the trajectory reads it."""
        trajectory = self._trajectory()
        return trajectory.model.view if trajectory is not None else None

    def action_export(self, fmt: str) -> None:
        """Export the session being browsed (`md`, `html`, `json`) where the user says, offering the
        working directory, as the chat's palette does."""
        from app.ui.exporting import ask_and_export

        trajectory = self._trajectory()
        if trajectory is None or not isinstance(trajectory.source, SessionFileSource):
            self.notify(_("Open a session first: the export is of the session being browsed."), severity="warning")
            return
        session = (trajectory.source.session_id, trajectory.source.path)
        ask_and_export(self, session, list(self.catalog), fmt, Path.cwd())


def run_trajectory(
    source: TrajectorySource | None,
    sessions: list[SessionSummary] | None = None,
    catalog: RouteCatalog | None = None,
) -> int:
    app = TrajectoryApp(source, sessions, catalog)
    app.run()
    return app.return_code or 0

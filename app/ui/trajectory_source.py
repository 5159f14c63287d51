"""Where the trajectory viewer's session view comes from: the one place it reads a session.

`SessionFileSource` reads a log file (call `load` in a worker thread: it parses and reduces every
event); `LiveSource` hands over the chat's own, already reduced view. When the indexed reader for
large sessions lands, only `SessionFileSource` changes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app.session.session import Session
from app.session.view import SessionView


class SessionFileSource:
    live = False

    def __init__(self, session: Session) -> None:
        self.session = session

    @classmethod
    def open(cls, path: Path) -> SessionFileSource:
        """Read the file and check its header (raises `SessionError`); events are parsed by `load`."""
        return cls(Session.open(path))

    @property
    def session_id(self) -> str:
        return self.session.id

    @property
    def size(self) -> int:
        return self.session.path.stat().st_size

    def load(self) -> SessionView:
        """Parse, validate and reduce every event (slow on a large log: run it in a thread)."""
        return self.session.load().view()


class LiveSource:
    """The session the chat is writing: its view is reduced as events are logged, on the UI loop."""

    live = True

    size = 0

    def __init__(self, view: Callable[[], SessionView | None]) -> None:
        self._view = view

    @property
    def session_id(self) -> str:
        view = self._view()
        return view.header.id if view is not None else ""

    def load(self) -> SessionView | None:
        return self._view()


TrajectorySource = SessionFileSource | LiveSource

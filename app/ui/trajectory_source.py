"""Where the trajectory viewer's session view comes from: the one place it reads a session.

`SessionFileSource` reads a log file through its line index (call `load`, then `validate`, in
worker threads: the first folds every event, the second checks the whole log's invariants);
`LiveSource` hands over the chat's own, already reduced view. A trajectory that reads rows lazily
from the index, for million-event logs, changes only `SessionFileSource`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app.session.session import Session
from app.session.view import SessionView


class SessionFileSource:
    live = False

    def __init__(self, path: Path, session: Session | None = None) -> None:
        """Nothing is read yet unless `session` is given: `load` reads it (in a worker thread)."""
        self.path = path
        self.session = session

    @classmethod
    def open(cls, path: Path) -> SessionFileSource:
        """Read the file and check its header now (raises `SessionError`); events are parsed by
        `load`. The command line uses this so a bad file fails before the interface starts."""
        return cls(path, Session.open(path))

    @property
    def session_id(self) -> str:
        return self.session.id if self.session is not None else self.path.stem

    @property
    def size(self) -> int:
        return self.path.stat().st_size

    def load(self) -> SessionView:
        """The session folded from its line index, each line strictly (slow on a large log: call it
        in a worker thread); the validation of the whole log against its invariants is
        `validate`'s, in another worker."""
        if self.session is None:
            self.session = Session.open(self.path)
        return self.session.folded_view()

    def validate(self, progress: Callable[[int, int], None]) -> None:
        """Every line strictly and against the invariants (a worker thread); raises
        `SessionCorruptionError` naming the file and line."""
        if self.session is None:
            self.session = Session.open(self.path)
        self.session.validate(progress)


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

    def validate(self, progress: Callable[[int, int], None]) -> None:
        """Nothing to do: the chat's own writer validated the log when it opened it."""


TrajectorySource = SessionFileSource | LiveSource

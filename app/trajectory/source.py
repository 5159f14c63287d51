"""Where the trajectory's session comes from: the one place it reads a session.

`SessionFileSource` reads a log file lazily through its line index (`trajectory`, in a worker
thread: it indexes the file first, with progress, when its index is missing or stale; then
`validate` checks the whole log's invariants in another); `LiveSource` hands over the chat's own,
already reduced view.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app.i18n import _
from app.session.errors import SessionCorruptionError, SessionNotFoundError
from app.session.background_scans import index_is_current, index_with_progress, validate_elsewhere
from app.session.reader import parse_header_line
from app.session.session import Session
from app.session.view import SessionView
from app.trajectory.indexed import IndexedTrajectory

CHECK_AT_ONCE = 20_000
"""Events up to which a file is parsed whole and classified before it is shown (a corrupt line
fails the opening, as a full fold would); beyond, both go on behind the trajectory."""


class SessionFileSource:
    live = False

    def __init__(self, path: Path, session: Session | None = None) -> None:
        """Nothing is read yet unless `session` is given: `trajectory` reads it (in a worker thread)."""
        self.path = path
        self.session = session

    @classmethod
    def open(cls, path: Path) -> SessionFileSource:
        """Check the file's header now (raises `SessionError`), so a bad file fails before the
        interface starts; a file whose line index is current is opened too (that is quick). One
        without is indexed by `trajectory`, where the screen shows how far the scan got."""
        if index_is_current(path):
            return cls(path, Session.open(path))
        try:
            with path.open("rb") as handle:
                first_line = handle.readline()
        except FileNotFoundError:
            raise SessionNotFoundError(str(path)) from None
        if not first_line:
            raise SessionCorruptionError(path, 1, _("missing session header: the file is empty"))
        parse_header_line(path, first_line.rstrip(b"\n"))
        return cls(path)

    @property
    def session_id(self) -> str:
        return self.session.id if self.session is not None else self.path.stem

    @property
    def size(self) -> int:
        return self.path.stat().st_size

    def trajectory(self, progress: Callable[[int, int], None] | None = None) -> IndexedTrajectory:
        """The session's trajectory, read lazily (call it in a worker thread): `progress(bytes,
        size)` reports the index scan when there is one to do. A small session is checked and classified
        here, a large one behind what the screen shows."""
        if self.session is None:
            if progress is not None and not index_is_current(self.path):
                index_with_progress(self.path, progress)
            self.session = Session.open(self.path)
        trajectory = IndexedTrajectory(self.session)
        if trajectory.last_seq < CHECK_AT_ONCE:
            trajectory.check()
            trajectory.classify()
        # The last turn, where the screen opens, is folded here rather than on the interface's
        # thread: in a file never folded that means the checkpoints up to it too (seconds on a
        # million events).
        trajectory.segment(trajectory.segment_number(trajectory.last_seq))
        return trajectory

    def validate(self, progress: Callable[[int, int], None]) -> None:
        """Every line strictly and against the invariants (a worker thread); raises
        `SessionCorruptionError` naming the file and line. A large session is validated by another
        process (`validate_elsewhere`), so the interface keeps its interpreter and its memory."""
        if self.session is None:
            self.session = Session.open(self.path)
        if self.session.last_seq < CHECK_AT_ONCE or self.session.validated:
            self.session.validate(progress)
        else:
            validate_elsewhere(self.path, progress)


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

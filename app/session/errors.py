"""Errors a session file can raise. Each names the file, the line (1-based) and the reason."""

from __future__ import annotations

from pathlib import Path


class SessionError(Exception):
    """Base class: an expected failure the CLI and UI report without a traceback."""


class SessionFileError(SessionError):
    def __init__(self, path: Path | str, line: int | None, reason: str) -> None:
        self.path = Path(path)
        self.line = line
        self.reason = reason
        where = f"{self.path}:{line}" if line is not None else str(self.path)
        super().__init__(f"{where}: {reason}")


class SessionCorruptionError(SessionFileError):
    """The file is not a valid session log (bad JSON, broken invariant, …)."""


class UnsupportedFormatError(SessionFileError):
    """The file is a session log of a version or with an event type this build does not know."""


class SessionLockedError(SessionError):
    """Another writer holds the session; it may still be opened read-only."""

    def __init__(self, path: Path | str, reason: str | None = None) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}" if reason else str(self.path))


class SessionInUseError(SessionLockedError):
    """The session cannot be removed: another process writes it, or forks need its events."""


class SessionNotFoundError(SessionError):
    """No session file for `ref` (an id under the sessions dir, or a path)."""

    def __init__(self, ref: str) -> None:
        from app.i18n import _

        self.ref = ref
        super().__init__(_("no session {ref} (neither a session id nor a file)").format(ref=ref))


class StaleIndexError(SessionError):
    """The file no longer matches its line index: it changed while it was read, or it is not what
    the index of its first lines was taken from. Never blamed on the session: reopening indexes it
    again (`Session.validation` does so by itself)."""

    def __init__(self, path: Path | str) -> None:
        from app.i18n import _

        self.path = Path(path)
        super().__init__(_("{path}: the file changed while it was read; open it again").format(path=self.path))

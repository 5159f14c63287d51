"""The session store and its only writer (docs/architecture.md §4): create, fork, lock, append, commit, repair.

A line is written with one `os.write` on an O_APPEND descriptor and committed with `fsync`. Nothing
ever rewrites a line: opening for writing may only cut a torn last line (after copying it aside),
add a missing final newline, and append the synthetic events that close a turn a crash left open.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from app.i18n import _
from app.paths import ensure_private_dir, sessions_dir
from app.session.errors import SessionInUseError, SessionLockedError, SessionNotFoundError
from app.session.ids import FORMAT_VERSION, SESSION_ID_PATTERN, session_file
from app.session.invariants import InvalidEventError, PendingCall
from app.session.lazy_events import events  # imported by the first event written, not to open a log
from app.session.line_index import index_path
from app.session.reader import EventLineError, decode_event_line
from app.session.session import Session

if TYPE_CHECKING:
    from pydantic import BaseModel

# A crash between these and the next commit point could lose a decision the log must keep: a
# `tool/call` is committed before the tool runs, so repair can tell "not started" from "unknown".
COMMIT_TYPES = frozenset({"assistant/message", "tool/call", "tool/result", "turn/end"})
TOOL_NOT_STARTED = "TOOL_NOT_STARTED"
TOOL_OUTCOME_UNKNOWN = "TOOL_OUTCOME_UNKNOWN"
FILE_MODE = 0o600
HEADER_LIMIT = 64 * 1024


class SessionStore:
    """The directory of session logs (`<data dir>/sessions`, mode 0700)."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = _make_private_dirs(directory if directory is not None else sessions_dir())

    def path_for(self, session_id: str) -> Path:
        if not SESSION_ID_PATTERN.fullmatch(session_id):
            raise ValueError(_("{id!r} is not a valid session id").format(id=session_id))
        return self.directory / f"{session_id}.jsonl"

    def paths(self) -> list[Path]:
        """The session files of the store, oldest first (ids sort by creation time)."""
        return sorted(self.directory.glob("*.jsonl"))

    def resolve(self, ref: str | Path) -> Path:
        """The file of a session given by id (in this store) or by path."""
        return session_file(self.directory, ref)

    def create(self, cwd: Path | str, parent: events.ParentRef | None = None) -> SessionWriter:
        """A new, empty session (inheriting `parent`'s events 0..seq if given), open for writing."""
        if parent is not None:
            parent_path = self.path_for(parent.id)
            if not parent_path.is_file():
                raise SessionNotFoundError(parent.id)
            _check_fork_point(Session.open(parent_path), parent.seq)
        return _create(self.directory, cwd, parent)

    def fork(
        self, ref: str | Path, seq: int | None = None, *, cwd: Path | str | None = None
    ) -> SessionWriter:
        """A child of `ref` inheriting its events up to `seq` (default: its last event).

        The child is created next to the parent file, where readers look for the parent.
        """
        path = self.resolve(ref)
        parent = Session.open(path)
        if path.name != f"{parent.id}.jsonl":
            raise ValueError(
                _("cannot fork {path}: its file name does not match its session id {id}").format(
                    path=path, id=parent.id
                )
            )
        if parent.last_seq < 0:
            raise ValueError(_("cannot fork session {id}: it has no events").format(id=parent.id))
        fork_seq = parent.last_seq if seq is None else seq
        _check_fork_point(parent, fork_seq)
        return _create(
            path.parent,
            parent.header.cwd if cwd is None else cwd,
            events.ParentRef(id=parent.id, seq=fork_seq),
        )

    def open_writer(self, ref: str | Path) -> SessionWriter:
        return SessionWriter.open(self.resolve(ref))

    def find(self, session_id: str) -> Path:
        """The file of the session `session_id` of this store (an id only, never a path)."""
        path = self.directory / f"{session_id}.jsonl"
        if not SESSION_ID_PATTERN.fullmatch(session_id) or not path.is_file():
            raise SessionNotFoundError(session_id)
        return path

    def remove(self, session_id: str) -> None:
        """Delete the session `session_id` of this store, the torn lines set aside from it and its
        line index.

        Refused while another process holds its writer lock (the lock is held until the file is
        gone), and while a fork of it needs its events.
        """
        path = self.find(session_id)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            raise SessionNotFoundError(session_id) from None
        try:
            _lock(fd, path, _("the session is open for writing elsewhere; close it first"))
            forks = self.forks_of(session_id)
            if forks:
                raise SessionInUseError(
                    path,
                    _("sessions forked from it need its events: {ids}").format(ids=", ".join(forks)),
                )
            for torn in path.parent.glob(f"{path.name}.torn-*"):
                torn.unlink(missing_ok=True)
            index_path(path).unlink(missing_ok=True)
            path.unlink()
            _fsync_dir(path.parent)
        finally:
            os.close(fd)

    def forks_of(self, session_id: str) -> list[str]:
        """The ids of the sessions of this store whose header names `session_id` as the parent."""
        forks = []
        for path in self.paths():
            try:
                with path.open("rb") as handle:
                    header = json.loads(handle.readline(HEADER_LIMIT))
            except (OSError, ValueError):
                continue  # not a readable session: it needs nothing
            parent = header.get("parent") if isinstance(header, dict) else None
            if isinstance(parent, dict) and parent.get("id") == session_id:
                forks.append(path.stem)
        return forks


class SessionWriter:
    """The one writer of a session: holds an exclusive lock on the file until `close()`.

    On open it sets a torn last line aside (`torn_path`), adds a missing final newline, reads the log
    strictly, and closes a turn a crash left open (`repaired`). `session` follows every append.
    """

    def __init__(self, path: Path, fd: int) -> None:
        """Take over `fd`: the session file opened O_RDWR | O_APPEND and already locked."""
        self.path = path
        self._fd: int | None = fd
        self._uncommitted = False
        try:
            # Read strictly before changing anything: a corrupt log is refused as it is.
            self.session = Session.open(path).load()
            self.torn_path = self._set_torn_tail_aside()
            if self.torn_path is not None or self._terminate_last_line():
                self.session = Session.open(path).load()
            self._size = os.fstat(fd).st_size
            self.repaired = self._close_interrupted_turn()
        except BaseException:
            self._release()
            raise

    @classmethod
    def open(cls, path: Path | str) -> SessionWriter:
        path = Path(path)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
        try:
            _lock(fd, path)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd)

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def header(self) -> events.SessionHeader:
        return self.session.header

    @property
    def closed(self) -> bool:
        return self._fd is None

    @property
    def next_seq(self) -> int:
        return self.session.invariants.next_seq

    def append(
        self, type_: str, data: BaseModel | Mapping[str, Any], *, commit: bool = False
    ) -> events.Event:
        """Append one event (seq and time assigned here). Raises InvalidEventError, writing nothing,
        if the event is malformed or breaks an invariant.

        Commits when `commit` is true or the type is a commit point (COMMIT_TYPES).
        """
        fd = self._require_open()
        event = self._build(type_, data)
        reason = self.session.invariants.check(event)
        if reason is not None:
            raise InvalidEventError(reason)
        line = events.encode_event(event)
        try:
            written = os.write(fd, line)
            if written != len(line):
                raise OSError(errno.EIO, _("short write to {path}").format(path=self.path))
        except OSError:
            # Cut the partial line so that the next append does not run into it.
            os.ftruncate(fd, self._size)
            raise
        self._size += written
        self._uncommitted = True
        self.session.extend((event,))
        if commit or type_ in COMMIT_TYPES:
            self.commit()
        return event

    def commit(self) -> None:
        """Make every appended event durable (fsync)."""
        fd = self._require_open()
        if self._uncommitted:
            os.fsync(fd)
            self._uncommitted = False

    def close(self) -> None:
        """Commit what is pending, keep the line index for the next open, release the lock. Safe to
        call twice."""
        if self._fd is None:
            return
        try:
            self.commit()
            self.session.save_index()
        finally:
            self._release()

    def _release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> SessionWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # --- internals -----------------------------------------------------------------------------------

    def _require_open(self) -> int:
        if self._fd is None:
            raise ValueError(_("the session writer for {path} is closed").format(path=self.path))
        return self._fd

    def _build(self, type_: str, data: BaseModel | Mapping[str, Any]) -> events.Event:
        """Validate the event exactly as a reader will: through its encoded line."""
        if type_ not in events.EVENT_TYPES:
            raise InvalidEventError(_("unknown event type {type!r}").format(type=type_))
        payload = (
            dict(data)
            if isinstance(data, Mapping)
            else data.model_dump(mode="json", by_alias=True, exclude_none=True)
        )
        envelope = {"type": type_, "seq": self.next_seq, "time": time.time_ns() // 1_000_000, "data": payload}
        try:
            return decode_event_line(json.dumps(envelope, ensure_ascii=False).encode())
        except EventLineError as error:
            raise InvalidEventError(error.reason) from None

    def _set_torn_tail_aside(self) -> Path | None:
        """Copy a torn last line to `<id>.jsonl.torn-<n>`, then cut it from the session file."""
        torn = self.session.torn
        if torn is None:
            return None
        assert self._fd is not None
        torn_path = _write_new_file(self.path, torn.data)
        os.ftruncate(self._fd, torn.offset)
        os.fsync(self._fd)
        return torn_path

    def _terminate_last_line(self) -> bool:
        """Add the newline a complete last line lacks; True if one was added."""
        assert self._fd is not None
        size = os.fstat(self._fd).st_size
        if os.pread(self._fd, 1, size - 1) == b"\n":
            return False
        os.write(self._fd, b"\n")
        os.fsync(self._fd)
        return True

    def _close_interrupted_turn(self) -> tuple[events.Event, ...]:
        """Close a turn a crash left open: answer its orphaned calls, end the step, end the turn."""
        invariants = self.session.invariants
        turn, step = invariants.open_turn, invariants.open_step
        if turn is None:
            return ()
        repaired: list[events.Event] = []
        if step is not None:
            for call in invariants.pending_calls():
                if call.started:
                    repaired.append(self.append("tool/result", _unknown_outcome(turn, step, call)))
                else:
                    repaired.append(self.append("tool/call", _call_of(turn, step, call)))
                    repaired.append(self.append("tool/result", _not_started(turn, step, call)))
            repaired.append(self.append("step/end", events.StepData(turn=turn, step=step)))
        repaired.append(self.append("turn/end", events.TurnEndData(turn=turn, reason="interrupted")))
        return tuple(repaired)


# --- helpers -----------------------------------------------------------------------------------------


def new_session_id() -> str:
    """`YYYYmmdd-HHMMSS-<6 hex>` in UTC: sorts by creation time, unique with O_EXCL."""
    import secrets  # (with `hmac` and `hashlib`: not for opening a log)

    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def _create(directory: Path, cwd: Path | str, parent: events.ParentRef | None) -> SessionWriter:
    while True:
        session_id = new_session_id()
        path = directory / f"{session_id}.jsonl"
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
        except FileExistsError:
            continue
        break
    try:
        os.fchmod(fd, FILE_MODE)  # the umask may have taken bits away
        _lock(fd, path)
        header = events.SessionHeader(
            version=FORMAT_VERSION,
            id=session_id,
            created_at=time.time_ns() // 1_000_000,
            cwd=str(cwd),
            parent=parent,
        )
        os.write(fd, events.encode_header(header))
        os.fsync(fd)
        _fsync_dir(directory)
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise
    return SessionWriter(path, fd)


def _check_fork_point(parent: Session, seq: int) -> None:
    """A fork inherits validated events only: the parent is read strictly up front."""
    parent.load()
    last = parent.last_seq
    if not 0 <= seq <= last:
        raise ValueError(
            _("cannot fork session {id} at seq {seq}: its events are 0..{last}").format(
                id=parent.id, seq=seq, last=last
            )
        )


def _lock(fd: int, path: Path, reason: str | None = None) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SessionLockedError(
            path,
            reason or _("the session is open for writing elsewhere; it can still be opened read-only"),
        ) from None


def _write_new_file(session_path: Path, data: bytes) -> Path:
    """Write `data` durably to the first free `<session file>.torn-<n>` (mode 0600)."""
    number = 1
    while True:
        torn_path = session_path.with_name(f"{session_path.name}.torn-{number}")
        try:
            fd = os.open(torn_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
        except FileExistsError:
            number += 1
            continue
        break
    try:
        os.fchmod(fd, FILE_MODE)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    _fsync_dir(session_path.parent)
    return torn_path


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_private_dirs(directory: Path) -> Path:
    """Create `directory` and each missing parent with mode 0700, whatever the umask."""
    missing = []
    for candidate in (directory, *directory.parents):
        if candidate.exists():
            break
        missing.append(candidate)
    for path in reversed(missing):
        path.mkdir(mode=0o700, exist_ok=True)
        path.chmod(0o700)
    return ensure_private_dir(directory)


def _call_of(turn: int, step: int, call: PendingCall) -> events.ToolCallData:
    return events.ToolCallData(turn=turn, step=step, call_id=call.call_id, name=call.name, arguments=call.arguments)


# The texts below are log content the model reads on the next request, not interface text: they
# stay in English whatever the interface language.
def _not_started(turn: int, step: int, call: PendingCall) -> events.ToolResultData:
    message = "The session ended before this tool call was started; the tool did not run."
    return _error_result(turn, step, call, message, TOOL_NOT_STARTED)


def _unknown_outcome(turn: int, step: int, call: PendingCall) -> events.ToolResultData:
    message = "The session ended while this tool was running; its outcome is unknown."
    return _error_result(turn, step, call, message, TOOL_OUTCOME_UNKNOWN)


def _error_result(turn: int, step: int, call: PendingCall, message: str, code: str) -> events.ToolResultData:
    return events.ToolResultData(
        turn=turn, step=step, call_id=call.call_id, name=call.name, content=message, is_error=True,
        error=events.ToolError(code=code, message=message),
    )

"""Where an export is written (`-o FILE`), decided by what FILE is, never by replacing it blindly
(`docs/export.md`):

- no `-o`, or `-`: standard output;
- `/dev/stdout`, `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N` (or a symlink to one): the process's
  own descriptor N, written to as a shell's `>/dev/fd/N` does (nothing opened anew or truncated);
- a regular file, or a path that does not exist: a private temporary file beside it, renamed over
  it when complete, so an old file is replaced whole or not at all (mode 0600: an export holds the
  whole conversation); a symlink is followed, and the file it leads to is the one replaced;
- a FIFO or a character device (a terminal, `/dev/null`): opened and written through, never
  replaced, so a reader of the pipe gets the export and a device stays the device;
- anything else (a directory, a socket, a block device): refused, naming what it is.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from app.i18n import _

FILE_MODE = 0o600
_LINK_HOPS = 40  # as the kernel's ELOOP limit
_OWN_DESCRIPTOR = re.compile(r"/(?:dev|proc/(self|thread-self|\d+))/fd/(\d+)")
_STANDARD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


class TargetRefused(OSError):
    """`-o` names something an export is not written onto (`strerror` says what it is)."""


class ReaderGone(Exception):
    """Standard output's reader has closed the pipe (`… | head`): nothing more is wanted."""


class Lines:
    """An export's text, written to `stream` as it is made, in blocks of about 64 KiB. `append`
    adds a line (and its newline); with `trim_end`, blank lines wait for a line of text to follow
    them, so the document ends with its last line of text."""

    BLOCK = 1 << 16

    def __init__(self, stream: TextIO, *, trim_end: bool = False) -> None:
        self._stream = stream
        self._trim_end = trim_end
        self._pieces: list[str] = []
        self._size = 0
        self._blank = 0

    def write(self, text: str) -> None:
        self._pieces.append(text)
        self._size += len(text)
        if self._size >= self.BLOCK:
            self.flush()

    def append(self, line: str) -> None:
        if self._trim_end and not line:
            self._blank += 1
            return
        if self._blank:
            self._pieces.append("\n" * self._blank)
            self._blank = 0
        self.write(line)  # apart, not `line + "\n"`: a line may hold a tool result of many megabytes
        self.write("\n")

    def __iadd__(self, lines: Iterable[str]) -> Lines:
        for line in lines:
            self.append(line)
        return self

    def flush(self) -> None:
        for piece in self._pieces:  # not joined, for the same reason
            self._stream.write(piece)
        self._pieces, self._size = [], 0
        if getattr(self._stream, "reader_gone", False):  # `app.streams.ClosedPipeGuard`
            raise ReaderGone


@contextmanager
def open_target(output: str | Path | None) -> Iterator[TextIO]:
    """A text stream onto where `output` says; on success the export is complete there when the
    block ends. An exception inside the block leaves a replaced file as it was (what was already
    written through a pipe or a descriptor stays written)."""
    if output is None or str(output) == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    path = str(output)
    descriptor = own_descriptor(path)
    if descriptor == 1:
        yield sys.stdout
        sys.stdout.flush()
        return
    if descriptor is not None:
        with os.fdopen(os.dup(descriptor), "w", encoding="utf-8") as stream:
            yield stream
        return
    try:
        kind = os.stat(path).st_mode
    except FileNotFoundError:
        kind = None
    if kind is None or stat.S_ISREG(kind):
        with _replaced(Path(os.path.realpath(path) if os.path.islink(path) else path)) as stream:
            yield stream
        return
    if not (stat.S_ISFIFO(kind) or stat.S_ISCHR(kind)):
        raise TargetRefused(errno.EINVAL, _refusal(kind), path)
    with _written_through(path) as stream:
        yield stream


def own_descriptor(path: str) -> int | None:
    """The descriptor of this process that `path` names through its symlinks, if any."""
    current = os.path.abspath(path)
    for _hop in range(_LINK_HOPS):
        if current in _STANDARD:
            return _STANDARD[current]
        match = _OWN_DESCRIPTOR.fullmatch(current)
        if match is not None and match.group(1) in (None, "self", "thread-self", str(os.getpid())):
            return int(match.group(2))
        try:
            link = os.readlink(current)
        except OSError:  # not a symlink, or not there
            return None
        current = os.path.normpath(os.path.join(os.path.dirname(current), link))
    return None


def _refusal(kind: int) -> str:
    """What a file that is neither regular, a FIFO nor a character device is."""
    if stat.S_ISDIR(kind):
        return _("it is a directory")
    if stat.S_ISSOCK(kind):
        return _("it is a socket")
    return _("it is a block device")


@contextmanager
def _written_through(path: str) -> Iterator[TextIO]:
    """`path` opened for writing (a FIFO waits for its reader, as `cat > FIFO` does), checked to be
    the FIFO or device it was a moment ago, then written as the export is made."""
    descriptor = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    kind = os.fstat(descriptor).st_mode
    if not (stat.S_ISFIFO(kind) or stat.S_ISCHR(kind)):
        os.close(descriptor)  # written over in place, a file that took its name would keep its tail
        raise TargetRefused(errno.EINVAL, _("it changed while it was opened"), path)
    with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
        yield stream


@contextmanager
def _replaced(path: Path) -> Iterator[TextIO]:
    """A private temporary file in `path`'s directory, flushed to disk and renamed over `path`
    when the block ends without an exception, removed otherwise."""
    directory = path.parent if str(path.parent) else Path(".")
    descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(descriptor, FILE_MODE)
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise

"""Read-only helpers for a viewer that reads a huge log lazily (DESIGN §12): the line index built
with progress, and scans of the lines' bytes that parse nothing.

A viewer opening a log whose index is missing or stale would otherwise wait for `Session.open`'s
scan without a word; `index_with_progress` does the same scan first (`open_index`, so the cache it
saves is the one `Session.open` then loads) and reports how many bytes it has read.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from app.session.chain import Chain
from app.session.index import index_path, open_index

SCAN_BATCH = 4096
"""Lines read between two progress reports of a scan."""


class _ReportingReader:
    """A file that reports how far `read` has got (the index scan reads in large chunks)."""

    def __init__(self, handle, size: int, progress: Callable[[int, int], None]) -> None:  # type: ignore[no-untyped-def]
        self._handle = handle
        self._size = size
        self._progress = progress

    def fileno(self) -> int:
        return self._handle.fileno()

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._handle.seek(offset, whence)

    def tell(self) -> int:
        return self._handle.tell()

    def read(self, size: int = -1) -> bytes:
        data = self._handle.read(size)
        self._progress(min(self._handle.tell(), self._size), self._size)
        return data


def index_is_current(path: Path) -> bool:
    """Whether the index cache beside `path` was saved after the file last changed (a hint: the
    cache's own key decides whether it is used)."""
    try:
        return index_path(path).stat().st_mtime_ns >= path.stat().st_mtime_ns
    except OSError:
        return False


def index_with_progress(path: Path, progress: Callable[[int, int], None]) -> None:
    """Bring the line index of `path` up to date, calling `progress(bytes read, size)` as the scan
    goes. Errors are left to `Session.open`, which reads the header again and names them."""
    try:
        with path.open("rb") as handle:
            header_line = handle.readline()
            if not header_line.endswith(b"\n"):
                return
            size = os.fstat(handle.fileno()).st_size
            open_index(path, _ReportingReader(handle, size, progress), header_line.rstrip(b"\n"))
    except OSError:
        return


def scan_lines(
    chain: Chain,
    wanted: Callable[[int], bool],
    needles: list[bytes],
    progress: Callable[[int, int], None] | None = None,
    *,
    fold_case: bool = False,
) -> Iterator[tuple[int, bytes]]:
    """(seq, line) of every line for which `wanted(seq)` holds and whose bytes hold every needle
    (compared with ASCII letters lowered when `fold_case`), in log order, read a batch at a time;
    `progress(seqs done, total)` after each batch. Nothing is parsed: callers confirm the hits."""
    total = len(chain)
    for start in range(0, total, SCAN_BATCH):
        stop = min(start + SCAN_BATCH, total)
        for seq, _segment, _number, line in chain.lines(start, stop):
            if not wanted(seq):
                continue
            text = line.lower() if fold_case else line
            if all(needle in text for needle in needles):
                yield seq, line
        if progress is not None:
            progress(stop, total)

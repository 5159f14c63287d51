"""Read-only helpers for the trajectory, which reads a huge log lazily (docs/architecture.md §5): the line index built
with progress, and scans of the lines' bytes that parse nothing.

The trajectory opening a log whose index is missing or stale would otherwise wait for `Session.open`'s
scan without a word; `index_with_progress` does the same scan first (`open_index`, so the cache it
saves is the one `Session.open` then loads) and reports how many bytes it has read.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from bisect import bisect_right
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from app.i18n import _
from app.session.chain import Chain
from app.session.errors import SessionCorruptionError, UnsupportedFormatError
from app.session.line_index import index_path, open_index

SCAN_BATCH = 4096
"""Lines read between two progress reports of a scan."""
BACKGROUND_NICENESS = 10
FIND_CHUNK = 4 << 20
"""Bytes searched at a time by `lines_containing` (the UI thread waits at most one chunk's search)."""


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


def every_line(chain: Chain, progress: Callable[[int, int], None] | None = None) -> Iterator[tuple[int, bytes]]:
    """(seq, line) of every line, in log order, read a batch at a time; `progress(seqs done,
    total)` after each batch."""
    total = len(chain)
    for start in range(0, total, SCAN_BATCH):
        stop = min(start + SCAN_BATCH, total)
        for seq, _segment, _number, line in chain.lines(start, stop):
            yield seq, line
        if progress is not None:
            progress(stop, total)


ESCAPED_PRINTABLE = re.compile(rb"\\u00[2-7][0-9a-fA-F]")
"""A JSON escape of a printable ASCII character, which toolscope's writer never writes: a line
holding one may spell any word or key in a way no byte search finds (`h\\u0065llo`)."""

Needle = bytes | re.Pattern[bytes]


def lines_containing(
    chain: Chain,
    *needles: Needle,
    progress: Callable[[int, int], None] | None = None,
    fold_case: bool = False,
) -> Iterator[tuple[int, bytes]]:
    """(seq, line) of every indexed line that holds one of `needles` (bytes, or a pattern that
    matches there), each line once, in log order; ASCII letters compared lowered when `fold_case`
    (a bytes needle lowered then). The files are searched a few megabytes at a time in C and only
    the lines with a hit are cut out, so rare needles cost about a read of the log;
    `progress(bytes searched, bytes in all)` after each chunk."""
    spans = []
    for segment in chain.segments:
        count = min(segment.count, len(segment.index))
        if count:
            segment.index.trust(0, count)
            spans.append((segment, count, segment.index.offsets[0], segment.index.span(count - 1)[1] + 1))
    total = sum(stop - start for _segment, _count, start, stop in spans)
    finders = [_finder(needle.lower() if fold_case and isinstance(needle, bytes) else needle) for needle in needles]
    done = 0
    for segment, count, first, last in spans:
        offsets = segment.index.offsets
        line = 0
        with segment.path.open("rb") as handle:
            while line < count:
                start = offsets[line]
                stop_line = max(bisect_right(offsets, start + FIND_CHUNK, line + 1, count), line + 1)
                stop = offsets[stop_line] if stop_line < count else last
                handle.seek(start)
                data = handle.read(stop - start)
                text = data.lower() if fold_case else data
                hits: set[int] = set()
                for find in finders:
                    at = find(text, 0)
                    while at >= 0:
                        hit = bisect_right(offsets, start + at, line, stop_line) - 1
                        hits.add(hit)
                        at = find(text, (offsets[hit + 1] - start if hit + 1 < stop_line else len(data)))
                for hit in sorted(hits):
                    begin = offsets[hit] - start
                    end = (offsets[hit + 1] - start if hit + 1 < stop_line else len(data)) - 1
                    yield segment.first_seq + hit, data[begin:end]
                done += stop - start
                if progress is not None:
                    progress(done, total)
                line = stop_line


def _finder(needle: Needle) -> Callable[[bytes, int], int]:
    """Where `needle` is first found in a text from a position on; -1 when it is not."""
    if isinstance(needle, bytes):
        return lambda text, at: text.find(needle, at)

    def search(text: bytes, at: int) -> int:
        found = needle.search(text, at)
        return found.start() if found is not None else -1

    return search


# --- work in a process of its own ------------------------------------------------------------------


def run_reporting(module: str, path: Path, progress: Callable[[int, int], None]) -> Any:
    """Run `python -m module path` (a whole-log pass: it takes a core for a while and holds a lot
    of state, and the trajectory's interface should keep its own interpreter lock and memory), passing
    its progress reports on; return its result. It speaks JSON lines: `{"done", "total"}` as it
    goes, then `{"result"}` or `{"error": {path, line, reason, unsupported}}` (`report_main`); an
    error is raised here as `SessionCorruptionError` / `UnsupportedFormatError`."""
    child = subprocess.Popen(
        [sys.executable, "-m", module, str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    assert child.stdout is not None
    last: dict[str, Any] = {}
    with child.stdout:
        for raw in child.stdout:
            last = json.loads(raw)
            if "done" in last:
                progress(last["done"], last["total"])
    child.wait()
    if "error" in last:
        failure = last["error"]
        error = UnsupportedFormatError if failure["unsupported"] else SessionCorruptionError
        raise error(failure["path"], failure["line"], failure["reason"])
    if "result" not in last:
        raise SessionCorruptionError(
            path, None, _("the pass over the log stopped (exit status {status})").format(status=child.returncode)
        )
    return last["result"]


def report_main(work: Callable[[Path, Callable[[int, int], None]], Any]) -> int:
    """The child's side of `run_reporting`: `work(path, progress)` on the path in argv, at a lower
    priority than the interface waiting for it (it is background work)."""
    from app.session.errors import SessionFileError

    os.nice(BACKGROUND_NICENESS)

    def progress(done: int, total: int) -> None:
        print(json.dumps({"done": done, "total": total}), flush=True)

    try:
        result = work(Path(sys.argv[1]), progress)
    except SessionFileError as error:
        unsupported = isinstance(error, UnsupportedFormatError)
        failure = {"path": str(error.path), "line": error.line, "reason": error.reason, "unsupported": unsupported}
        print(json.dumps({"error": failure}))
        return 0
    print(json.dumps({"result": result}))
    return 0


def validate_elsewhere(path: Path, progress: Callable[[int, int], None]) -> None:
    """`Session.validate` of the file at `path`, by another process (`run_reporting`)."""
    run_reporting("app.session.background_scans", path, progress)


def _validate(path: Path, progress: Callable[[int, int], None]) -> None:
    from app.session.session import Session

    Session.open(path).validate(progress)


if __name__ == "__main__":
    sys.exit(report_main(_validate))

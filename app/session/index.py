"""The line index of one session file (DESIGN §12): where each event line starts and its type.

It is built by a linear byte scan that parses nothing: every event line starts with
`{"type":"…"` (the writer puts `type` first), so the first 15 bytes of a line name its type. The
index is a hint, never a verdict: a line it cannot classify gets `UNKNOWN`, and only the strict
reader (`app.session.reader`) decides whether a line is valid.

It is cached beside the session as `<id>.jsonl.idx` (0600), keyed like the listing's cache by the
file's size and mtime (plus its inode, a checksum of the header line and one of the last indexed
line): a file that only grew has just its new bytes scanned; a file cut back to a torn tail is
rescanned from its last complete line; a file replaced under the index is indexed again from the
start. Reading the cache never trusts it beyond that key; writing it is best effort (a read-only
directory only costs a rescan next time).
"""

from __future__ import annotations

import json
import mmap
import os
import threading
import zlib
from array import array
from itertools import accumulate, repeat
from operator import add, itemgetter
from pathlib import Path
from typing import Any, BinaryIO

INDEX_SUFFIX = ".idx"
INDEX_MAGIC = b"toolscope-index\n"
INDEX_VERSION = 4  # 3: checkpoints one per line, call ids of the validation record as digests; 4: code counts
CHUNK_SIZE = 128 << 10  # read by the scan at a time: split while still in the CPU cache (3x as fast as 16 MB)
VALIDATED = "validated"  # the `extra` key of the record that every line was validated strictly
PREFIX_LENGTH = 15  # `{"type":"` and six bytes of the type name tell every type apart
COUNT_BLOCK = 4096  # lines per block of the per-block code counts
BLOCK_COUNTS = "blocks"  # the `extra` key of those counts

# One byte per event line. Letters, so that a run of types can be searched with `re` and counted
# with `bytes.count` in C.
TYPE_CODES: dict[str, int] = {
    "turn/start": ord("T"),
    "turn/end": ord("t"),
    "step/start": ord("S"),
    "step/end": ord("s"),
    "user/message": ord("U"),
    "request/header": ord("H"),
    "developer/message": ord("D"),
    "assistant/message": ord("A"),
    "tool/call": ord("C"),
    "tool/result": ord("R"),
    "agent/request-error": ord("E"),
    "llm/retry": ord("Y"),
    "compaction/summary": ord("K"),
}
UNKNOWN = ord("?")
TYPE_NAMES: dict[int, str] = {code: name for name, code in TYPE_CODES.items()}
COUNTED_CODES: tuple[int, ...] = (*TYPE_CODES.values(), UNKNOWN)
"""The columns of the per-block code counts (`LineIndex.block_counts`), in this order."""
_CODE_BY_PREFIX: dict[bytes, int] = {
    (b'{"type":"' + name.encode() + b'"')[:PREFIX_LENGTH]: code for name, code in TYPE_CODES.items()
}
assert len(_CODE_BY_PREFIX) == len(TYPE_CODES)
_prefix_of = itemgetter(slice(0, PREFIX_LENGTH))


def type_code(line: bytes) -> int:
    """The code of one line (without its newline) by its leading bytes."""
    return _CODE_BY_PREFIX.get(line[:PREFIX_LENGTH], UNKNOWN)


def index_path(session_path: Path) -> Path:
    return session_path.with_name(session_path.name + INDEX_SUFFIX)


class Sections:
    """The `extra` records of an index, each read only when first asked for: opening a session
    reads none of them. A record is JSON (`get`) or bytes of its own layout (`raw`), by its key.
    `source` is the cache file with its meta line and where each record lies in it; a record is
    read only while the file still has that meta line (another process may have saved a newer
    cache since). A record is encoded once, when it is set: saving again copies bytes."""

    def __init__(self, source: tuple[Path, bytes, dict[str, tuple[int, int]]] | None = None) -> None:
        self._source = source
        self._raw: dict[str, bytes | None] = {}  # None: discarded
        self._parsed: dict[str, Any] = {}

    def _read(self, key: str) -> bytes | None:
        if self._source is None or key not in self._source[2]:
            return None
        cache_path, meta_line, places = self._source
        start, length = places[key]
        try:
            with cache_path.open("rb") as cache:
                if cache.read(len(INDEX_MAGIC)) != INDEX_MAGIC or cache.readline() != meta_line:
                    return None
                cache.seek(start)
                raw = cache.read(length)
        except OSError:
            return None
        return raw if len(raw) == length else None

    def raw(self, key: str) -> bytes | None:
        if key not in self._raw:
            self._raw[key] = self._read(key)
        return self._raw[key]

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self._parsed:
            raw = self.raw(key)
            try:
                self._parsed[key] = json.loads(raw) if raw is not None else None
            except ValueError:
                self._parsed[key] = None
        value = self._parsed[key]
        return value if value is not None else default

    def __setitem__(self, key: str, value: Any) -> None:
        self._raw[key] = json.dumps(value, separators=(",", ":")).encode()
        self._parsed[key] = value

    def set_raw(self, key: str, value: bytes) -> None:
        self._raw[key] = value
        self._parsed.pop(key, None)

    def discard(self, key: str) -> None:
        self._raw[key] = None
        self._parsed[key] = None

    def encoded(self) -> dict[str, bytes]:
        """Every record as it is stored (the unread ones as they are in the cache file)."""
        keys = [*(self._source[2] if self._source else ()), *self._raw]
        return {key: raw for key in dict.fromkeys(keys) if (raw := self.raw(key)) is not None}


class LineIndex:
    """Complete event lines of one file: `offsets[i]` is where line `i + 2` starts (line 1 is the
    header), `types[i]` its code; `end` is the offset just past the last indexed newline.

    A last line without a newline is not indexed: the reader decides whether it is a torn write or
    a complete event whose newline is missing. (A plain class: a dataclass would be compiled
    before a resumed chat's first frame.)
    """

    def __init__(
        self,
        path: Path,
        header_end: int,
        header_crc: int,
        offsets: array | memoryview | None = None,
        types: bytearray | None = None,
        end: int = 0,
        extra: Sections | None = None,
        saved_code_counts: dict[int, int] | None = None,
    ) -> None:
        self.path = path
        self.header_end = header_end
        self.header_crc = header_crc
        self.offsets: array | memoryview = offsets if offsets is not None else array("Q")
        """A memoryview of the cache file, mapped, when read from it: opening reads none of it, a
        lookup faults in one page. Copied into an array when lines are added."""
        self.types = types if types is not None else bytearray()
        self.end = end
        self.extra = extra if extra is not None else Sections()
        """What other layers keep in the same cache (the fold checkpoints, the validation record);
        dropped on any rebuild."""
        self.saved_code_counts = saved_code_counts
        """How many lines of each type code, as the cache holds them (None when it does not): kept
        current with the lines added, so that how many events of a kind there are is known without
        a pass over `types` (a million of them take milliseconds)."""
        self._block_table: array | None = None

    def __len__(self) -> int:
        return len(self.offsets)

    def block_counts(self) -> array:
        """How many lines of each code (`COUNTED_CODES`, one column each) every complete block of
        `COUNT_BLOCK` lines holds, row after row: the n-th event of some kinds is then found from
        block totals summed from the table instead of a pass over every type code, which grew with
        the log (milliseconds for a million lines, in every fresh view). Kept in the cache with the
        index (the complete blocks of a log that only grows never change), counted for new blocks
        only."""
        table = self._block_table
        if table is None:
            table = self._saved_block_counts()
        done, blocks = len(table) // len(COUNTED_CODES), len(self.types) // COUNT_BLOCK
        for block in range(done, blocks):
            start, stop = block * COUNT_BLOCK, (block + 1) * COUNT_BLOCK
            table.extend([self.types.count(code, start, stop) for code in COUNTED_CODES])
        if blocks > done:
            self.extra.set_raw(BLOCK_COUNTS, table.tobytes())
        self._block_table = table
        return table

    def _saved_block_counts(self) -> array:
        """The table the cache holds, if it has the layout `block_counts` writes and agrees with the
        index's own code counts; else an empty one (counted again from the bytes)."""
        table, raw, width = array("I"), self.extra.raw(BLOCK_COUNTS), len(COUNTED_CODES)
        if not raw or len(raw) % (width * table.itemsize):
            return table
        table.frombytes(raw)
        blocks = len(table) // width
        if blocks > len(self.types) // COUNT_BLOCK:
            return array("I")
        counts = self.code_counts()
        rest = blocks * COUNT_BLOCK
        for column, code in enumerate(COUNTED_CODES):
            if sum(table[column::width]) + self.types.count(code, rest) != counts.get(code, 0):
                return array("I")
        return table

    def code_counts(self) -> dict[int, int]:
        """How many lines of each type code `types` holds (codes absent: none)."""
        if self.saved_code_counts is None:
            self.saved_code_counts = _counted(self.types, 0)
        return self.saved_code_counts

    def _counted_from(self, known: int) -> None:
        """Add the codes of `types[known:]` to the counts, if they are kept."""
        if self.saved_code_counts is not None:
            for code, number in _counted(self.types, known).items():
                self.saved_code_counts[code] = self.saved_code_counts.get(code, 0) + number

    def span(self, line: int) -> tuple[int, int]:
        """(start, end) of event line `line` (0-based), newline excluded."""
        stop = self.offsets[line + 1] if line + 1 < len(self.offsets) else self.end
        return self.offsets[line], stop - 1

    def _growable(self) -> array:
        if isinstance(self.offsets, memoryview):
            copied = array("Q")
            copied.frombytes(self.offsets.cast("B"))
            self.offsets = copied
        return self.offsets

    def add_line(self, offset: int, line: bytes) -> None:
        """Record a line the writer has just appended at `offset` (`line` has its newline)."""
        self._growable().append(offset)
        code = type_code(line)
        self.types.append(code)
        if self.saved_code_counts is not None:
            self.saved_code_counts[code] = self.saved_code_counts.get(code, 0) + 1
        self.end = offset + len(line)

    # --- building --------------------------------------------------------------------------------

    def scan(self, handle: BinaryIO) -> bytes:
        """Index the complete lines after `end`; return the bytes after the last newline."""
        handle.seek(self.end)
        known = len(self.types)
        if not known:
            self.saved_code_counts = {}  # counted as the lines are found
        pending: list[bytes] = []  # a line still without its newline, in the chunks read so far
        position = self.end
        while chunk := handle.read(CHUNK_SIZE):
            lines = chunk.split(b"\n")
            if len(lines) == 1:
                pending.append(chunk)
                continue
            if pending:
                lines[0] = b"".join([*pending, lines[0]])
            rest = lines.pop()
            pending = [rest] if rest else []
            starts = array("Q", accumulate(map(add, map(len, lines), repeat(1)), initial=position))
            position = starts.pop()
            self._growable().extend(starts)
            self.types.extend(map(_CODE_BY_PREFIX.get, map(_prefix_of, lines), repeat(UNKNOWN)))
        self.end = position
        self._counted_from(known)
        return b"".join(pending)


def open_index(path: Path, handle: BinaryIO, header_line: bytes) -> tuple[LineIndex, bytes]:
    """The index of the open session file `handle` (positioned anywhere), from the cache where it
    is still good, brought up to date by scanning what it does not cover; and the bytes after the
    file's last newline. Saves the cache when it had to scan."""
    header_crc = zlib.crc32(header_line)
    cached = _load(path, os.fstat(handle.fileno()), header_crc, handle)
    index = cached[0] if cached is not None else LineIndex(
        path=path, header_end=len(header_line) + 1, header_crc=header_crc, end=len(header_line) + 1
    )
    known = len(index)
    # Even a current index gets the bytes after its end scanned: a writer may have added lines
    # since the cache was saved by a reader that had not seen them.
    tail = index.scan(handle)
    if cached is None or not cached[1] or len(index) != known:
        save_index(index)
    return index, tail


def save_index(index: LineIndex) -> None:
    """Write the cache atomically (0600); keyed by the file as it is now. Best effort."""
    target = index_path(index.path)
    try:
        stat = index.path.stat()
        meta = {
            "version": INDEX_VERSION,
            "size": stat.st_size,
            "mtime": stat.st_mtime_ns,
            "inode": stat.st_ino,
            "headerEnd": index.header_end,
            "headerCrc": index.header_crc,
            "end": index.end,
            "count": len(index),
            "lastCrc": _last_line_crc(index, None),
            "codes": {str(code): number for code, number in index.code_counts().items()},
        }
        index.block_counts()  # kept with the index (new blocks only)
        sections = index.extra.encoded()
        meta["sections"] = {key: len(raw) for key, raw in sections.items()}
        # A viewer's worker thread may save while its UI thread does: one temporary file each.
        temporary = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(INDEX_MAGIC)
            handle.write(json.dumps(meta, separators=(",", ":")).encode() + b"\n")
            handle.write(index.offsets.tobytes())
            handle.write(index.types)
            for raw in sections.values():
                handle.write(raw)
        os.replace(temporary, target)
    except (OSError, ValueError):
        pass


def _load(
    path: Path, stat: os.stat_result, header_crc: int, handle: BinaryIO
) -> tuple[LineIndex, bool] | None:
    """(index, current) from the cache, or None when there is none or it describes another file.

    `current` is true when the file is exactly as the index saw it; otherwise the index is good up
    to `end` and the bytes after it still need a scan.
    """
    try:
        with index_path(path).open("rb") as cache:
            if cache.read(len(INDEX_MAGIC)) != INDEX_MAGIC:
                return None
            meta_line = cache.readline()
            meta = json.loads(meta_line)
            if meta.get("version") != INDEX_VERSION or meta["headerCrc"] != header_crc:
                return None
            count, start = meta["count"], cache.tell()
            if not isinstance(count, int) or count < 0:
                return None
            places, end = {}, start + count * 9
            for key, length in meta["sections"].items():
                places[str(key)] = (end, int(length))
                end += int(length)
            if os.fstat(cache.fileno()).st_size != end:
                return None
            offsets: array | memoryview = array("Q")
            if count:
                mapped = mmap.mmap(cache.fileno(), 0, access=mmap.ACCESS_READ)
                offsets = memoryview(mapped)[start : start + count * 8].cast("Q")
            cache.seek(start + count * 8)
            types = bytearray(count)
            read = cache.readinto(types)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if read != count or meta["inode"] != stat.st_ino:
        return None
    index = LineIndex(
        path=path,
        header_end=meta["headerEnd"],
        header_crc=header_crc,
        offsets=offsets,
        types=types,
        end=meta["end"],
        extra=Sections((index_path(path), meta_line, places)),
        saved_code_counts=_code_counts_of(meta.get("codes"), count),
    )
    if stat.st_size == meta["size"] and stat.st_mtime_ns == meta["mtime"]:
        return index, True
    # A record that every line was validated holds for the file exactly as it was (DESIGN §12).
    index.extra.discard(VALIDATED)
    # Changed since. Logs only grow, or lose a torn tail after their last complete line: reuse the
    # index then, if the file still holds the last indexed line where it was. A file of the same
    # size with another mtime was rewritten: index it again.
    if (
        stat.st_size == meta["size"]
        or stat.st_size < index.end
        or _last_line_crc(index, handle) != meta["lastCrc"]
    ):
        return None
    return index, False


def _counted(types: bytearray, start: int) -> dict[int, int]:
    """The codes of `types[start:]`, counted (one pass in C per code)."""
    counts = {code: types.count(code, start) for code in (*TYPE_CODES.values(), UNKNOWN)}
    return {code: number for code, number in counts.items() if number}


def _code_counts_of(saved: object, count: int) -> dict[int, int] | None:
    """The code counts a cache holds, if they have the shape `save_index` writes and add up to its
    line count; else None (counted again when asked for)."""
    if not isinstance(saved, dict):
        return None
    try:
        counts = {int(code): number for code, number in saved.items()}
    except ValueError:
        return None
    if not all(type(number) is int and number > 0 and code in (*TYPE_NAMES, UNKNOWN) for code, number in counts.items()):
        return None
    return counts if sum(counts.values()) == count else None


def _last_line_crc(index: LineIndex, handle: BinaryIO | None) -> int:
    """Checksum of the last indexed line as the file holds it now (0 when nothing is indexed)."""
    if not len(index):
        return 0
    start = index.offsets[-1]
    if handle is None:
        with index.path.open("rb") as own:
            own.seek(start)
            return zlib.crc32(own.read(index.end - start))
    handle.seek(start)
    return zlib.crc32(handle.read(index.end - start))

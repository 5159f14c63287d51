"""The line index of one session file (docs/architecture.md §5): where each event line starts and its type.

It is built by a linear byte scan, each line given its type code (`app.session.type_codes`: by its
first bytes when the writer spelt it, else by parsing it). The index is a hint, never a verdict: a
line that is no event gets `UNKNOWN`, and only the strict reader (`app.session.reader`) decides
whether a line is valid.

It is cached beside the session as `<id>.jsonl.idx` (0600). The cache is untrusted input (it travels
with copies; anyone may damage it): it is believed only when its seal (`app.session.seal`, a MAC
under this account's key) checks out and its key — the file's device, inode, size, mtime and
ctime, checksums of the header line and of the last indexed line — matches the file. A file that
only grew keeps the index of its lines but nothing derived from their content; a file changed in
any other way is indexed again from the start. Writing it is best effort (a read-only directory or
a cache path that is not a regular file only costs a scan next time).
"""

from __future__ import annotations

import json
import mmap
import os
import stat as stat_module
import threading
import zlib
from array import array
from itertools import accumulate, repeat
from operator import add, itemgetter
from pathlib import Path
from typing import Any, BinaryIO

from app.session.errors import StaleIndexError
from app.session.seal import SEAL_BYTES, seal, sealed
from app.session.type_codes import CODE_BY_PREFIX, PREFIX_LENGTH, TYPE_CODES, TYPE_NAMES, UNKNOWN, declared_code, type_code
from app.untrusted_json import loads

INDEX_SUFFIX = ".idx"
INDEX_MAGIC = b"toolscope-index\n"
INDEX_VERSION = 5  # 4: code counts; 5: sealed, keyed by device and ctime too
CHUNK_SIZE = 128 << 10  # read by the scan at a time: split while still in the CPU cache
VALIDATED = "validated"  # the `extra` key of the record that every line was validated strictly
CHECKPOINTS = "checkpoints"  # the `extra` key of the view's fold checkpoints
COSTS = "costs"  # the `extra` key of `toolscope cost`'s sums (`app.report.cost_record`)
COUNT_BLOCK = 4096  # lines per block of the per-block code counts, and of the offsets' seals
BLOCK_COUNTS = "blocks"  # the `extra` key of those counts
META_LIMIT = 1 << 20  # the longest meta line a cache may have (a few hundred bytes are written)

COUNTED_CODES: tuple[int, ...] = (*TYPE_CODES.values(), UNKNOWN)
"""The columns of the per-block code counts (`LineIndex.block_counts`), in this order."""
_prefix_of = itemgetter(slice(0, PREFIX_LENGTH))


def index_path(session_path: Path) -> Path:
    return session_path.with_name(session_path.name + INDEX_SUFFIX)


class Sections:
    """The `extra` records of an index, each read only when first asked for: opening a session
    reads none of them. A record is bytes of its own layout, by its key, and carries its own seal:
    one that does not check out when read is treated as absent (its owner records it again).
    `source` is the cache file with its meta line and where each record lies in it; a record is
    read only while the file still has that meta line (another process may have saved a newer
    cache since). A record is sealed once, when it is set: saving again copies bytes and seal."""

    def __init__(self, source: tuple[Path, bytes, dict[str, tuple[int, int, bytes]]] | None = None) -> None:
        self._source = source
        self._raw: dict[str, bytes | None] = {}  # None: discarded
        self._seals: dict[str, bytes] = {}

    def _read(self, key: str) -> bytes | None:
        if self._source is None or key not in self._source[2]:
            return None
        cache_path, meta_line, places = self._source
        start, length, tag = places[key]
        cache = _open_cache(cache_path)
        if cache is None:
            return None
        with cache:
            if cache.read(len(INDEX_MAGIC)) != INDEX_MAGIC or not cache.readline(SEAL_BYTES * 2 + 2):
                return None
            if cache.readline(META_LIMIT) != meta_line:
                return None
            cache.seek(start)
            raw = cache.read(length)
        if len(raw) != length or not sealed(tag, key.encode(), b"\0", raw):
            return None
        self._seals[key] = tag
        return raw

    def raw(self, key: str) -> bytes | None:
        if key not in self._raw:
            self._raw[key] = self._read(key)
        return self._raw[key]

    def set_raw(self, key: str, value: bytes) -> None:
        self._raw[key] = value
        self._seals.pop(key, None)

    def discard(self, key: str) -> None:
        self._raw[key] = None

    def sealed_records(self) -> dict[str, tuple[bytes, bytes]] | None:
        """Every record as it is stored, with its seal (the unread ones read, and checked, from the
        cache file); None when there is no key to seal with."""
        keys = [*(self._source[2] if self._source else ()), *self._raw]
        records = {}
        for key in dict.fromkeys(keys):
            raw = self.raw(key)
            if raw is None:
                continue
            tag = self._seals.get(key)
            if tag is None:
                tag = seal(key.encode(), b"\0", raw)
                if tag is None:
                    return None
                self._seals[key] = tag
            records[key] = (raw, tag)
        return records


class LineIndex:
    """Complete event lines of one file: `offsets[i]` is where line `i + 2` starts (line 1 is the
    header), `types[i]` its code; `end` is the offset just past the last indexed newline.

    A last line without a newline is not indexed: the reader decides whether it is a torn write or
    a complete event whose newline is missing. (A plain class: docs/decisions.md, *Plain classes*.)

    Offsets read from the cache are checked a block of `COUNT_BLOCK` lines at a time, against the
    block's seal, when first used (`trust`): opening a log of a million lines reads none of them.
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
        offset_seals: list[bytes] | None = None,
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
        self._offset_seals: list[bytes] = offset_seals if offset_seals is not None else []
        """The seal of each block of offsets as last saved (the last block may have been partial)."""
        self._sealed_blocks = len(self.offsets) // COUNT_BLOCK if offset_seals else 0
        """How many of those seals are of complete blocks, whose offsets never change again."""
        self._unchecked: bytearray | None = bytearray(b"\1") * len(self._offset_seals) if offset_seals else None
        """Per block of offsets read from the cache, 1 until `trust` has checked it; None when every
        offset was found by this process."""
        self.from_cache = False
        """Whether the lines it knew when opened came from the cache rather than from a scan."""

    def __len__(self) -> int:
        return len(self.offsets)

    def trust(self, first: int, last: int) -> None:
        """Check the offsets of lines `first..last` against their blocks' seals before they are
        used. A block that does not check out means the cache was damaged: the file is indexed
        again and, if its lines are still those the index knows, its offsets replace the cache's
        (StaleIndexError if they are not)."""
        unchecked = self._unchecked
        if unchecked is None:
            return
        for block in range(max(first, 0) // COUNT_BLOCK, min(last // COUNT_BLOCK + 1, len(unchecked))):
            if unchecked[block]:
                if not sealed(self._offset_seals[block], *_offset_block(self.offsets, block)):
                    self._reindex()
                    return
                unchecked[block] = 0

    def _reindex(self) -> None:
        fresh = LineIndex(self.path, self.header_end, self.header_crc, end=self.header_end)
        with self.path.open("rb") as handle:
            fresh.scan(handle, stop=self.end)
        if fresh.end != self.end or fresh.types != self.types[: len(fresh.types)] or len(fresh) != len(self):
            index_path(self.path).unlink(missing_ok=True)
            raise StaleIndexError(self.path)
        self.offsets, self._offset_seals, self._sealed_blocks, self._unchecked = fresh.offsets, [], 0, None

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
        self.trust(line, line + 1)
        stop = self.offsets[line + 1] if line + 1 < len(self.offsets) else self.end
        return self.offsets[line], stop - 1

    def _growable(self) -> array:
        """The offsets as an array lines can be added to: a partial last block is checked first, as
        what is added joins it."""
        self.trust(len(self.offsets) - 1, len(self.offsets) - 1)
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

    def scan(self, handle: BinaryIO, stop: int | None = None) -> bytes:
        """Index the complete lines after `end` (up to `stop`, if given); return the bytes after the
        last newline. A line the writer's spelling does not classify is parsed (`type_code`)."""
        handle.seek(self.end)
        known = len(self.types)
        if not known:
            self.saved_code_counts = {}  # counted as the lines are found
        pending: list[bytes] = []  # a line still without its newline, in the chunks read so far
        position = self.end
        while chunk := handle.read(CHUNK_SIZE if stop is None else min(CHUNK_SIZE, stop - handle.tell())):
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
            first = len(self.types)
            self.types.extend(map(CODE_BY_PREFIX.get, map(_prefix_of, lines), repeat(UNKNOWN)))
            unknown = self.types.find(UNKNOWN, first)
            while unknown >= 0:
                self.types[unknown] = declared_code(lines[unknown - first])
                unknown = self.types.find(UNKNOWN, unknown + 1)
        self.end = position
        self._counted_from(known)
        return b"".join(pending)


def open_index(path: Path, handle: BinaryIO, header_line: bytes, *, use_cache: bool = True) -> tuple[LineIndex, bytes]:
    """The index of the open session file `handle` (positioned anywhere), from the cache where it
    checks out (and `use_cache`), brought up to date by scanning what it does not cover; and the
    bytes after the file's last newline. Saves the cache when it had to scan."""
    header_crc = zlib.crc32(header_line)
    status = os.fstat(handle.fileno())
    cached = _load(path, status, len(header_line) + 1, header_crc, handle) if use_cache else None
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
    """Write the cache atomically (0600), sealed; keyed by the file as it is now. Best effort: not
    written without a key, nor over anything but a regular file."""
    target = index_path(index.path)
    temporary: Path | None = None
    try:
        try:
            if not stat_module.S_ISREG(os.lstat(target).st_mode):
                return  # a directory, a FIFO, a link… in the cache's place: not ours to replace
        except FileNotFoundError:
            pass
        status = index.path.stat()
        index.block_counts()  # kept with the index (new blocks only)
        records = index.extra.sealed_records()
        offset_seals = _offset_seals(index)
        if records is None or offset_seals is None:
            return
        meta = {
            "version": INDEX_VERSION,
            "size": status.st_size,
            "mtime": status.st_mtime_ns,
            "ctime": status.st_ctime_ns,
            "inode": status.st_ino,
            "device": status.st_dev,
            "headerEnd": index.header_end,
            "headerCrc": index.header_crc,
            "end": index.end,
            "count": len(index),
            "lastCrc": _last_line_crc(index, None),
            "codes": {str(code): number for code, number in index.code_counts().items()},
            "sections": {key: [len(raw), tag.hex()] for key, (raw, tag) in records.items()},
        }
        meta_line = json.dumps(meta, separators=(",", ":")).encode() + b"\n"
        seals = b"".join(offset_seals)
        tag = seal(meta_line, index.types, seals)
        if tag is None:
            return
        # The trajectory's worker thread may save while its UI thread does: one temporary file each.
        temporary = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(INDEX_MAGIC)
            handle.write(tag.hex().encode() + b"\n")
            handle.write(meta_line)
            handle.write(index.offsets.tobytes() if isinstance(index.offsets, array) else index.offsets.cast("B"))
            handle.write(index.types)
            handle.write(seals)
            for raw, _tag in records.values():
                handle.write(raw)
        os.replace(temporary, target)
        temporary = None
    except (OSError, ValueError, StaleIndexError):
        pass
    finally:
        if temporary is not None:
            temporary.unlink(missing_ok=True)


def _offset_block(offsets: array | memoryview, block: int) -> tuple[bytes, bytes]:
    """What the seal of a block of offsets covers: its number and its bytes."""
    start = block * COUNT_BLOCK
    part = offsets[start : start + COUNT_BLOCK]
    return block.to_bytes(8, "little"), part.tobytes()


def _offset_seals(index: LineIndex) -> list[bytes] | None:
    """The seal of every block of offsets (the last one may be partial): those of complete blocks
    already sealed as they were (a block not yet checked stays as checkable as it was), the others
    made anew — from offsets checked first, so a damaged cache is never sealed as good. None
    without a key."""
    offsets = index.offsets
    seals = index._offset_seals[: index._sealed_blocks]
    for block in range(len(seals), -(-len(offsets) // COUNT_BLOCK)):
        index.trust(block * COUNT_BLOCK, (block + 1) * COUNT_BLOCK - 1)
        tag = seal(*_offset_block(index.offsets, block))
        if tag is None:
            return None
        seals.append(tag)
    index._offset_seals, index._sealed_blocks = seals, len(offsets) // COUNT_BLOCK
    return seals


def _open_cache(path: Path) -> BinaryIO | None:
    """The cache file for reading if it is a regular file (never a FIFO that would block, a device,
    a directory or a symlink to one of those); None otherwise."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat_module.S_ISREG(os.fstat(descriptor).st_mode):
            os.close(descriptor)
            return None
        return os.fdopen(descriptor, "rb")
    except OSError:
        os.close(descriptor)
        return None


_KEY_FIELDS = ("size", "mtime", "ctime", "inode", "device", "headerEnd", "headerCrc", "end", "count", "lastCrc")


def _load(
    path: Path, status: os.stat_result, header_end: int, header_crc: int, handle: BinaryIO
) -> tuple[LineIndex, bool] | None:
    """(index, current) from the cache, or None when there is none, it does not check out or it
    describes another file.

    `current` is true when the file is exactly as the index saw it; otherwise the file grew, the
    index is good up to `end` and the bytes after it still need a scan.
    """
    cache = _open_cache(index_path(path))
    if cache is None:
        return None
    with cache:
        try:
            if cache.read(len(INDEX_MAGIC)) != INDEX_MAGIC:
                return None
            tag = bytes.fromhex(cache.readline(SEAL_BYTES * 2 + 2).decode("ascii"))
            meta_line = cache.readline(META_LIMIT)
            meta = _meta_of(meta_line)
            if meta is None or meta["headerCrc"] != header_crc or meta["headerEnd"] != header_end:
                return None
            if meta["inode"] != status.st_ino or meta["device"] != status.st_dev:
                return None
            count, start = meta["count"], cache.tell()
            blocks = -(-count // COUNT_BLOCK)
            places: dict[str, tuple[int, int, bytes]] = {}
            end = start + count * 9 + blocks * SEAL_BYTES
            for key, (length, section_tag) in meta["sections"].items():
                places[key] = (end, length, bytes.fromhex(section_tag))
                end += length
            if os.fstat(cache.fileno()).st_size != end:
                return None
            cache.seek(start + count * 8)
            types = bytearray(count)
            seals = bytearray(blocks * SEAL_BYTES)
            if cache.readinto(types) != count or cache.readinto(seals) != len(seals):
                return None
            if len(tag) != SEAL_BYTES or not sealed(tag, meta_line, types, seals):
                return None
            offsets: array | memoryview = array("Q")
            if count:
                mapped = mmap.mmap(cache.fileno(), 0, access=mmap.ACCESS_READ)
                offsets = memoryview(mapped)[start : start + count * 8].cast("Q")
        except (OSError, ValueError, UnicodeDecodeError):
            return None
    index = LineIndex(
        path=path,
        header_end=header_end,
        header_crc=header_crc,
        offsets=offsets,
        types=types,
        end=meta["end"],
        extra=Sections((index_path(path), meta_line, places)),
        saved_code_counts=_code_counts_of(meta["codes"], count),
        offset_seals=[bytes(seals[i : i + SEAL_BYTES]) for i in range(0, len(seals), SEAL_BYTES)],
    )
    index.from_cache = True
    if (status.st_size, status.st_mtime_ns, status.st_ctime_ns) == (meta["size"], meta["mtime"], meta["ctime"]):
        return index, True
    # Changed since. Logs only grow, or lose a torn tail after their last complete line: keep the
    # index of the lines then, if the file still holds the last indexed line where it was; but
    # nothing derived from what the lines say (the validation record, the fold checkpoints, the cost
    # sums), which holds for the file exactly as it was (docs/architecture.md §5). A file of the
    # same size was rewritten: index it again.
    try:
        if (
            status.st_size == meta["size"]
            or status.st_size < index.end
            or _last_line_crc(index, handle) != meta["lastCrc"]
        ):
            return None
    except StaleIndexError:  # its offsets did not check out, and the file is not what it indexed
        return None
    for derived in (VALIDATED, CHECKPOINTS, COSTS):
        index.extra.discard(derived)
    return index, False


def _meta_of(line: bytes) -> dict[str, Any] | None:
    """The meta line of a cache if it has exactly the shape `save_index` writes, else None."""
    if not line.endswith(b"\n"):
        return None
    try:
        meta = loads(line)
    except ValueError:
        return None
    if not isinstance(meta, dict) or meta.get("version") != INDEX_VERSION:
        return None
    if not all(type(meta.get(key)) is int and meta[key] >= 0 for key in _KEY_FIELDS):
        return None
    if not meta["headerEnd"] <= meta["end"] <= meta["size"] or meta["count"] > meta["end"] - meta["headerEnd"]:
        return None
    codes, sections = meta.get("codes"), meta.get("sections")
    if not isinstance(codes, dict) or not isinstance(sections, dict):
        return None
    for place in sections.values():
        if not (
            isinstance(place, list)
            and len(place) == 2
            and type(place[0]) is int
            and place[0] >= 0
            and isinstance(place[1], str)
            and len(place[1]) == SEAL_BYTES * 2
        ):
            return None
    return meta


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
    index.trust(len(index) - 1, len(index) - 1)
    start = index.offsets[-1]
    if handle is None:
        with index.path.open("rb") as own:
            own.seek(start)
            return zlib.crc32(own.read(index.end - start))
    handle.seek(start)
    return zlib.crc32(handle.read(index.end - start))

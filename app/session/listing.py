"""The session list behind `toolscope sessions`: one summary per log file, fast with thousands of files.

A summary needs only the header line, the first `user/message` line, the last `request/header` line
(for the route last used) and the line count, so a file is never parsed line by line: those lines
are found with a byte search for the writer's spelling of a line's start, `{"type":"user/message"`
or `{"type":"request/header"` (inside a JSON string the quotes would be escaped, so the pattern can
only start a line), and lines are counted by the newlines of each chunk. The search is believed
only where every line around it starts with `{"type":"` and an unescaped type (`_plain`); a line
spelt any other way (written by another program: spaces, escapes, `type` not first) is classified
by parsing it (`app.session.line_index.declared_type`, the index's slow reference), so it is never
missed.
Summaries are cached in `<data home>/cache/sessions-index.json`, keyed by file name and checked
against size, mtime, ctime and inode (an edit in place that restores the size and the mtime still
changes the ctime); a file that only grew (logs are append-only) has just its new bytes scanned.
A file that is not a valid session is listed as unreadable, never raised.
"""

from __future__ import annotations

import json
import os
import re
import zlib
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import BinaryIO

from app.paths import data_home, ensure_private_dir, sessions_dir
from app.untrusted_json import loads

CACHE_VERSION = 3
CHUNK_SIZE = 1 << 20
TITLE_LENGTH = 50
HEADER_LIMIT = 64 * 1024
USER_MESSAGE_LINE = b'\n{"type":"user/message"'
REQUEST_HEADER_LINE = b'\n{"type":"request/header"'
ODD_LINE = re.compile(rb'\n(?!\{"type":"[a-z/_-]*")')
"""The start of a line that does not show its type as the writer spells it (every type name is
`[a-z/_-]`): spaces, escapes, `type` not first; also a blank line."""
PLAIN_HEAD = re.compile(rb'\{"type":"[a-z/_-]*"')

# Why a file is unreadable (stable codes: they are cached and printed by `--json`).
EMPTY = "empty"
INVALID_HEADER = "invalid-header"
UNSUPPORTED_VERSION = "unsupported-version"


@dataclass(frozen=True)
class SessionSummary:
    id: str
    path: str
    created_at: int | None  # ms since the epoch; None when the header is unreadable
    title: str
    events: int
    size: int
    mtime_ns: int
    problem: str | None = None
    cwd: str | None = None
    route: str | None = None
    """The route of the last model request; None before the first one."""

    @property
    def last_active(self) -> int:
        """ms since the epoch of the last write to the file."""
        return self.mtime_ns // 1_000_000

    @property
    def sort_key(self) -> int:
        """Newest first by creation; an unreadable file by its modification time."""
        return self.created_at if self.created_at is not None else self.mtime_ns // 1_000_000


@dataclass
class _Entry:
    """What the cache keeps per file: enough to resume scanning where the last scan stopped."""

    size: int
    mtime_ns: int
    ctime_ns: int  # with the inode: an edit in place that restores the size and mtime still shows
    inode: int
    header_crc: int
    scanned: int  # offset just past the last complete line seen
    newlines: int
    id: str
    created_at: int | None
    title: str | None  # None while no user message has been found
    problem: str | None
    cwd: str | None
    route: str | None  # the last request's route seen so far


def list_sessions(directory: Path | None = None, cache_file: Path | None = None) -> list[SessionSummary]:
    """All `*.jsonl` session files in `directory`, newest first."""
    directory = directory if directory is not None else sessions_dir()
    cache_file = cache_file if cache_file is not None else data_home() / "cache" / "sessions-index.json"
    try:
        files = [
            entry
            for entry in os.scandir(directory)
            if entry.name.endswith(".jsonl") and entry.is_file()
        ]
    except FileNotFoundError:
        return []
    cached = _read_cache(cache_file)
    entries: dict[str, _Entry] = {}
    summaries: list[SessionSummary] = []
    changed = len(cached) != len(files)
    for file in files:
        stat = file.stat()
        path = file.path  # a str: thousands of Path objects would be much of the listing's cost
        previous = cached.get(file.name)
        entry = _refresh(path, stat, previous)
        if entry is None:  # vanished while listing
            changed = True
            continue
        changed = changed or entry is not previous
        entries[file.name] = entry
        summaries.append(_summary(path, entry))
    if changed:
        _write_cache(cache_file, entries)
    summaries.sort(key=lambda summary: summary.sort_key, reverse=True)
    return summaries


def _summary(path: str, entry: _Entry) -> SessionSummary:
    return SessionSummary(
        id=entry.id,
        path=path,
        created_at=entry.created_at,
        title=entry.title or "",
        events=max(entry.newlines - 1, 0),
        size=entry.size,
        mtime_ns=entry.mtime_ns,
        problem=entry.problem,
        cwd=entry.cwd,
        route=entry.route,
    )


def _refresh(path: str, stat: os.stat_result, previous: _Entry | None) -> _Entry | None:
    """Reuse, extend or rebuild the cache entry of one file."""
    stamp = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)
    if previous is not None and (previous.size, previous.mtime_ns, previous.ctime_ns, previous.inode) == stamp:
        return previous
    try:
        with open(path, "rb") as handle:
            header = _read_header_line(handle)
            crc = zlib.crc32(header)
            if (
                previous is not None
                and previous.problem is None
                and stat.st_size > previous.size
                and stat.st_ino == previous.inode
                and previous.header_crc == crc
            ):
                return _extend(handle, previous, stat)
            return _scan_from_start(path, handle, header, crc, stat)
    except FileNotFoundError:
        return None


def _extend(handle: BinaryIO, previous: _Entry, stat: os.stat_result) -> _Entry:
    """A file that only grew: scan the bytes after its last complete line."""
    handle.seek(previous.scanned)
    newlines, scanned, title, route = _scan(
        handle, previous.scanned, want_title=previous.title is None
    )
    return _Entry(
        size=stat.st_size,
        mtime_ns=stat.st_mtime_ns,
        ctime_ns=stat.st_ctime_ns,
        inode=stat.st_ino,
        header_crc=previous.header_crc,
        scanned=scanned,
        newlines=previous.newlines + newlines,
        id=previous.id,
        created_at=previous.created_at,
        title=previous.title if previous.title is not None else title,
        problem=None,
        cwd=previous.cwd,
        route=route if route is not None else previous.route,
    )


def _scan_from_start(
    path: str, handle: BinaryIO, header: bytes, crc: int, stat: os.stat_result
) -> _Entry:
    session_id, created_at, cwd, problem = _parse_header(header)
    handle.seek(0)
    newlines, scanned, title, route = _scan(handle, 0, want_title=problem is None)
    return _Entry(
        size=stat.st_size,
        mtime_ns=stat.st_mtime_ns,
        ctime_ns=stat.st_ctime_ns,
        inode=stat.st_ino,
        header_crc=crc,
        scanned=scanned,
        newlines=newlines,
        id=session_id or os.path.basename(path).removesuffix(".jsonl"),
        created_at=created_at,
        title=title,
        problem=problem,
        cwd=cwd,
        route=route if problem is None else None,
    )


def _read_header_line(handle: BinaryIO) -> bytes:
    """The first line without its newline (capped: a header is a few hundred bytes)."""
    head = handle.read(HEADER_LIMIT)
    end = head.find(b"\n")
    return head[:end] if end >= 0 else head


def _parse_header(line: bytes) -> tuple[str | None, int | None, str | None, str | None]:
    """(id, createdAt, cwd, problem) from the header line, validated by the format's own model."""
    if not line.strip():
        return None, None, None, EMPTY
    try:
        raw = loads(line)
    except ValueError:
        return None, None, None, INVALID_HEADER
    # Deferred: the models cost a noticeable import, paid only when some file needs a rescan.
    from pydantic import ValidationError

    from app.session.events import FORMAT_VERSION, HEADER_ADAPTER

    if isinstance(raw, dict) and raw.get("type") == "session" and raw.get("version") != FORMAT_VERSION:
        return None, None, None, UNSUPPORTED_VERSION
    try:
        header = HEADER_ADAPTER.validate_json(line)
    except ValidationError:
        return None, None, None, INVALID_HEADER
    return header.id, header.created_at, header.cwd, None


def _scan(
    handle: BinaryIO, offset: int, *, want_title: bool
) -> tuple[int, int, str | None, str | None]:
    """Count complete lines from `offset` (a line start), find the first user message's text and
    the last request's route.

    One pass, each chunk looked at once: a line longer than a chunk is never copied as it grows
    (that made a long line quadratic); its pieces are kept only while it may be a line read here
    (the title line, or a request header).
    Returns (newlines, offset past the last complete line, title or None, route or None).
    """
    newlines = 0
    title: str | None = None
    route: str | None = None
    position = offset  # where the chunk starts in the file
    carried = False  # an incomplete line runs on from the previous chunk
    kept: list[bytes] | None = None  # its pieces, while it may be a line read here
    while chunk := handle.read(CHUNK_SIZE):
        markers = _WANTED_WITH_TITLE if want_title and title is None else _WANTED
        first = chunk.find(b"\n")
        if first < 0:
            kept = _keep_if_wanted(kept if carried else [], chunk, markers)
            carried = True
        else:
            last = chunk.rfind(b"\n")
            newlines += len(chunk) - len(chunk.replace(b"\n", b""))
            lines = [chunk[first + 1 if carried else 0 : last + 1]]
            if carried and kept is not None:
                lines.insert(0, b"".join(kept) + chunk[: first + 1])
            for complete in lines:
                if want_title and title is None:
                    title = _first_user_text(complete)
                route = _last_route(complete) or route
            offset = position + last + 1
            carried = last < len(chunk) - 1
            kept = _keep_if_wanted([], chunk[last + 1 :], markers)
        position += len(chunk)
    return newlines, offset, title, route


_WANTED = (REQUEST_HEADER_LINE[1:],)
_WANTED_WITH_TITLE = (USER_MESSAGE_LINE[1:], REQUEST_HEADER_LINE[1:])
_HEAD = 32
"""Bytes of a line's start that show whether it is spelt as the writer spells it: `{"type":"`,
the longest type name (19) and its closing quote."""


def _keep_if_wanted(
    kept: list[bytes] | None, piece: bytes, markers: tuple[bytes, ...]
) -> list[bytes] | None:
    """`kept` with `piece` added, or None once the line they start can begin with none of
    `markers` and is spelt as the writer spells it (another spelling may be of any type)."""
    if kept is None:
        return None
    kept.append(piece)
    head = b""
    for part in kept:
        head += part[: _HEAD - len(head)]
        if len(head) == _HEAD:
            break
    if any(marker[: len(head)] == head[: len(marker)] for marker in markers):
        return kept
    return kept if PLAIN_HEAD.match(head) is None else None


def _plain(lines: bytes) -> bool:
    """Whether every line of `lines` (complete lines) starts with the writer's spelling of its
    type: then a byte search for a type's start finds every line of that type."""
    if not lines:
        return True
    return PLAIN_HEAD.match(lines) is not None and ODD_LINE.search(lines, 0, len(lines) - 1) is None


def _typed(lines: bytes, name: str) -> list[bytes]:
    """The lines of type `name` among complete `lines`, each spelling read by parsing: the slow
    path, for lines that are not `_plain`."""
    from app.session.type_codes import declared_type  # deferred: only another program's spelling needs it

    marker = b'{"type":"' + name.encode() + b'"'
    found = []
    for line in lines.split(b"\n")[:-1]:
        plain = PLAIN_HEAD.match(line)
        if line.startswith(marker) if plain is not None else declared_type(line) == name:
            found.append(line)
    return found


def _first_user_text(lines: bytes) -> str | None:
    """The title from the first `user/message` line among complete `lines`, or None."""
    hit = _line_start(lines, lines.find(USER_MESSAGE_LINE[1:]), USER_MESSAGE_LINE)
    before = lines[:hit] if hit >= 0 else lines
    if not _plain(before):
        candidates = _typed(before, "user/message")
        if candidates:
            return _title_of(candidates[0])
    return _title_of(lines[hit : lines.find(b"\n", hit)]) if hit >= 0 else None


def _line_start(lines: bytes, hit: int, marker: bytes) -> int:
    """`hit` (where `marker` without its newline was found first in `lines`) if it starts a line,
    else where `marker` with its newline is found after it; -1 when it is not."""
    if hit <= 0:
        return hit
    if lines[hit - 1] == 0x0A:
        return hit
    found = lines.find(marker, hit)
    return found + 1 if found >= 0 else -1


def _title_of(line: bytes) -> str | None:
    try:
        text = loads(line)["data"]["text"]
    except (ValueError, KeyError, TypeError):
        return None
    return shorten(text) if isinstance(text, str) else None


def _last_route(lines: bytes) -> str | None:
    """The route of the last `request/header` line among complete `lines`, or None."""
    hit = lines.rfind(REQUEST_HEADER_LINE)
    hit = hit + 1 if hit >= 0 else (0 if lines.startswith(REQUEST_HEADER_LINE[1:]) else -1)
    after = lines[lines.find(b"\n", hit) + 1 :] if hit >= 0 else lines
    if not _plain(after):
        candidates = _typed(after, "request/header")
        if candidates:
            return _route_of(candidates[-1])
    return _route_of(lines[hit : lines.find(b"\n", hit)]) if hit >= 0 else None


def _route_of(line: bytes) -> str | None:
    """`data.route` as a JSON parser reads it (the writer's layout is not assumed: another
    program may order the keys otherwise, or repeat one)."""
    try:
        route = loads(line)["data"]["route"]
    except (ValueError, KeyError, TypeError):
        return None
    return route if isinstance(route, str) else None


def shorten(text: str, limit: int = TITLE_LENGTH) -> str:
    """Whitespace collapsed, cut to `limit` characters with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def _read_cache(cache_file: Path) -> dict[str, _Entry]:
    """The usable cached entries: none when the cache is missing, foreign or damaged, and none of
    an entry that is not exactly what `_write_cache` writes (it is only a cache: those are rebuilt)."""
    try:
        raw = loads(cache_file.read_bytes())
    except (OSError, ValueError):  # a deeply nested cache is a ValueError too (`untrusted_json`)
        return {}
    if not isinstance(raw, dict) or raw.get("version") != CACHE_VERSION or not isinstance(raw.get("files"), dict):
        return {}
    entries = {name: _cached_entry(fields) for name, fields in raw["files"].items()}
    return {name: entry for name, entry in entries.items() if entry is not None}


_ENTRY_FIELDS = frozenset(field.name for field in dataclass_fields(_Entry))
_COUNT_FIELDS = ("size", "inode", "header_crc", "scanned", "newlines")
_TEXT_FIELDS = ("title", "cwd", "route")
_PROBLEMS = frozenset({EMPTY, INVALID_HEADER, UNSUPPORTED_VERSION})
_LATEST_CREATED_AT = 253_402_300_800_000
"""Year 10000 in ms: a larger `created_at` was not written by the listing."""


def _cached_entry(fields: object) -> _Entry | None:
    if not isinstance(fields, dict) or fields.keys() != _ENTRY_FIELDS:
        return None
    created_at, problem = fields["created_at"], fields["problem"]
    valid = (
        all(_is_count(fields[name]) for name in _COUNT_FIELDS)
        and type(fields["mtime_ns"]) is int
        and type(fields["ctime_ns"]) is int
        and fields["scanned"] <= fields["size"]
        and isinstance(fields["id"], str)
        and (created_at is None or (_is_count(created_at) and created_at < _LATEST_CREATED_AT))
        and all(fields[name] is None or isinstance(fields[name], str) for name in _TEXT_FIELDS)
        and (problem is None or (isinstance(problem, str) and problem in _PROBLEMS))
    )
    return _Entry(**fields) if valid else None


def _is_count(value: object) -> bool:
    return type(value) is int and value >= 0


def _write_cache(cache_file: Path, entries: dict[str, _Entry]) -> None:
    payload = {"version": CACHE_VERSION, "files": {name: vars(entry) for name, entry in entries.items()}}
    try:
        ensure_private_dir(cache_file.parent)
        temporary = cache_file.with_name(f"{cache_file.name}.{os.getpid()}.tmp")
        # Private like the logs it summarises: titles are the user's own words.
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode())
        os.replace(temporary, cache_file)
    except OSError:
        # A read-only data dir only costs speed next time.
        pass

"""The strict session-log reader (DESIGN §2). It never writes and never changes a file.

Reading is two-phase so that opening a session stays cheap: `read_raw` reads the bytes of a file and
of its parent chain and validates only the header lines; `parse_events` validates every event line
and the invariants. A torn last line (a crash artefact) is reported, not raised; only the writer
sets it aside.
"""

from __future__ import annotations

import dataclasses
import gc
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from pydantic import ValidationError

from app.i18n import _
from app.session.errors import SessionCorruptionError, SessionNotFoundError, UnsupportedFormatError
from app.session.events import (
    EVENT_ADAPTER,
    EVENT_TYPES,
    FORMAT_VERSION,
    HEADER_ADAPTER,
    Event,
    SessionHeader,
)
from app.session.invariants import InvariantChecker
from app.untrusted_json import loads

# Every event line starts with exactly these bytes: `type` first, no whitespace. Fast readers
# classify a line by what follows.
EVENT_LINE_PREFIX = b'{"type":'
BOM = b"\xef\xbb\xbf"

ParentResolver = Callable[[str], Path]


@dataclass(frozen=True, slots=True)
class RawSegment:
    """The complete event lines of one file of the chain (the header line excluded).

    `max_seq` is the last seq a child inherits from this file (None for the session's own file);
    `offset` is where `data` starts in the file, `first_line` its 1-based line number.
    """

    path: Path
    data: bytes
    first_line: int
    max_seq: int | None
    offset: int


@dataclass(frozen=True, slots=True)
class TornTail:
    """An unterminated, unparsable last line: the bytes a crash left mid-write, and where they start."""

    offset: int
    data: bytes


@dataclass(frozen=True, slots=True)
class RawSession:
    path: Path
    header: SessionHeader
    segments: tuple[RawSegment, ...]
    torn: TornTail | None

    @property
    def own(self) -> RawSegment:
        return self.segments[-1]


class EventLineError(Exception):
    """One line is not a valid event; the caller adds the file and line number."""

    def __init__(self, reason: str, *, unsupported: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.unsupported = unsupported


# --- raw reading ---------------------------------------------------------------------------------


def read_raw(path: Path | str, *, resolve_parent: ParentResolver | None = None) -> RawSession:
    """Read a session file and its parent chain; validate the header lines only.

    `resolve_parent(id)` maps a parent id to its file; by default `<id>.jsonl` next to the child.
    The chain is walked in a loop, not by recursion: a fork chain of any length costs no stack.
    """
    chain = [_read_file(Path(path))]  # the session first, then its parent, grandparent, …
    visited = {chain[0].path.resolve()}
    while chain[-1].header.parent is not None:
        parent_path = _parent_path(chain[-1], resolve_parent, visited)
        visited.add(parent_path.resolve())
        chain.append(_read_file(parent_path))
    return _inherited(chain)


def _read_file(path: Path) -> RawSession:
    """One file of a chain on its own: its header, its complete event lines, its torn tail."""
    try:
        # Header line and body read separately: a large body is never copied once more.
        with path.open("rb") as handle:
            first_line = handle.readline()
            body = handle.read()
    except FileNotFoundError:
        raise SessionNotFoundError(str(path)) from None
    if not first_line:
        raise SessionCorruptionError(path, 1, _("missing session header: the file is empty"))
    header_end = len(first_line)
    header = _parse_header(path, first_line.rstrip(b"\n"))
    torn = None
    if body and not body.endswith(b"\n"):
        last_start = body.rfind(b"\n") + 1
        if not _is_json(body[last_start:]):
            torn = TornTail(offset=header_end + last_start, data=body[last_start:])
            body = body[:last_start]
    own = RawSegment(path=path, data=body, first_line=2, max_seq=None, offset=header_end)
    return RawSession(path=path, header=header, segments=(own,), torn=torn)


def _parent_path(
    child: RawSession, resolve_parent: ParentResolver | None, visited: set[Path]
) -> Path:
    """The file of `child`'s parent; refused when the file is missing, or already
    in the chain (a loop)."""
    assert child.header.parent is not None
    path, parent_id = child.path, child.header.parent.id
    # The header's model admits only plain ids (`SESSION_ID_PATTERN`): never a path elsewhere.
    if resolve_parent is not None:
        parent_path = resolve_parent(parent_id)
    else:
        parent_path = path.parent / f"{parent_id}.jsonl"
    if parent_path.resolve() in visited:
        raise SessionCorruptionError(
            path, 1, _("the parent chain loops back to {path}").format(path=parent_path)
        )
    if not parent_path.is_file():
        raise SessionCorruptionError(
            path,
            1,
            _("parent session {id} not found (looked for {path})").format(
                id=parent_id, path=parent_path
            ),
        )
    return parent_path


def _inherited(chain: list[RawSession]) -> RawSession:
    """The session `chain[0]` with every ancestor's segment limited to what it inherits (`0..seq`
    of each fork on the way down), ancestors first."""
    # Root first, as each link needs its parent's line count; the error nearest the root wins.
    for child, parent in reversed(list(zip(chain, chain[1:]))):
        _check_fork_point(child, parent)
    segments: list[RawSegment] = []
    limit: int | None = None
    for file in chain:
        segments.append(dataclasses.replace(file.own, max_seq=limit))
        if file.header.parent is not None:
            fork_seq = file.header.parent.seq
            limit = fork_seq if limit is None else min(limit, fork_seq)
    session = chain[0]
    return dataclasses.replace(session, segments=tuple(reversed(segments)))


def _check_fork_point(child: RawSession, parent: RawSession) -> None:
    # Counting lines is enough here: a valid log has one event per line, seq contiguous; a log
    # that is not valid fails in parse_events with a line-precise reason.
    assert child.header.parent is not None
    fork_seq = child.header.parent.seq
    parent_base = parent.header.parent.seq + 1 if parent.header.parent is not None else 0
    parent_last = parent_base + count_lines(parent.own.data) - 1
    if fork_seq > parent_last:
        raise SessionCorruptionError(
            child.path,
            1,
            _("parent.seq {seq} is beyond the last event of parent session {id} (seq {last})").format(
                seq=fork_seq, id=child.header.parent.id, last=parent_last
            ),
        )


def count_lines(data: bytes) -> int:
    """Lines in `data`, an unterminated last line included."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _is_json(line: bytes) -> bool:
    try:
        loads(line)
    except ValueError:  # bad UTF-8, malformed or too deeply nested JSON
        return False
    return True


def _parse_header(path: Path, line: bytes) -> SessionHeader:
    if not line.strip():
        raise SessionCorruptionError(path, 1, _("missing session header: line 1 is blank"))
    try:
        obj = _decode_json(line)
    except EventLineError as error:
        raise SessionCorruptionError(
            path, 1, _("invalid session header: {reason}").format(reason=error.reason)
        ) from None
    if not isinstance(obj, dict):
        raise SessionCorruptionError(
            path,
            1,
            _("the session header is not a JSON object (found {kind})").format(kind=_json_kind(obj)),
        )
    if obj.get("type") != "session":
        raise SessionCorruptionError(
            path,
            1,
            _('missing session header: line 1 must have "type": "session", found {type}').format(
                type=json.dumps(obj.get("type"))
            ),
        )
    version = obj.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version != FORMAT_VERSION:
        raise UnsupportedFormatError(
            path,
            1,
            _("unsupported session format version {version} (this build reads version {known})").format(
                version=version, known=FORMAT_VERSION
            ),
        )
    try:
        return HEADER_ADAPTER.validate_json(line)
    except ValidationError as error:
        raise SessionCorruptionError(
            path,
            1,
            _("invalid session header: {reason}").format(reason=_describe_validation(error, obj, ())),
        ) from None


# --- event lines -----------------------------------------------------------------------------------


def decode_event_line(line: bytes) -> Event:
    """Validate one event line (without its newline) strictly; raise EventLineError if invalid."""
    if line.startswith(EVENT_LINE_PREFIX):
        try:
            return EVENT_ADAPTER.validate_json(line)
        except ValidationError as error:
            _diagnose(line, error)
    _diagnose(line, None)


def _diagnose(line: bytes, error: ValidationError | None) -> NoReturn:
    """Raise the most specific reason `line` is not a valid event."""
    if not line.strip():
        raise EventLineError(_("blank line"))
    obj = _decode_json(line)
    if not isinstance(obj, dict):
        raise EventLineError(
            _("the line is not a JSON object (found {kind})").format(kind=_json_kind(obj))
        )
    if "type" not in obj:
        raise EventLineError(_('the event has no "type" key'))
    if not line.startswith(EVENT_LINE_PREFIX):
        raise EventLineError(_('"type" must be the first key: an event line starts with {prefix}').format(
            prefix=EVENT_LINE_PREFIX.decode()
        ))
    type_ = obj["type"]
    if not isinstance(type_, str):
        raise EventLineError(_('"type" must be a string'))
    if type_ == "session":
        raise EventLineError(_("a second session header: only line 1 may be a header"))
    if type_ not in EVENT_TYPES:
        raise EventLineError(
            _("unknown event type {type!r}").format(type=type_), unsupported=True
        )
    assert error is not None
    raise EventLineError(_describe_validation(error, obj, (type_,)))


def _decode_json(line: bytes) -> Any:
    if line.startswith(BOM):
        raise EventLineError(_("the line starts with a byte order mark (BOM)"))
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        raise EventLineError(
            _("not valid UTF-8 (byte 0x{byte:02x} at column {column})").format(
                byte=line[error.start], column=error.start + 1
            )
        ) from None
    try:
        return loads(text)
    except json.JSONDecodeError as error:  # nesting deeper than MAX_DEPTH included
        raise EventLineError(
            _("malformed JSON at column {column}: {detail}").format(
                column=error.colno, detail=error.msg
            )
        ) from None


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return _("an array")
    if isinstance(value, str):
        return _("a string")
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return _("a number")


def _describe_validation(error: ValidationError, obj: Any, tags: tuple[str, ...]) -> str:
    """A short reason from the first pydantic error: `data.callId: must not be empty`."""
    first = error.errors(include_url=False)[0]
    loc = first["loc"][len(tags):]
    where = _json_path(obj, loc)
    kind, ctx = first["type"], first.get("ctx") or {}
    if kind == "union_tag_invalid":
        where = f"{where}.{ctx['discriminator'].strip(chr(39))}" if where else ctx["discriminator"]
        detail = _("must be one of {expected}").format(expected=ctx["expected_tags"])
    elif kind == "union_tag_not_found":
        where = f"{where}.{ctx['discriminator'].strip(chr(39))}" if where else ctx["discriminator"]
        detail = _("required key is missing")
    else:
        detail = _describe_error_kind(kind, ctx, first["msg"])
    return f"{where}: {detail}" if where else detail


def _describe_error_kind(kind: str, ctx: dict[str, Any], fallback: str) -> str:
    if kind == "missing":
        return _("required key is missing")
    if kind == "extra_forbidden":
        return _("unexpected key")
    if kind == "string_too_short" and ctx.get("min_length") == 1:
        return _("must not be empty")
    if kind == "string_pattern_mismatch":
        return _(
            "must be a session id: up to 128 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    if kind == "literal_error":
        return _("must be one of {expected}").format(expected=ctx["expected"])
    if kind == "greater_than_equal":
        return _("must be at least {minimum}").format(minimum=ctx["ge"])
    if kind == "int_type":
        return _("must be an integer")
    if kind == "string_type":
        return _("must be a string")
    if kind == "bool_type":
        return _("must be true or false")
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return _("must be an object")
    if kind in ("tuple_type", "list_type"):
        return _("must be an array")
    return fallback


def _json_path(obj: Any, loc: tuple[Any, ...]) -> str:
    """`data.content[0].callId` from a pydantic location, dropping discriminator tags.

    A tag is a location step that is not a key of the object but its `type`/`source` value.
    """
    parts: list[str] = []
    node = obj
    tag_skipped = False
    for step in loc:
        if isinstance(step, int):
            parts.append(f"[{step}]")
            node = node[step] if isinstance(node, list) and step < len(node) else None
        elif (
            not tag_skipped
            and isinstance(node, dict)
            and step not in node
            and step in (node.get("type"), node.get("source"))
        ):
            tag_skipped = True
            continue
        else:
            parts.append(f".{step}" if parts else str(step))
            node = node.get(step) if isinstance(node, dict) else None
        tag_skipped = False
    return "".join(parts)


# --- whole sessions ------------------------------------------------------------------------------------


def parse_events(raw: RawSession, checker: InvariantChecker | None = None) -> list[Event]:
    """Every event the session sees, inherited first, each validated strictly and against the invariants.

    Pass `checker` to keep the invariant state for events appended later.
    """
    checker = checker if checker is not None else InvariantChecker()
    events: list[Event] = []
    with _collection_paused():
        for index, segment in enumerate(raw.segments):
            events.extend(parse_segment(segment, checker))
            if segment.max_seq is not None and checker.next_seq <= segment.max_seq:
                child = raw.segments[index + 1]
                raise SessionCorruptionError(
                    child.path,
                    1,
                    _("the parent session ends at seq {last}, before parent.seq {seq}").format(
                        last=checker.next_seq - 1, seq=segment.max_seq
                    ),
                )
    return events


@contextmanager
def _collection_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector during a bulk parse.

    Every parsed event stays alive, so each collection pass walks a growing heap of models that
    hold no cycles; on a large log those passes cost more than the parsing itself (about 2x).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse_segment(segment: RawSegment, checker: InvariantChecker) -> list[Event]:
    """The events of one segment up to its `max_seq`, fed through `checker`."""
    events: list[Event] = []
    for number, line in _numbered_lines(segment):
        if segment.max_seq is not None and checker.next_seq > segment.max_seq:
            break
        events.append(parse_line(segment.path, number, line, checker))
    return events


def parse_line(path: Path, number: int, line: bytes, checker: InvariantChecker) -> Event:
    """One line → one event, checked and applied to `checker`; errors name `path:number`."""
    try:
        event = decode_event_line(line)
    except EventLineError as error:
        error_class = UnsupportedFormatError if error.unsupported else SessionCorruptionError
        raise error_class(path, number, error.reason) from None
    reason = checker.check(event)
    if reason is not None:
        raise SessionCorruptionError(path, number, reason)
    checker.apply(event)
    return event


def _numbered_lines(segment: RawSegment) -> Iterator[tuple[int, bytes]]:
    data = segment.data
    if not data:
        return
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    yield from enumerate(lines, start=segment.first_line)

"""The strict session-log reader (docs/architecture.md §5): one line at a time. It never changes a session file.

`parse_header_line` validates line 1, `decode_event_line` one event line, `parse_line` an event line
against the cross-event rules too; errors name file, line and a specific reason. Opening a session
and its parent chain through line indexes is `app.session.chain`'s job.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from app.i18n import _
from app.session import structs
from app.session.errors import SessionCorruptionError, UnsupportedFormatError
from app.session.ids import FORMAT_VERSION
from app.session.invariants import InvariantChecker
from app.session.lazy_events import events  # imported by the first line msgspec refuses: the models judge it
from app.session.type_codes import AMBIGUOUS, TYPE_CODES, UNKNOWN, declared_type, prefix_code
from app.untrusted_json import loads

if TYPE_CHECKING:
    from pydantic import ValidationError

BOM = b"\xef\xbb\xbf"

ParentResolver = Callable[[str], Path]


class TornTail(NamedTuple):
    """An unterminated, unparsable last line: the bytes a crash left mid-write, and where they start.
    (A named tuple: docs/decisions.md, *Plain classes*.)"""

    offset: int
    data: bytes


class EventLineError(Exception):
    """One line is not a valid event; the caller adds the file and line number."""

    def __init__(self, reason: str, *, unsupported: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.unsupported = unsupported


def parse_header_line(path: Path, line: bytes) -> events.SessionHeader:
    """The header of line 1 as its model; SessionCorruptionError (or UnsupportedFormatError) if invalid."""
    return structs.model_of(read_header_line(path, line))  # type: ignore[no-any-return]  # type: ignore[no-any-return]


def read_header_line(path: Path, line: bytes) -> events.SessionHeader | structs.SessionHeader:
    """The header of line 1 as `parse_header_line` judges it, as msgspec's Struct when msgspec
    says yes (its model is built when first asked for: a resumed chat's first frame builds none)."""
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
    header = structs.decode_header(line)
    if header is not None:
        return header
    from pydantic import ValidationError

    try:
        return events.HEADER_ADAPTER.validate_json(line)
    except ValidationError as error:
        raise SessionCorruptionError(
            path,
            1,
            _("invalid session header: {reason}").format(reason=_describe_validation(error, obj, ())),
        ) from None


# --- event lines -----------------------------------------------------------------------------------


def decode_event_line(line: bytes) -> events.Event:
    """Validate one event line (without its newline) strictly, whatever its JSON spelling (spaces,
    escapes, key order); raise EventLineError if invalid. A line whose `type` key appears twice
    with different values is refused: parsers disagree on which one counts (the line index's byte
    prefix reads the first, every parser here the last)."""
    from pydantic import ValidationError

    try:
        event = events.EVENT_ADAPTER.validate_json(line)
    except ValidationError as error:
        _diagnose(line, error)
    prefix = prefix_code(line)
    ambiguous = prefix != TYPE_CODES[event.type] if prefix != UNKNOWN else declared_type(line) is AMBIGUOUS
    if ambiguous:
        _diagnose(line, None)
    return event


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
    declared = declared_type(line)
    first = prefix_code(line)  # the first `type` (when spelt as the writer does), against the last
    if declared is AMBIGUOUS or first not in (UNKNOWN, TYPE_CODES.get(declared) if isinstance(declared, str) else None):
        raise EventLineError(_('the key "type" appears more than once, with different values'))
    type_ = obj["type"]
    if not isinstance(type_, str):
        raise EventLineError(_('"type" must be a string'))
    if type_ == "session":
        raise EventLineError(_("a second session header: only line 1 may be a header"))
    if type_ not in events.EVENT_TYPES:
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


# --- checked lines ---------------------------------------------------------------------------------


def parse_line(path: Path, number: int, line: bytes, checker: InvariantChecker) -> events.Event:
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

"""Cold tool-history reduction straight from raw log bytes.

Only `request/header` and `developer/message` lines carry tool history, and the writer puts `type`
first on every line, so those lines are found with a byte search for their leading
`{"type":"…"` and only they are parsed. A raw `{"type":` can only start a line: inside a JSON
string its quotes would be escaped, and a line never holds a raw newline.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from pydantic import ValidationError

from app.i18n import _
from app.session.errors import SessionCorruptionError
from app.session.events import EVENT_ADAPTER
from app.session.history import HISTORY_EVENT_TYPES, ToolHistoryReducer

_MARKERS = tuple(b'{"type":"' + name.encode() + b'"' for name in sorted(HISTORY_EVENT_TYPES))
_SEQ = re.compile(rb'\{"type":"[^"]*","seq":(\d+)')


class RawLines(Protocol):
    """A run of complete event lines of one file (see `app.session.reader.RawSegment`)."""

    path: Path
    data: bytes
    first_line: int
    max_seq: int | None


def reduce_raw(segments: Iterable[RawLines], reducer: ToolHistoryReducer) -> None:
    """Feed `reducer` the history events of `segments` (ancestors first), parsing nothing else."""
    for segment in segments:
        _reduce_segment(segment, reducer)


def _reduce_segment(segment: RawLines, reducer: ToolHistoryReducer) -> None:
    data = segment.data
    for start in _history_line_starts(data):
        end = data.find(b"\n", start)
        line = data[start : end if end >= 0 else len(data)]
        try:
            event = EVENT_ADAPTER.validate_json(line)
        except ValidationError as error:
            raise _corruption(segment, start, _("invalid event: {error}").format(
                error=error.errors()[0].get("msg", "")
            )) from None
        if segment.max_seq is not None and event.seq > segment.max_seq:
            break
        try:
            reducer.apply(event)
        except KeyError as missing:
            raise _corruption(
                segment,
                start,
                _("a tool addition refers to a header that does not declare {name}").format(
                    name=missing
                ),
            ) from None
    last = segment.max_seq if segment.max_seq is not None else _last_seq(segment)
    if last is not None:
        reducer.advance(last)


def _history_line_starts(data: bytes) -> list[int]:
    starts: list[int] = []
    for marker in _MARKERS:
        find = data.find
        position = find(marker)
        while position >= 0:
            if position == 0 or data[position - 1] == 0x0A:
                starts.append(position)
            position = find(marker, position + len(marker))
    starts.sort()
    return starts


def _last_seq(segment: RawLines) -> int | None:
    """The seq of the segment's last line, read from its leading `{"type":…,"seq":N`."""
    data = segment.data
    if not data:
        return None
    end = len(data) - 1 if data.endswith(b"\n") else len(data)
    start = data.rfind(b"\n", 0, end) + 1
    match = _SEQ.match(data, start)
    if match is None:
        raise _corruption(segment, start, _("the line does not start with its type and seq"))
    return int(match.group(1))


def _corruption(segment: RawLines, offset: int, reason: str) -> SessionCorruptionError:
    line = segment.first_line + segment.data.count(b"\n", 0, offset)
    return SessionCorruptionError(segment.path, line, reason)

"""A session as its readers see it: header, events (inherited first), and the incremental reductions.

Opening is lazy: `Session.open` reads bytes and validates the header lines; events are parsed on
first use. The tool history and the view are reduced once and then fed only the events appended
since (by the writer through `extend`, or by a read-only follower through `refresh`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from app.i18n import _
from app.session.errors import SessionCorruptionError
from app.session.events import Event, SessionHeader, encode_event
from app.session.fastscan import reduce_raw
from app.session.history import ToolHistory, ToolHistoryReducer
from app.session.invariants import InvariantChecker
from app.session.reader import (
    ParentResolver,
    RawSession,
    TornTail,
    count_lines,
    parse_events,
    parse_line,
    read_raw,
)

if TYPE_CHECKING:
    from app.session.view import SessionView


class Session:
    """Read-only access to one session log. Never writes to the file."""

    def __init__(self, raw: RawSession) -> None:
        self.raw = raw
        self._events: list[Event] | None = None
        self._events_tuple: tuple[Event, ...] | None = None
        self._checker = InvariantChecker()
        # Where the next unread byte of the own file is, and the line number it starts.
        self._offset = raw.own.offset + len(raw.own.data)
        self._lines_after_read = 0  # lines appended since `raw` was read (see `_next_line`)
        self._lines_in_raw: int | None = None
        self._history: ToolHistoryReducer | None = None
        self._view: SessionView | None = None
        self._view_fed = 0

    @classmethod
    def open(
        cls, source: Path | str | RawSession, *, resolve_parent: ParentResolver | None = None
    ) -> Session:
        raw = source if isinstance(source, RawSession) else read_raw(source, resolve_parent=resolve_parent)
        return cls(raw)

    @property
    def id(self) -> str:
        return self.raw.header.id

    @property
    def header(self) -> SessionHeader:
        return self.raw.header

    @property
    def path(self) -> Path:
        return self.raw.path

    @property
    def torn(self) -> TornTail | None:
        return self.raw.torn

    @property
    def events(self) -> tuple[Event, ...]:
        """Every event, inherited first. Parsed strictly on first access."""
        if self._events_tuple is None:
            self._events_tuple = tuple(self._parsed())
        return self._events_tuple

    def load(self) -> Session:
        """Parse now rather than on first use, so a corrupt log fails here; returns self."""
        self._parsed()
        return self

    @property
    def invariants(self) -> InvariantChecker:
        """The invariant state after the last event (open turn, step, pending tool calls)."""
        self._parsed()
        return self._checker

    def tool_history(self) -> ToolHistory:
        """The tool-history snapshot after the last event.

        Cold, on a session whose events were not parsed yet, only the header and developer-message
        lines are parsed (`fastscan`); afterwards only events appended since are reduced. Events are
        contiguous from seq 0 (inherited ones included), so the reducer's `last_seq` indexes them.
        """
        if self._history is None:
            self._history = ToolHistoryReducer()
            if self._events is None:
                reduce_raw(self.raw.segments, self._history)
        if self._events is not None:
            # Parsed events exist only once something read or appended them; feed the new ones.
            for event in self._events[self._history.last_seq + 1 :]:
                self._history.apply(event)
        return self._history.snapshot()

    def view(self) -> SessionView:
        events = self._parsed()
        if self._view is None:
            from app.session.view import SessionView

            self._view = SessionView(self.header)
        for event in events[self._view_fed :]:
            self._view.apply(event)
        self._view_fed = len(events)
        return self._view

    def extend(self, events: tuple[Event, ...] | list[Event]) -> None:
        """Add events the writer has just appended (each written as exactly `encode_event(event)`)."""
        parsed = self._parsed()
        for event in events:
            self._checker.feed(event)
            parsed.append(event)
            self._offset += len(encode_event(event))
            self._lines_after_read += 1
        self._events_tuple = None

    def refresh(self) -> tuple[Event, ...]:
        """Read the complete lines appended to the file since it was last read; return their events.

        A line still being written (no newline yet) is left for the next refresh.
        """
        parsed = self._parsed()
        with self.path.open("rb") as handle:
            # One byte before the offset tells whether the last line read lacked its newline
            # (the writer adds it when it opens the file).
            handle.seek(self._offset - 1)
            chunk = handle.read()
        if len(chunk) < 1:
            raise SessionCorruptionError(
                self.path, None, _("the file became shorter than what was already read")
            )
        previous, new = chunk[:1], chunk[1:]
        if previous != b"\n" and new:
            if not new.startswith(b"\n"):
                raise SessionCorruptionError(
                    self.path, self._next_line - 1, _("the last line grew after it was read")
                )
            new = new[1:]
            self._offset += 1
        complete = new[: new.rfind(b"\n") + 1]
        added: list[Event] = []
        for line in complete.split(b"\n")[:-1]:
            event = parse_line(self.path, self._next_line, line, self._checker)
            added.append(event)
            parsed.append(event)
            self._events_tuple = None
            self._lines_after_read += 1
            self._offset += len(line) + 1
        return tuple(added)

    @property
    def _next_line(self) -> int:
        """The 1-based line number of the next unread line; counted only when needed (refresh,
        error messages), since counting a large file's lines is not free."""
        if self._lines_in_raw is None:
            self._lines_in_raw = count_lines(self.raw.own.data)
        return self.raw.own.first_line + self._lines_in_raw + self._lines_after_read

    def _parsed(self) -> list[Event]:
        if self._events is None:
            self._events = parse_events(self.raw, self._checker)
        return self._events

"""A session as its readers see it: header, events (inherited first), the view, strict validation.

Opening is cheap whatever the size of the log (docs/architecture.md §5): `Session.open` reads the header lines
and the line indexes (`app.session.chain`); `view()` builds what is asked for from fold checkpoints
(`app.session.indexed_view`). Strict validation of every line against the format and the
invariants is a separate stream, `validation()`, that the trajectory drives in the background while it
already shows the log; `load()` runs it to the end (the writer does, before it appends anything).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from app.i18n import _
from app.session.chain import Chain, open_chain
from app.session.errors import SessionCorruptionError, StaleIndexError
from app.session.indexed_view import IndexedView
from app.session.invariants import InvariantChecker
from app.session.lazy_events import events  # imported when first used: a log is read through Structs
from app.session.line_index import VALIDATED, save_index
from app.session.reader import ParentResolver, TornTail, parse_line
from app.session.view import ModelRequest, SessionView

if TYPE_CHECKING:
    from app.session import structs
    from app.session.tool_history import ToolHistory


class Session:
    """Read-only access to one session log. Never writes to the file (only its index cache)."""

    def __init__(self, chain: Chain, resolve_parent: ParentResolver | None = None) -> None:
        self.chain = chain
        self._resolve_parent = resolve_parent
        self._checker = InvariantChecker()
        self._validation: Iterator[int] | None = None
        self._validated = False
        self._view: IndexedView | None = None

    @classmethod
    def open(cls, source: Path | str, *, resolve_parent: ParentResolver | None = None) -> Session:
        return cls(open_chain(Path(source), resolve_parent), resolve_parent)

    @property
    def id(self) -> str:
        return self.chain.own.header.id  # (the model need not be built for it)

    @property
    def header(self) -> events.SessionHeader:
        return self.chain.header

    @property
    def path(self) -> Path:
        return self.chain.path

    @property
    def torn(self) -> TornTail | None:
        return self.chain.torn

    @property
    def last_seq(self) -> int:
        """The seq of the last event (-1 when there is none), known without parsing."""
        return len(self.chain) - 1

    @property
    def events(self) -> tuple[events.Event, ...]:
        """Every event, inherited first, after strict validation of all of them. O(size of the log):
        large-session readers use `view()`."""
        self.load()
        return tuple(self.chain.events(0, len(self.chain)))

    # --- strict validation -----------------------------------------------------------------------

    def validation(self, observe: Callable[[events.Event | structs.Envelope], None] | None = None) -> Iterator[int]:
        """Validate every line strictly and against the invariants, yielding how many events are
        validated so far; a corrupt line raises SessionCorruptionError (or UnsupportedFormatError)
        naming its file and line. Resumes where an earlier, unfinished call stopped. `observe`, for
        a validation that starts here, gets each event once validated (`Chain.validate`); the file
        is then not indexed again when its index turns out stale: the reader must reopen."""
        if self._validated:
            return
        if self._validation is None:
            self._checker = self._recorded_checker() or self._checker
            self._validation = self.chain.validate(self._checker, observe)
        recorded = self._checker.next_seq
        try:
            for count in self._validation:
                yield count
        except StaleIndexError:
            # The index was not the file's (the file changed, or the lines a kept index covers
            # are no longer those it saw; its cache is gone). Before anything was read through it,
            # the file is indexed again and validated from the start; after, the reader must reopen.
            if self._view is not None or not self.chain.from_cache or observe is not None:
                raise
            self.chain = open_chain(self.path, self._resolve_parent, use_cache=False)
            self._checker = InvariantChecker()
            self._validation = self.chain.validate(self._checker)
            recorded = 0
            for count in self._validation:
                yield count
        self._validated = True
        if self._checker.next_seq != recorded:
            self.save_index()  # with the record of it: the next open need not validate again

    def _recorded_checker(self) -> InvariantChecker | None:
        """The checker state a process kept in the line index when it had validated every line of
        the file exactly as it is now (the cache's key: same device, inode, size, mtime and ctime;
        same ancestors): the lines it covers need no second validation. None when there is no such record (or it is unreadable:
        the lines are validated again)."""
        record = self.chain.own.index.extra.raw(VALIDATED)
        if record is None:
            return None
        summary, _newline, ids = record.partition(b"\n")
        try:
            state = json.loads(summary)
            if state["chain"] != self.chain.key() or state["events"] > len(self.chain):
                return None
            return InvariantChecker.restore(state["checker"], self.chain.types, ids, self.chain.event)
        except (KeyError, TypeError, ValueError):
            return None

    def validate(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Run `validation()` to the end, calling `progress(validated, total)` every few thousand
        events. Meant for the trajectory's worker thread while its UI thread reads `view()`: the two share
        no parsing state. A corrupt line raises SessionCorruptionError (or UnsupportedFormatError)
        with file and line here, in the worker; what the view showed stays readable."""
        total = len(self.chain)
        for count in self.validation():
            if progress is not None:
                progress(count, total)

    @property
    def validated(self) -> bool:
        return self._validated

    def load(self) -> Session:
        """Validate everything now, so a corrupt log fails here; returns self."""
        for _count in self.validation():
            pass
        return self

    @property
    def invariants(self) -> InvariantChecker:
        """The invariant state after the last event (open turn, step, pending tool calls)."""
        self.load()
        return self._checker

    # --- reductions ------------------------------------------------------------------------------

    def tool_history(self) -> ToolHistory:
        """The tool-history snapshot after the last event (from the nearest checkpoint)."""
        return self.view().history

    def view(self) -> IndexedView:
        if self._view is None:
            self._view = IndexedView(self.chain)
        return self._view

    def folded_view(self, batch: int = 4096) -> SessionView:
        """Every event folded into a full `SessionView`, read in batches of `batch` lines. For a
        reader that goes on to read everything, this costs much less than reading the indexed
        `view()` item by item and request by request; each line is
        validated strictly, not against the cross-event rules (`validate` does that)."""
        view = SessionView(self.header)
        total = len(self.chain)
        for start in range(0, total, batch):
            for event in self.chain.events(start, min(start + batch, total)):
                view.apply(event)
        return view

    def folded_requests(self, batch: int = 4096) -> Iterator[ModelRequest]:
        """Every request of the session, validated, as `folded_view().requests` has them, each
        handed out as the fold makes it: the fold keeps no turns, items or requests, so memory is
        the message window's (a reader of a long session's every request, such as `toolscope
        cost`). A session nothing was validated of yet is validated and folded in one pass, each
        line decoded once; a corrupt line raises before the requests after it are handed out."""
        view = SessionView(self.header, retain=False)
        made = view.requests
        if not self._validated and self._validation is None and self.chain.own.index.extra.raw(VALIDATED) is None:
            for _count in self.validation(view.apply):
                if made:
                    yield from made
                    made.clear()
            return
        self.load()
        total = len(self.chain)
        for start in range(0, total, batch):
            for event in self.chain.folded_events(start, min(start + batch, total)):
                view.apply(event)
                if made:
                    yield from made
                    made.clear()

    def save_index(self) -> None:
        """Keep the line index, the view's checkpoints and the validation record (when every event
        is validated) for the next open (best effort)."""
        extra = self.chain.own.index.extra
        if self._validated and self._checker.next_seq == len(self.chain):
            summary = {
                "events": self._checker.next_seq,
                "chain": self.chain.key(),
                "checker": self._checker.state_json(),
            }
            encoded = json.dumps(summary, separators=(",", ":")).encode()
            extra.set_raw(VALIDATED, encoded + b"\n" + self._checker.ids_record())
        if self._view is not None:
            self._view.save()
        else:
            save_index(self.chain.own.index)

    # --- growth ----------------------------------------------------------------------------------

    def extend(self, appended: tuple[events.Event, ...] | list[events.Event]) -> None:
        """Add events the writer has just appended (each written as exactly `encode_event(event)`)."""
        self.load()
        for event in appended:
            self._checker.feed(event)
            self._add(self.chain.own.index.end, events.encode_event(event), event)

    def refresh(self) -> tuple[events.Event, ...]:
        """Read the complete lines appended to the file since it was last read; return their events.

        A line still being written (no newline yet) is left for the next refresh.
        """
        self.load()
        own = self.chain.own
        start = own.index.end
        with self.path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < start + len(own.last_line or b""):
                raise SessionCorruptionError(
                    self.path, None, _("the file became shorter than what was already read")
                )
            handle.seek(start)
            new = handle.read()
        if own.last_line is not None:
            rest = new[len(own.last_line) :]
            if not rest:
                return ()
            if not rest.startswith(b"\n"):
                raise SessionCorruptionError(
                    self.path, len(own.index) + 2, _("the last line grew after it was read")
                )
            terminated = own.last_line + b"\n"
            self.chain.add_line(start, terminated)
            start += len(terminated)
            new = rest[1:]
        added: list[events.Event] = []
        for line in new[: new.rfind(b"\n") + 1].split(b"\n")[:-1]:
            event = parse_line(self.path, len(own.index) + 2, line, self._checker)
            self._add(start, line + b"\n", event)
            start += len(line) + 1
            added.append(event)
        return tuple(added)

    def _add(self, offset: int, line: bytes, event: events.Event) -> None:
        self.chain.add_line(offset, line, event)
        if self._view is not None:
            self._view.apply(event)

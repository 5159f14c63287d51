"""The trajectory of a session file, read lazily from its line index (docs/architecture.md §5): a million events
cost what is on screen, not a row each.

The session's events are cut into segments at each `turn/start` (segment 0 is whatever comes
before the first turn); a segment is folded by the reducer alone — `IndexedView.seeded` gives the
fold state before it, so its requests, turns and steps are exactly a full fold's — into a
`TrajectoryModel` of its own, and the last few hundred are kept. Which rows a filter shows comes
from the index's type codes, one byte per event, searched in C; the two kinds a type does not tell
(a failed tool result, a header that starts a new projection sequence) are found by `classify`,
which reads the lines once in a worker thread and parses only the candidates.
"""

from __future__ import annotations

import re
import sys
import threading
from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, overload

from app.i18n import _
from app.session.errors import SessionCorruptionError, SessionError
from app.session.type_codes import TYPE_CODES
from app.session.event_positions import Positions, seqs_in
from app.session.background_scans import (
    ESCAPED_PRINTABLE,
    SCAN_BATCH,
    every_line,
    lines_containing,
    report_main,
    run_reporting,
)
from app.session.reader import EventLineError, decode_event_line
from app.session.session import Session
from app.session.tool_changes import ChangedTool, changed_tools
from app.session.view import Step, Turn
from app.session.view_items import ContextItem, HeaderItem, Item, ToolResultItem, item_of
from app.trajectory.entries import KINDS, Entry, TurnGroup, is_top_level, sequence_boundary
from app.trajectory.model import TrajectoryModel

if TYPE_CHECKING:
    from app.trajectory.cache_marks import CacheMarks
from app.trajectory.search import has_words, log_needles, query_words

FAILED_RESULT = ord("r")
"""The code `classify` gives a tool/result that failed (the index has `R` for every result)."""
SEQUENCE_HEADER = ord("B")
"""The code `classify` gives a request/header that starts a new projection sequence."""
BROKEN_REQUEST = ord("X")
BROKEN_FAILED_REQUEST = ord("x")
"""The codes `mark_breaks` gives an assistant/message and an agent/request-error whose route
missed its prompt cache (`app.trajectory.cache_marks`)."""

KIND_CODES: dict[str, bytes] = {
    "turn": b"T",
    "step": b"S",
    "user": b"U",
    "request": b"AEXx",
    "reasoning": b"",
    "context": b"D",
    "tool": b"CRr",
    "error": b"Erx",
    "retry": b"Y",
    "compaction": b"K",
    "sequence": b"B",
    "header": b"H",
    "cache-break": b"Xx",
}
"""The codes of the events each kind shows (the entries' `kinds`, by type code)."""
assert set(KIND_CODES) == set(KINDS)
KINDS_OF_CODE: dict[int, frozenset[str]] = {
    code: frozenset(kind for kind, codes in KIND_CODES.items() if code in codes)
    for code in b"".join(KIND_CODES.values())
}
STRUCTURE_CODES = b"TS"
ENTRY_CODES = bytes(TYPE_CODES[name] for name in TYPE_CODES if name not in ("turn/end", "step/end"))
"""Every event with a row: all but the ends of turns and steps (which only close them)."""
FAILED_FLAG = re.compile(rb'"isError"[ \t\r]*:[ \t\r]*true')
"""A failed tool result's flag in any spacing: a line without it, nor an escape that could spell
its key otherwise (`ESCAPED_PRINTABLE`), is not one; a line with either is parsed."""

SEGMENT_CACHE = 512
ROW_RUN = 256
GROUP_ABOVE = 200
"""Turns in a session beyond which the tree's top level groups them (`TurnGroup`)."""
GROUP_SPAN = 100
"""Turns in the smallest group; each level up holds ten of the level below."""
TOP_LEVEL_GROUPS = 100


def codes_of(kinds: frozenset[str]) -> bytes:
    return bytes(sorted(set(b"".join(KIND_CODES[kind] for kind in kinds))))


def classification_matters(kinds: frozenset[str]) -> bool:
    """Whether `classify` changes what `kinds` show: a failed tool result shown but not the others,
    or new projection sequences shown but not the other headers (or the other way round)."""
    return ("error" in kinds and "tool" not in kinds) or (("sequence" in kinds) != ("header" in kinds))


def _pattern(codes: bytes) -> re.Pattern[bytes]:
    return re.compile(b"[" + re.escape(codes) + b"]" if codes else b"(?!)")


class IndexedTrajectory:
    """The trajectory model of a session file (the interface of `TrajectoryModel`), built lazily."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._chain = session.chain
        self.view = session.view()
        self.kind_types = bytearray(self._chain.types)
        self._recoding = threading.Lock()  # the classification and the cache breaks come from two threads
        self.classified = False
        self.cache_marks: CacheMarks | None = None
        self.breaks_found = False
        # Where each turn starts (a few hundred kilobytes for a million events): a segment's bounds
        # and the segment of a seq are then a lookup and a bisection.
        self._turn_starts = array("Q", seqs_in(self._chain.types, b"T", 0, len(self._chain)))
        self._segments: OrderedDict[int, TrajectoryModel] = OrderedDict()
        self.by_seq = _EntriesBySeq(self)
        self.entries = IndexedRows(self, ENTRY_CODES)

    @property
    def last_seq(self) -> int:
        return len(self._chain) - 1

    # --- segments ----------------------------------------------------------------------------------

    def segment_number(self, seq: int) -> int:
        """The segment of `seq`: how many turns start at or before it."""
        return bisect_right(self._turn_starts, seq)

    def _bounds(self, number: int) -> tuple[int, int]:
        start = 0 if number == 0 else self._turn_starts[number - 1]
        stop = self._turn_starts[number] if number < len(self._turn_starts) else len(self._chain)
        return start, stop

    def segment(self, number: int) -> TrajectoryModel:
        """The model holding segment `number`'s rows (it may hold its neighbours' too: see
        `_fold_segments`)."""
        cached = self._segments.get(number)
        if cached is not None:
            self._segments.move_to_end(number)
            return cached
        start, stop = self._bounds(number)
        try:
            model = self._fold(start, stop)
        except (SessionError, OSError) as error:  # the state before it is unreadable, or the file changed
            model = TrajectoryModel()
            for seq in range(start, stop):
                model.add_unreadable(seq, str(error))
        self._keep(model, number, number + 1)
        return model

    def _fold_segments(self, first: int, stop: int) -> None:
        """Segments `first..stop-1` folded in one pass into one model, kept as each one's: a group
        of turns built at once (the latest one's, where the trajectory opens) would otherwise seed a
        fold from the checkpoints and read the events before it again for every turn. When the run
        does not fold whole, each segment is left to `segment`, which tells its own fault."""
        if stop - first < 2:
            return
        try:
            model = self._fold(self._bounds(first)[0], self._bounds(stop - 1)[1])
        except (SessionError, OSError):
            return
        self._keep(model, first, stop)

    def _keep(self, model: TrajectoryModel, first: int, stop: int) -> None:
        start, end = self._bounds(first)[0], self._bounds(stop - 1)[1]
        # Every line a row is counted for has one, even one the reducer makes nothing of (a step
        # outside any turn: the validation names it).
        for seq in seqs_in(self._chain.types, ENTRY_CODES, start, end):
            if seq not in model.by_seq:
                model.add_unreadable(seq, _("not part of any turn the log opened"))
        model.mark_breaks(seqs_in(self.kind_types, b"Xx", start, end))
        for number in range(first, stop):
            self._segments[number] = model
            self._segments.move_to_end(number)
        while len(self._segments) > SEGMENT_CACHE:
            self._segments.popitem(last=False)

    def _segment_entries(self, number: int) -> list[Entry]:
        entries = self.segment(number).entries
        start, stop = self._bounds(number)
        first = bisect_left(entries, start, key=lambda entry: entry.seq)
        return entries[first : bisect_left(entries, stop, first, key=lambda entry: entry.seq)]

    def _fold(self, start: int, stop: int) -> TrajectoryModel:
        """Events `start..stop-1` folded onto the state before them; a line that does not parse
        becomes a row of its own and the others are folded without it."""
        view = self.view.seeded(start)
        header = view.current_header
        model = TrajectoryModel(header.sequence if header is not None else None)
        try:
            events = self._chain.events(start, stop)
            unreadable: dict[int, str] = {}
        except SessionCorruptionError:
            events, unreadable = [], {}
            for seq in range(start, stop):
                try:
                    events.append(self._chain.event(seq))
                except SessionCorruptionError as error:
                    unreadable[seq] = str(error)
        for event in events:
            view.apply(event)
        model.update(view)
        for seq, reason in unreadable.items():
            model.add_unreadable(seq, reason)
        return model

    def check(self) -> None:
        """Parse every line now (raises `SessionCorruptionError` naming the first bad one): a small
        session is checked so before it is shown, as a full fold would have."""
        total = len(self._chain)
        for start in range(0, total, SCAN_BATCH):
            self._chain.events(start, min(start + SCAN_BATCH, total))

    # --- rows, tree, jumps -------------------------------------------------------------------------

    def rows(self, kinds: frozenset[str]) -> IndexedRows:
        return IndexedRows(self, codes_of(kinds))

    def _shows(self, start: int, stop: int, kinds: frozenset[str]) -> bool:
        """Whether any event in `start..stop-1` other than a turn or step start is shown."""
        codes = codes_of(kinds).translate(None, STRUCTURE_CODES)
        return _pattern(codes).search(self.kind_types, start, stop) is not None

    def visible(self, entry: Entry, kinds: frozenset[str]) -> bool:
        subject = entry.subject
        if isinstance(subject, (Turn, Step)):
            end = subject.end_seq if subject.end_seq is not None else self._bounds(self.segment_number(subject.seq))[1]
            return self._shows(subject.seq + 1, end, kinds)
        return entry.shown(kinds)

    def top_level(self, kinds: frozenset[str]) -> list[Entry | TurnGroup]:
        found: list[Entry | TurnGroup] = [
            entry for entry in self._segment_entries(0) if is_top_level(entry) and entry.shown(kinds)
        ]
        span = self.top_span
        if span is None:
            return found + self._turn_nodes(0, len(self._turn_starts), kinds)
        return found + self._groups(0, len(self._turn_starts), span, kinds)

    def group_children(self, group: TurnGroup, kinds: frozenset[str]) -> list[Entry | TurnGroup]:
        if group.span > GROUP_SPAN:
            return list(self._groups(group.first, group.stop, group.span // 10, kinds))
        return self._turn_nodes(group.first, group.stop, kinds)

    def group_of(self, turn: int, span: int) -> TurnGroup:
        first = turn - turn % span
        return TurnGroup(first, min(first + span, len(self._turn_starts)), span)

    @property
    def top_span(self) -> int | None:
        """The span of the top-level groups, None when the turns are not grouped."""
        turns = len(self._turn_starts)
        if turns <= GROUP_ABOVE:
            return None
        span = GROUP_SPAN
        while -(-turns // span) > TOP_LEVEL_GROUPS:
            span *= 10
        return span

    def _groups(self, first: int, stop: int, span: int, kinds: frozenset[str]) -> list[Entry | TurnGroup]:
        groups: list[Entry | TurnGroup] = []
        for start in range(first, stop, span):
            group = TurnGroup(start, min(start + span, stop), span)
            if self._shows(self._bounds(group.first + 1)[0], self._bounds(group.stop)[1], kinds):
                groups.append(group)
        return groups

    def _turn_nodes(self, first: int, stop: int, kinds: frozenset[str]) -> list[Entry | TurnGroup]:
        """Turns `first..stop-1` that show something, each followed by what its segment holds after
        the turn's end (a top-level event)."""
        found: list[Entry | TurnGroup] = []
        shown = [number for number in range(first + 1, stop + 1) if self._shows(*self._bounds(number), kinds)]
        unfolded = [number for number in shown if number not in self._segments]
        if unfolded:
            self._fold_segments(unfolded[0], unfolded[-1] + 1)
        for number in shown:
            for entry in self._segment_entries(number):
                if is_top_level(entry) and self.visible(entry, kinds):
                    found.append(entry)
        return found

    def latest_turn(self, kinds: frozenset[str]) -> Entry | None:
        """The last turn that shows something under `kinds` (its segment folded, no other)."""
        for number in range(len(self._turn_starts), 0, -1):
            if self._shows(*self._bounds(number), kinds):
                return self.by_seq.get(self._turn_starts[number - 1])
        return None

    def find(self, kind: str, seq: int, direction: int, kinds: frozenset[str]) -> Entry | None:
        codes = bytes(code for code in KIND_CODES[kind] if KINDS_OF_CODE[code] & kinds)
        return self._next_with(codes, seq + 1 if direction > 0 else seq, direction)

    def nearest(self, seq: int, kinds: frozenset[str]) -> Entry | None:
        codes = codes_of(kinds).translate(None, STRUCTURE_CODES)
        return self._next_with(codes, seq, 1) or self._next_with(codes, seq, -1)

    def _next_with(self, codes: bytes, seq: int, direction: int) -> Entry | None:
        """The first event at or after `seq` (direction 1) or before it (-1) with one of `codes`."""
        if direction > 0:
            match = _pattern(codes).search(self.kind_types, max(seq, 0))
            found = match.start() if match is not None else -1
        else:
            found = max((self.kind_types.rfind(bytes([code]), 0, max(seq, 0)) for code in codes), default=-1)
        return self.by_seq.get(found) if found >= 0 else None

    # --- whole-session passes (worker threads) -----------------------------------------------------

    def search(
        self, query: str, kinds: frozenset[str], progress: Callable[[int, int], None] | None = None
    ) -> list[int]:
        """The seqs of the shown events whose text has all the words. The log's bytes are searched
        for the rarest-looking (longest) word first; only the lines holding every word are parsed
        and checked as the tree and list show them. A row's own words (a turn's "Turn 3") are not
        in its line, so turn and step rows are not searched."""
        words = query_words(query)
        if not words:
            return []
        # A line that escapes a printable character may spell any word otherwise: it is parsed.
        needles = log_needles(words)
        codes = codes_of(kinds).translate(None, STRUCTURE_CODES)
        types = self.kind_types
        if needles:
            lines = lines_containing(self._chain, needles[0], ESCAPED_PRINTABLE, progress=progress, fold_case=True)
        else:
            lines = every_line(self._chain, progress)
        found = []
        for seq, line in lines:
            if types[seq] not in codes:
                continue
            lowered = line.lower()
            if not all(needle in lowered for needle in needles) and ESCAPED_PRINTABLE.search(line) is None:
                continue
            item = _item_at(line)
            if item is None:
                continue
            entry = Entry(seq, KINDS_OF_CODE[types[seq]], item, None, None)
            if has_words(entry, words):
                found.append(seq)
        return found

    def classify(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Find the failed tool results and the headers that start a projection sequence (the
        two kinds a type code does not tell); the filters use them from then on. Parses the
        headers and the results whose bytes say they failed, nothing else."""
        types = self._chain.types
        header, result = TYPE_CODES["request/header"], TYPE_CODES["tool/result"]
        sequence: int | None = None
        boundaries, failed = [], []
        headers = seqs_in(types, bytes([header]), 0, len(types))
        for seq, _segment, _number, line in self._chain.picked_lines(headers):
            item = _item_at(line)
            if isinstance(item, HeaderItem):
                if sequence_boundary(sequence, item.header.sequence):
                    boundaries.append(seq)
                sequence = item.header.sequence
        for seq, line in lines_containing(self._chain, FAILED_FLAG, ESCAPED_PRINTABLE, progress=progress):
            if types[seq] == result:
                item = _item_at(line)
                if isinstance(item, ToolResultItem) and item.is_error:
                    failed.append(seq)
        self._recode({SEQUENCE_HEADER: boundaries, FAILED_RESULT: failed})
        self.classified = True

    def classify_elsewhere(self, progress: Callable[[int, int], None]) -> None:
        """`classify` run by another process (`run_reporting`): the interface keeps its interpreter
        while a large log is read."""
        found = run_reporting("app.trajectory.indexed", self.session.path, progress)
        self._recode({SEQUENCE_HEADER: found["sequences"], FAILED_RESULT: found["failed"]})
        self.classified = True

    def mark_breaks(self, seqs: list[int]) -> None:
        """The requests at `seqs` (in log order) broke their route's cache (`cache_breaks`): the filters show them
        under "cache breaks", in the segments folded and in those folded from now on."""
        types = self._chain.types
        failed = TYPE_CODES["agent/request-error"]
        self._recode({
            BROKEN_REQUEST: [seq for seq in seqs if seq < len(types) and types[seq] != failed],
            BROKEN_FAILED_REQUEST: [seq for seq in seqs if seq < len(types) and types[seq] == failed],
        })
        for number, model in self._segments.items():
            start, stop = self._bounds(number)
            model.mark_breaks(seqs[bisect_left(seqs, start) : bisect_left(seqs, stop)])

    def _recode(self, codes: dict[int, list[int]]) -> None:
        """The events at the seqs get the filter codes a pass found for them, over those other
        passes found (the classification and the cache breaks end in either order)."""
        with self._recoding:
            types = bytearray(self.kind_types)
            for code, seqs in codes.items():
                for seq in seqs:
                    if seq < len(types):  # the file may have grown since the pass read it
                        types[seq] = code
            self.kind_types = types

    # --- tools and their results -------------------------------------------------------------------

    def call_of(self, entry: Entry) -> Entry | None:
        return self.segment(self.segment_number(entry.seq)).call_of(entry)

    def result_of(self, entry: Entry) -> Entry | None:
        return self.segment(self.segment_number(entry.seq)).result_of(entry)

    def changed_tools(self, item: ContextItem) -> tuple[ChangedTool, ...]:
        return changed_tools(self._chain, item)


def _item_at(line: bytes) -> Item | None:
    """The item of one line, or None for a line that does not parse (the validation reports it)."""
    try:
        return item_of(decode_event_line(line))
    except EventLineError:
        return None


class _EntriesBySeq:
    """`by_seq` of a lazy trajectory: the entry of a seq, its segment folded when first asked."""

    def __init__(self, trajectory: IndexedTrajectory) -> None:
        self._trajectory = trajectory

    def get(self, seq: int, default: Entry | None = None) -> Entry | None:
        if not 0 <= seq <= self._trajectory.last_seq:
            return default
        segment = self._trajectory.segment(self._trajectory.segment_number(seq))
        return segment.by_seq.get(seq, default)

    def __getitem__(self, seq: int) -> Entry:
        entry = self.get(seq)
        if entry is None:
            raise KeyError(seq)
        return entry

    def __contains__(self, seq: object) -> bool:
        return isinstance(seq, int) and self.get(seq) is not None


class IndexedRows(Sequence[Entry]):
    """The rows of the events whose code is in `codes`, in log order; a row's seq is found from
    the type codes (a run of them at a time) and its entry built when it is read."""

    def __init__(self, trajectory: IndexedTrajectory, codes: bytes) -> None:
        self._trajectory = trajectory
        self._codes = codes
        self._types = trajectory.kind_types
        self._positions = Positions(self._types, codes) if codes else None
        self._length = len(self._positions) if self._positions is not None else 0
        self._runs: OrderedDict[int, list[int]] = OrderedDict()

    def __len__(self) -> int:
        return self._length

    def seq(self, index: int) -> int:
        run = index // ROW_RUN
        seqs = self._runs.get(run)
        if seqs is None:
            assert self._positions is not None
            seqs = self._positions.run(run * ROW_RUN, min((run + 1) * ROW_RUN, self._length))
            self._runs[run] = seqs
            if len(self._runs) > 64:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(run)
        return seqs[index % ROW_RUN]

    @overload
    def __getitem__(self, index: int) -> Entry: ...
    @overload
    def __getitem__(self, index: slice) -> list[Entry]: ...
    def __getitem__(self, index: int | slice) -> Entry | list[Entry]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._length))]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(index)
        return self._trajectory.by_seq[self.seq(index)]

    def position(self, seq: int) -> int | None:
        types = self._types
        if self._positions is None or not 0 <= seq < len(types) or types[seq] not in self._codes:
            return None
        return self._positions.rank(seq)


Trajectory = TrajectoryModel | IndexedTrajectory
"""What the tree, the list and the screen read: the chat's live model or a file's lazy one."""


def _classified(path: Path, progress: Callable[[int, int], None]) -> dict[str, list[int]]:
    """The child's side of `classify_elsewhere`."""
    trajectory = IndexedTrajectory(Session.open(path))
    trajectory.classify(progress)
    types = trajectory.kind_types
    return {
        "sequences": seqs_in(types, bytes([SEQUENCE_HEADER]), 0, len(types)),
        "failed": seqs_in(types, bytes([FAILED_RESULT]), 0, len(types)),
    }


if __name__ == "__main__":
    sys.exit(report_main(_classified))

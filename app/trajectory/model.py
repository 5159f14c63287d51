"""What the trajectory shows, derived from the session view alone.

`TrajectoryModel.update(view)` turns the view's turns, steps and items into `Entry` rows, one per
event the user can see (a turn or step start, or an item), in log order; it is incremental: only
what the view gained since the last call is added, so a live session costs nothing per event but
its own rows. The tree and the flat list read the same entries; filters are sets of `KINDS`.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from app.session.tool_changes import ChangedTool, changed_tools
from app.session.view import ModelRequest, SessionView, Step, Turn
from app.session.view_items import AssistantItem, ContextItem, HeaderItem, Item, RequestErrorItem, RetryItem, SummaryItem, ToolCallItem, ToolResultItem, UserItem
from app.trajectory.entries import (
    CACHE_BREAK,
    Entry,
    EntryRows,
    TurnGroup,
    Unreadable,
    is_top_level,
    sequence_boundary,
    step_from,
)
from app.trajectory.search import has_words, query_words

if TYPE_CHECKING:
    from app.trajectory.cache_marks import CacheMarks

_TURN = frozenset({"turn"})
_STEP = frozenset({"step"})
_USER = frozenset({"user"})
_REQUEST = frozenset({"request"})
_FAILED_REQUEST = frozenset({"request", "error"})
_CONTEXT = frozenset({"context"})
_TOOL = frozenset({"tool"})
_FAILED_TOOL = frozenset({"tool", "error"})
_RETRY = frozenset({"retry"})
_COMPACTION = frozenset({"compaction"})
_SEQUENCE = frozenset({"sequence"})
_HEADER = frozenset({"header"})
_ERROR = frozenset({"error"})

class TrajectoryModel:
    """The entries of one session view, fed incrementally (`update`): the chat's live session, and
    each segment of a file's lazy trajectory (`IndexedTrajectory`, which has the same interface for
    the tree, the list and the screen: `rows`, `top_level`, `find`, `nearest`, `search`, `by_seq`)."""

    def __init__(self, sequence: int | None = None) -> None:
        """`sequence`: the projection sequence in force before the first event this model sees."""
        self.entries: list[Entry] = []
        self.by_seq: dict[int, Entry] = {}
        self.view: SessionView | None = None
        self._items_seen = 0
        self._turns_seen = 0
        self._steps_seen = 0  # of the last turn seen
        self._requests: dict[int, ModelRequest] = {}
        self._requests_seen = 0
        self._sequence = sequence
        self._calls: dict[str, int] = {}  # call id → seq of its tool/call entry
        self._turn_at = 0  # the turn (index) the last item was placed in or after
        self._step_at = 0  # the step (index) within it
        self.cache_marks: CacheMarks | None = None
        """The rows' cache-break marks (set by the screen, which knows the routes)."""
        self.breaks_found = False
        """Whether every request's cache break is marked (`mark_breaks`), so the filter shows them."""

    def update(self, view: SessionView) -> list[Entry]:
        """Add what `view` gained since the last call; return the new entries (log order)."""
        if self.view is None:
            self.view = view
        elif view is not self.view:
            raise ValueError("a TrajectoryModel follows one session view; make a new one for another")
        for request in view.requests[self._requests_seen :]:
            self._requests[request.seq] = request
        self._requests_seen = len(view.requests)
        new: list[Entry] = [*self._new_structure(view), *self._new_items(view)]
        new.sort(key=lambda entry: entry.seq)
        for entry in new:
            self.entries.append(entry)
            self.by_seq[entry.seq] = entry
        return new

    def _new_structure(self, view: SessionView) -> list[Entry]:
        found: list[Entry] = []
        turns = view.turns
        first = max(self._turns_seen - 1, 0)
        for index in range(first, len(turns)):
            turn = turns[index]
            if index >= self._turns_seen:
                found.append(Entry(turn.seq, _TURN, turn, None, None))
                steps_seen = 0
            else:
                steps_seen = self._steps_seen
            found += [Entry(step.seq, _STEP, step, turn, None) for step in turn.steps[steps_seen:]]
        if turns:
            self._turns_seen = len(turns)
            self._steps_seen = len(turns[-1].steps)
        return found

    def _new_items(self, view: SessionView) -> list[Entry]:
        found: list[Entry] = []
        items = view.items
        for item in items[self._items_seen :]:
            turn, step = self._place(view, item.seq)
            found.append(Entry(item.seq, self._kinds(item), item, turn, step, self._requests.get(item.seq)))
            if isinstance(item, ToolCallItem):
                self._calls[item.call_id] = item.seq
        self._items_seen = len(items)
        return found

    def _kinds(self, item: Item) -> frozenset[str]:
        if isinstance(item, UserItem):
            return _USER
        if isinstance(item, AssistantItem):
            return _REQUEST
        if isinstance(item, RequestErrorItem):
            return _FAILED_REQUEST
        if isinstance(item, ContextItem):
            return _CONTEXT
        if isinstance(item, ToolCallItem):
            return _TOOL
        if isinstance(item, ToolResultItem):
            return _FAILED_TOOL if item.is_error else _TOOL
        if isinstance(item, RetryItem):
            return _RETRY
        if isinstance(item, SummaryItem):
            return _COMPACTION
        assert isinstance(item, HeaderItem)
        sequence, self._sequence = self._sequence, item.header.sequence
        return _SEQUENCE if sequence_boundary(sequence, item.header.sequence) else _HEADER

    def _place(self, view: SessionView, seq: int) -> tuple[Turn | None, Step | None]:
        """The turn and step holding the item at `seq`: a cursor that only moves forward, since
        items come in log order."""
        turns = view.turns
        while self._turn_at + 1 < len(turns) and turns[self._turn_at + 1].seq < seq:
            self._turn_at += 1
            self._step_at = 0
        if not turns or not _within(turns[self._turn_at], seq):
            return None, None
        turn = turns[self._turn_at]
        steps = turn.steps
        while self._step_at + 1 < len(steps) and steps[self._step_at + 1].seq < seq:
            self._step_at += 1
        if not steps or not _within(steps[self._step_at], seq):
            return turn, None
        return turn, steps[self._step_at]

    # --- what the tree, the list and the screen ask ----------------------------------------------

    @property
    def last_seq(self) -> int:
        return self.view.last_seq if self.view is not None else -1

    def rows(self, kinds: frozenset[str]) -> EntryRows:
        return EntryRows([entry for entry in self.entries if entry.shown(kinds)])

    def top_level(self, kinds: frozenset[str]) -> list[Entry | TurnGroup]:
        return [entry for entry in self.entries if is_top_level(entry) and self.visible(entry, kinds)]

    def group_children(self, group: TurnGroup, kinds: frozenset[str]) -> list[Entry | TurnGroup]:
        return []  # never grouped: a live session's turns are all built anyway

    def visible(self, entry: Entry, kinds: frozenset[str]) -> bool:
        """A turn or step when something in it is shown; anything else by its kinds."""
        subject = entry.subject
        by_seq = self.by_seq
        if isinstance(subject, Turn):
            return any(by_seq[item.seq].shown(kinds) for item in subject.items) or any(
                self.visible(by_seq[step.seq], kinds) for step in subject.steps
            )
        if isinstance(subject, Step):
            return any(by_seq[item.seq].shown(kinds) for item in subject.items)
        return entry.shown(kinds)

    def latest_turn(self, kinds: frozenset[str]) -> Entry | None:
        """The last turn that shows something under `kinds`."""
        turns = (entry for entry in reversed(self.entries) if isinstance(entry.subject, Turn))
        return next((entry for entry in turns if self.visible(entry, kinds)), None)

    def find(self, kind: str, seq: int, direction: int, kinds: frozenset[str]) -> Entry | None:
        """The next (or previous) shown event of `kind` after (before) `seq`."""
        candidates = [entry for entry in self.entries if kind in entry.kinds and entry.shown(kinds)]
        return step_from(candidates, seq, direction, wrap=False, key=lambda entry: entry.seq)

    def nearest(self, seq: int, kinds: frozenset[str]) -> Entry | None:
        """The first event the filter shows at or after `seq`, else the last one before it."""
        entries = self.entries
        start = bisect_right(entries, seq - 1, key=lambda entry: entry.seq)
        for index in [*range(start, len(entries)), *range(start - 1, -1, -1)]:
            entry = entries[index]
            if not entry.is_structure and entry.shown(kinds):
                return entry
        return None

    def search(
        self, query: str, kinds: frozenset[str], progress: Callable[[int, int], None] | None = None
    ) -> list[int]:
        """The seqs of every shown event whose text has all the words of `query`."""
        words = query_words(query)
        if not words:
            return []
        return [entry.seq for entry in list(self.entries) if entry.shown(kinds) and has_words(entry, words)]

    def mark_breaks(self, seqs: Iterable[int]) -> None:
        """The requests at `seqs` broke their route's cache: their rows show under "cache breaks"."""
        entries = self.entries
        for seq in seqs:
            entry = self.by_seq.get(seq)
            if entry is None or not entry.shown(_REQUEST):
                continue
            marked = replace(entry, kinds=entry.kinds | CACHE_BREAK)
            self.by_seq[seq] = marked
            entries[bisect_left(entries, seq, key=lambda known: known.seq)] = marked

    def add_unreadable(self, seq: int, reason: str) -> None:
        entry = Entry(seq, _ERROR, Unreadable(seq, reason), None, None)
        self.by_seq[seq] = entry
        self.entries.insert(bisect_left(self.entries, seq, key=lambda known: known.seq), entry)

    def call_of(self, entry: Entry) -> Entry | None:
        """The tool call a result answers (results are shown under their call in the tree)."""
        subject = entry.subject
        if not isinstance(subject, ToolResultItem):
            return None
        seq = self._calls.get(subject.call_id)
        return self.by_seq.get(seq) if seq is not None else None

    def changed_tools(self, item: ContextItem) -> tuple[ChangedTool, ...]:
        """What a tool change changed, from the headers of the chat's session (its view reads the
        session's chain)."""
        assert self.view is not None
        return changed_tools(self.view.chain, item)  # type: ignore[attr-defined]

    def result_of(self, entry: Entry) -> Entry | None:
        subject = entry.subject
        if not isinstance(subject, ToolCallItem) or entry.step is None:
            return None
        for item in entry.step.items:
            if isinstance(item, ToolResultItem) and item.call_id == subject.call_id:
                return self.by_seq.get(item.seq)
        return None


def _within(span: Turn | Step, seq: int) -> bool:
    return span.seq < seq and (span.end_seq is None or seq < span.end_seq)

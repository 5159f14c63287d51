"""A resumed log's entries for the chat, read by whole turns from its end (`ResumedLog`)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # The session models (pydantic) are imported when a log is opened, not before the chat's first
    # frame.
    from app.session.indexed import IndexedView, TurnBounds
    from app.session.view_items import Item

    Entry = Item | str
    """A log entry the conversation shows: an item, or the end reason of a turn (where it was logged)."""


ITEMS_AT_A_TIME = 64
"""At least this many items are read from a resumed log at a time (about a screenful of blocks)."""
READ_BACK = 64
"""Items read at a time while looking for the start of a turn."""


class ResumedLog:
    """A resumed log's entries, read by whole turns from the newest backward.

    Resuming reads only the turns the window shows and scrolling back reads the ones before, so a
    long log costs no more to open than a short one. Whole turns, so that a tool result always comes
    with its call. It reads through its own `Session` on the log's file: its threads never share the
    chat's view, which the agent appends to meanwhile.
    """

    def __init__(self, path: Path) -> None:
        from app.session.session import Session

        self._view: IndexedView = Session.open(path).view()
        self.total = len(self._view.items)
        """The items logged when it was opened: the chat feeds the later ones live."""
        self._items_left = self.total
        self._turns_left = len(self._view.turns)
        self._lock = threading.Lock()

    @property
    def exhausted(self) -> bool:
        return not self._items_left and not self._turns_left

    def earlier(self, items: int = ITEMS_AT_A_TIME) -> list[Entry]:
        """The entries of the whole turns before those read so far: at least `items` items, or all
        that is left."""
        with self._lock:
            view = self._view
            start = max(0, self._items_left - items)
            run = view.items[start : self._items_left]
            turns: list[TurnBounds] = []
            # The turns starting after the run's first item, then the one holding it.
            while self._turns_left and (not turns or run and turns[-1].seq > run[0].seq):
                self._turns_left -= 1
                turns.append(view.turn_bounds(self._turns_left))
            first_turn_seq = turns[-1].seq if turns and run and turns[-1].seq <= run[0].seq else -1
            # Back to that turn's first item (or the log's first, before any turn).
            while start:
                before = view.items[max(0, start - READ_BACK) : start]
                kept = [item for item in before if item.seq >= first_turn_seq]
                run[:0] = kept
                start -= len(kept)
                if len(kept) < len(before):
                    break
            if not start:
                while self._turns_left:  # turns before every item read (none logged an item)
                    self._turns_left -= 1
                    turns.append(view.turn_bounds(self._turns_left))
            self._items_left = start
            ends = sorted((turn.end_seq, turn.end_reason or "") for turn in turns if turn.end_seq is not None)
            return merged_entries(run, ends)


def merged_entries(items: Iterable[Item], ends: list[tuple[int, str]]) -> list[Entry]:
    """`items` in log order with each turn's end reason (sorted `(end_seq, reason)`) where it was logged."""
    entries: list[Entry] = []
    position = 0
    for item in items:
        while position < len(ends) and ends[position][0] < item.seq:
            entries.append(ends[position][1])
            position += 1
        entries.append(item)
    entries.extend(reason for _seq, reason in ends[position:])
    return entries

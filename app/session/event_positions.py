"""Where the events of some kinds are in a log, from its line index's type codes alone (one byte
per event, `app.session.type_codes`): how many lie in a span, which seqs they are, and the n-th
one (`Positions`), without parsing a line. The indexed view numbers requests, turns and items with
them; the trajectory's index finds its rows with them.
"""

from __future__ import annotations

import bisect
import re
from array import array
from collections.abc import Callable
from functools import cache
from itertools import accumulate, repeat

from app.session.line_index import COUNT_BLOCK, COUNTED_CODES

BLOCK = COUNT_BLOCK  # types counted per block when looking for the n-th event of some kinds
TAIL_SPAN = 1 << 16  # events from the end within which those are counted back from the end

_ALL_CODES = bytes(range(256))


@cache
def marking(codes: bytes) -> bytes:
    """A `translate` table that maps the type codes in `codes` to 1 and every other byte to 0."""
    return bytes(int(code in codes) for code in range(256))


def count_in(types: bytes | bytearray, codes: bytes, start: int, stop: int) -> int:
    """How many of `types[start:stop]` are in `codes` (one C pass, whatever the number of codes)."""
    if len(codes) == 1:
        return types.count(codes, start, stop)
    others = _ALL_CODES.translate(None, codes)
    return len(types[start:stop].translate(None, others))


def seqs_in(types: bytes | bytearray, codes: bytes, start: int, stop: int) -> list[int]:
    """The seqs in `start..stop-1` whose type code is in `codes`."""
    pattern = re.compile(b"[" + re.escape(codes) + b"]")
    return [match.start() for match in pattern.finditer(types, start, stop)]


class Positions:
    """The seqs of the events whose type code is in `codes`, counted per block so that the n-th
    one is found by bisecting block totals and scanning one block.

    Near the end of a log whose line index keeps its code counts (`total`), they are counted back
    from the end instead: the tail's numbers and items then cost nothing that grows with the log.
    Elsewhere the block totals are summed from the line index's per-block code counts (`blocks`,
    when it keeps them) rather than counted again from every type code (milliseconds for a million
    events, in every fresh view)."""

    def __init__(
        self,
        types: bytearray,
        codes: bytes,
        total: Callable[[], int | None] = lambda: None,
        blocks: Callable[[], array | None] = lambda: None,
    ) -> None:
        self._types = types
        self._codes = codes
        self._kept_total = total
        self._kept_blocks = blocks
        self._known: tuple[int, int | None] = (-1, None)  # (log length, total) last asked
        self._pattern = re.compile(b"[" + re.escape(codes) + b"]")
        self._marking = marking(codes)
        self._totals: list[int] = [0]  # events before each complete block

    def _complete(self) -> None:
        blocks = len(self._types) // BLOCK
        done = len(self._totals) - 1
        if done >= blocks:
            return
        if not done and (table := self._kept_blocks()) is not None:
            width = len(COUNTED_CODES)
            columns = [table[COUNTED_CODES.index(code) :: width] for code in self._codes if code in COUNTED_CODES]
            self._totals = list(accumulate(map(sum, zip(*columns)) if columns else repeat(0, len(table) // width), initial=0))
            done = len(self._totals) - 1
            if done >= blocks:
                return
        # One translate marks the wanted codes with 1 over all new blocks; a count per block sums them.
        marks = self._types[done * BLOCK : blocks * BLOCK].translate(self._marking)
        total = self._totals[-1]
        for block in range(blocks - done):
            total += marks.count(1, block * BLOCK, (block + 1) * BLOCK)
            self._totals.append(total)

    def _total(self) -> int | None:
        """The count the line index keeps (see `__init__`), summed once per length of the log."""
        if self._known[0] != len(self._types):
            self._known = (len(self._types), self._kept_total())
        return self._known[1]

    def __len__(self) -> int:
        total = self._total()
        if total is not None:
            return total
        self._complete()
        done = (len(self._totals) - 1) * BLOCK
        return self._totals[-1] + count_in(self._types, self._codes, done, len(self._types))

    def rank(self, seq: int) -> int:
        """How many such events come before `seq`."""
        if len(self._types) - seq <= TAIL_SPAN and (total := self._total()) is not None:
            return total - count_in(self._types, self._codes, seq, len(self._types))
        self._complete()
        block = min(seq // BLOCK, len(self._totals) - 1)
        return self._totals[block] + count_in(self._types, self._codes, block * BLOCK, seq)

    def nth(self, n: int) -> int:
        """The seq of the n-th (0-based) such event."""
        return self.run(n, n + 1)[0]

    def run(self, start: int, stop: int) -> list[int]:
        """The seqs of the `start`-th to the `stop - 1`-th such events."""
        first = self._from_the_end(start)
        if first is None:
            first = self._from_block_totals(start)
        seqs: list[int] = []
        for match in self._pattern.finditer(self._types, first):
            seqs.append(match.start())
            if len(seqs) == stop - start:
                return seqs
        raise IndexError(stop - 1)

    def _from_the_end(self, n: int) -> int | None:
        """The seq of the n-th such event counted back from the end, if it lies within TAIL_SPAN
        events of it and the total is kept; else None."""
        total = self._total()
        if total is None or not 0 <= n < total:
            return None
        after = total - n  # such events from the n-th on
        size = len(self._types)
        if after > min(size, TAIL_SPAN):
            return None  # not within TAIL_SPAN events of the end: each event is at most one of them
        # The span from the end that holds them, grown fourfold (the tail's are in the first one).
        span, high = max(1, BLOCK // 4), size
        while count_in(self._types, self._codes, max(0, size - span), size) < after:
            if span >= min(size, TAIL_SPAN):
                return None
            high = size - span - 1
            span *= 4
        low = max(0, size - span)
        # The n-th one is at the last seq from which `after` of them remain: bisected with counts in C.
        while low < high:
            middle = (low + high + 1) // 2
            if count_in(self._types, self._codes, middle, size) >= after:
                low = middle
            else:
                high = middle - 1
        return low

    def _from_block_totals(self, n: int) -> int:
        """The seq of the n-th such event: its block by the block totals, then the shortest prefix
        of that block holding n of them, bisected with counts in C (over the block's codes marked
        once) rather than stepping over the matches."""
        self._complete()
        block = bisect.bisect_right(self._totals, n) - 1
        skip = n - self._totals[block]
        start = block * BLOCK
        marks = self._types[start : start + BLOCK].translate(self._marking)
        low, high = 0, len(marks)
        while low < high:
            middle = (low + high) // 2
            if marks.count(1, 0, middle) < skip + 1:
                low = middle + 1
            else:
                high = middle
        if marks.count(1, 0, low) <= skip:
            raise IndexError(n)
        return start + low - 1

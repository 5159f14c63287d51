"""The session view over a line index (docs/architecture.md §5): any part of a huge log without folding it all.

Only a few event types change what a model request is sent with: a `request/header` (the header in
force and the tool history), a `developer/message` (the tool history) and a `compaction/summary`
(the message window). Everything else only counts: requests, turns, steps, which the line index's
type codes give without parsing. So the fold state at any seq — a `Cursor` — is carried forward by
reading those few lines, and it is recorded every `CHECKPOINT_EVERY` events (in the index cache,
so the next open starts from them). A request, a turn or the tail is then built by seeding the one
reducer, `SessionView`, from the nearest checkpoint and folding just its own events: the result is
the very object a fold from seq 0 makes (a hypothesis property checks that).
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate
from typing import TYPE_CHECKING, Generic, NamedTuple, TypeVar, overload

from app.i18n import _
from app.session.chain import Chain, collector_paused
from app.session.errors import SessionCorruptionError
from app.session.event_positions import Positions, count_in, marking, seqs_in
from app.session.lazy_events import events  # imported when first used: events are read by their `type` tag
from app.session.line_index import save_index
from app.session.type_codes import TYPE_CODES
from app.session.view import FoldSeed, ModelRequest, SessionView, Step, Turn, WindowBase, open_step_of
from app.session.view_items import Item, Message, item_of

if TYPE_CHECKING:  # the tool-history reducer is imported by the first cursor made, not by a tail read
    from app.session.tool_history import ToolHistory, ToolHistoryReducer

CHECKPOINT_EVERY = 1024
CHECKPOINTS = "checkpoints"  # the index section that keeps them
CHANGE_BATCH = 256  # events that change the fold state, parsed at a time
TURN_CACHE_SIZE = 256

T = TypeVar("T")


def _codes(*types: str) -> bytes:
    return bytes(TYPE_CODES[name] for name in types)


REQUEST_CODES = _codes("assistant/message", "agent/request-error")
TURN_CODES = _codes("turn/start")
STEP_CODES = _codes("step/start")
MESSAGE_CODES = _codes("user/message", "developer/message", "assistant/message", "tool/result")
STRUCTURE_CODES = _codes("turn/start", "turn/end", "step/start", "step/end")
CHANGE_CODES = _codes("request/header", "developer/message", "compaction/summary")
_CHANGES = re.compile(b"[" + CHANGE_CODES + b"]")
_TURN_END = _codes("turn/end")
_HEADER, _DEVELOPER = TYPE_CODES["request/header"], TYPE_CODES["developer/message"]
_TURN_START = TURN_CODES[0]
_PINNED = MESSAGE_CODES + _codes("compaction/summary")
_REQUEST_MARKS, _TURN_MARKS, _STEP_MARKS = (marking(codes) for codes in (REQUEST_CODES, TURN_CODES, STEP_CODES))


# --- the fold state at a seq --------------------------------------------------------------------


class Cursor:
    """The fold state before `seq`: what a request made at `seq` would be sent with.

    The message window is `pinned` (seqs kept by the last compaction, the summary first) followed
    by every message event from `window_start` on. A plain class (docs/decisions.md,
    *Plain classes*).
    """

    __slots__ = ("seq", "requests", "header", "header_seq", "history", "pinned", "window_start")

    def __init__(
        self,
        seq: int,
        requests: int,
        header: events.RequestHeaderData | None,
        header_seq: int | None,
        history: ToolHistoryReducer,
        pinned: tuple[int, ...],
        window_start: int,
    ) -> None:
        self.seq = seq
        self.requests = requests
        self.header = header
        self.header_seq = header_seq
        self.history = history
        self.pinned = pinned
        self.window_start = window_start

    def copy(self) -> Cursor:
        return Cursor(
            self.seq, self.requests, self.header, self.header_seq, self.history.copy(),
            self.pinned, self.window_start,
        )

    def to_json(self) -> list[object]:
        return [
            self.seq, self.requests, self.header_seq, self.history.state().to_json(),
            list(self.pinned), self.window_start,
        ]

    def encoded(self) -> bytes:
        return json.dumps(self.to_json(), separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, value: list, chain: Chain) -> Cursor:  # type: ignore[type-arg]
        seq, requests, header_seq, history, pinned, window_start = value
        header = None
        if header_seq is not None:
            event = chain.event(header_seq)
            assert event.type == "request/header"
            header = event.data
        from app.session.tool_history import HistoryState, ToolHistoryReducer

        reducer = ToolHistoryReducer.restore(HistoryState.from_json(history), seq - 1, chain.event)
        return cls(seq, requests, header, header_seq, reducer, tuple(pinned), window_start)

    def change(self, event: events.Envelope, chain: Chain) -> None:
        """Fold one of the events that change the state (header, developer message, summary)."""
        if event.type == "request/header":
            self.header, self.header_seq = event.data, event.seq
        elif event.type == "compaction/summary":
            kept = (*self.pinned, *seqs_in(chain.types, MESSAGE_CODES, self.window_start, event.seq))
            self.pinned = (event.seq, *(seq for seq in kept if seq > event.data.up_to_seq))
            self.window_start = event.seq + 1
        try:
            self.history.apply(event)
        except KeyError as missing:
            path, line = chain.line_number(event.seq)
            raise SessionCorruptionError(
                path,
                line,
                _("a tool addition refers to a header that does not declare {name}").format(name=missing),
            ) from None

    def advance(self, stop: int, chain: Chain) -> None:
        """Carry the state forward to before `stop`, reading only the events that change it (in
        batches: lines close together come from one read)."""
        types = chain.types
        changes = [match.start() for match in _CHANGES.finditer(types, self.seq, stop)]
        for batch in range(0, len(changes), CHANGE_BATCH):
            seqs = changes[batch : batch + CHANGE_BATCH]
            for seq, event in zip(seqs, chain.select(seqs)):
                self.requests += count_in(types, REQUEST_CODES, self.seq, seq)
                self.seq = seq
                self.change(event, chain)
                self.seq += 1
        if stop > self.seq:
            self.requests += count_in(types, REQUEST_CODES, self.seq, stop)
            self.seq = stop
        self.history.advance(stop - 1)

    def seed(self, chain: Chain, last_window: LastWindow) -> FoldSeed:
        pinned, start, stop = self.pinned, self.window_start, self.seq

        def load() -> list[Message]:
            return last_window.load(chain, [*pinned, *seqs_in(chain.types, MESSAGE_CODES, start, stop)])

        return FoldSeed(
            next_seq=self.seq,
            requests=self.requests,
            header=self.header,
            header_seq=self.header_seq,
            history=self.history.copy(),
            window=WindowBase(load) if pinned or start < stop else None,
            step_started_at=_open_step_start(chain, stop),
        )


class LastWindow:
    """The messages of the window read last, by seq. The next request's window is mostly the same
    lines: its messages are these very objects, so a long tool result is held once, not once per
    request still in use (an export holds two requests' bodies and the conversation's item)."""

    def __init__(self) -> None:
        self._messages: dict[int, Message] = {}

    def load(self, chain: Chain, seqs: list[int]) -> list[Message]:
        known = self._messages
        missing = [seq for seq in seqs if seq not in known]
        with collector_paused():
            read = dict(zip(missing, map(item_of, chain.decoded(missing))))
        messages: list[Message] = [known[seq] if seq in known else read[seq] for seq in seqs]  # type: ignore[misc]
        self._messages = dict(zip(seqs, messages))
        return messages


def _open_step_start(chain: Chain, stop: int) -> int | None:
    """When the step open before `stop` started (one line read), or None between steps."""
    types = chain.types
    started = types.rfind(_STEP_START, 0, stop)
    if started < 0 or types.rfind(_STEP_END, 0, stop) > started:
        return None
    (event,) = chain.decoded([started])
    return event.time


_STEP_START = bytes([TYPE_CODES["step/start"]])
_STEP_END = bytes([TYPE_CODES["step/end"]])

ITERATION_RUN = 256
"""Elements a LazyList builds at a time while it is iterated."""


class LazyList(Sequence[T], Generic[T]):
    """A read-only list whose elements are built on access (nothing is kept)."""

    def __init__(
        self,
        length: Callable[[], int],
        build: Callable[[int], T],
        build_run: Callable[[int, int], list[T]] | None = None,
    ) -> None:
        self._length = length
        self._build = build
        self._build_run = build_run

    def __len__(self) -> int:
        return self._length()

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> list[T]: ...
    def __getitem__(self, index: int | slice) -> T | list[T]:
        size = len(self)
        if isinstance(index, slice):
            start, stop, step = index.indices(size)
            if self._build_run is not None and step == 1:
                return self._build_run(start, stop) if start < stop else []
            return [self._build(i) for i in range(start, stop, step)]
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError(index)
        return self._build(index)

    def __iter__(self) -> Iterator[T]:
        size = len(self)
        if self._build_run is None:
            for index in range(size):
                yield self._build(index)
            return
        # In runs: building element i alone finds it from its block's start, so a walk of the
        # whole list one by one would cost a block's scan per element.
        for start in range(0, size, ITERATION_RUN):
            yield from self._build_run(start, min(start + ITERATION_RUN, size))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]


class TurnBounds(NamedTuple):
    seq: int
    end_seq: int | None
    end_reason: str | None


# --- the view ------------------------------------------------------------------------------------


class IndexedView:
    """`SessionView`'s reading interface over a `Chain`, built on demand from checkpoints.

    `apply` follows events appended to the chain (by the writer or a refresh). Lists are
    `LazyList`s: an element is built when it is read and not kept, so memory stays flat whatever
    the size of the log.
    """

    def __init__(self, chain: Chain, every: int = CHECKPOINT_EVERY) -> None:
        self._chain = chain
        self._every = every
        # Each checkpoint as the JSON line it is kept as (`Cursor.to_json`), parsed when used; the
        # lines are read from the index when a state is first wanted (the tail needs none).
        self._loaded_checkpoints: list[bytes] | None = None
        self._unsaved = False
        self._requests = Positions(chain.types, REQUEST_CODES, lambda: chain.counted(REQUEST_CODES), chain.block_counts)
        self._turn_starts = Positions(chain.types, TURN_CODES, lambda: chain.counted(TURN_CODES), chain.block_counts)
        item_codes = _item_codes()
        self._items = Positions(chain.types, item_codes, lambda: chain.counted(item_codes), chain.block_counts)
        self._cursor: Cursor | None = None  # the last state built, reused by the next request after it
        self._tail_state: Cursor | None = None  # the state after the last event, built when asked
        self._turn_cache: OrderedDict[tuple[int, int | None], Turn] = OrderedDict()
        self._turn_seqs: dict[int, int] = {}  # turn number → seq of its turn/start, for `position`
        self._run_seqs: list[int] = []  # the seqs of the last run of items built, and their positions
        self._run_positions: dict[int, tuple[int, int, int]] | None = None
        self._last_window = LastWindow()

    # The lists are made on access, not kept: a view that held lists of its own bound methods would
    # be a reference cycle, and all it reaches (the chain's parsed events) would wait for the
    # collector instead of going when the view does (seen as pauses between requests).

    @property
    def requests(self) -> LazyList[ModelRequest]:
        return LazyList(self._requests.__len__, self.request)

    @property
    def turns(self) -> LazyList[Turn]:
        return LazyList(self._turn_starts.__len__, self.turn)

    @property
    def items(self) -> LazyList[Item]:
        return LazyList(self._items.__len__, self.item, self.item_run)

    @property
    def _tail(self) -> Cursor:
        if self._tail_state is None:
            self._tail_state = self._state_at(len(self._chain), keep=False)
        return self._tail_state

    @property
    def chain(self) -> Chain:
        """The events read: a reader of single lines (a tool change's headers) reads them here."""
        return self._chain

    # --- the SessionView interface -----------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        return len(self._chain) - 1

    @property
    def messages(self) -> Sequence[Message]:
        return SessionView.seeded(self.header, self._tail.seed(self._chain, self._last_window)).messages

    @property
    def current_header(self) -> events.RequestHeaderData | None:
        return self._tail.header

    @property
    def history(self) -> ToolHistory:
        return self._tail.history.snapshot()

    @property
    def open_turn(self) -> Turn | None:
        turns = len(self._turn_starts)
        if not turns:
            return None
        turn = self.turn(turns - 1)
        return turn if turn.open else None

    @property
    def open_step(self) -> Step | None:
        return open_step_of(self.open_turn)

    @property
    def header(self) -> events.SessionHeader:
        return self._chain.header

    def apply(self, event: events.Envelope) -> None:
        """Follow an event just added to the chain (its seq is the chain's last)."""
        tail = self._tail_state
        if tail is None:
            return  # built from the chain, this event included, when first asked for
        if tail.seq % self._every == 0 and tail.seq // self._every == len(self._checkpoints):
            self._checkpoints.append(tail.encoded())
            self._unsaved = True
        if event.type in ("assistant/message", "agent/request-error"):
            tail.requests += 1
        if TYPE_CODES[event.type] in CHANGE_CODES:
            tail.change(event, self._chain)
        tail.seq = event.seq + 1
        tail.history.advance(event.seq)

    def save(self) -> None:
        """Keep the checkpoints in the index cache (the writer calls this as it closes)."""
        self._save_checkpoints(force=True)

    # --- building ----------------------------------------------------------------------------------

    def request(self, index: int) -> ModelRequest:
        """Request `index + 1` (0-based `index`), as the full fold makes it."""
        seq = self._requests.nth(index)
        view = SessionView.seeded(self.header, self._state_at(seq).seed(self._chain, self._last_window))
        view.apply(self._chain.event(seq))
        return view.requests[0]

    def turn(self, index: int) -> Turn:
        """Turn `index + 1`. The last few built are kept, so reading one twice gives the same object
        (and its steps), as `SessionView` does; a turn that may still grow is built again once the
        log has."""
        last = index + 1 >= len(self._turn_starts)
        key = (index, len(self._chain) if last else None)
        cached = self._turn_cache.get(key)
        if cached is not None:
            self._turn_cache.move_to_end(key)
            return cached
        start = self._turn_starts.nth(index)
        stop = len(self._chain) if last else self._turn_starts.nth(index + 1)
        view = self.seeded(start)
        for event in self._chain.events(start, stop):
            view.apply(event)
        self._turn_cache[key] = view.turns[0]
        if len(self._turn_cache) > TURN_CACHE_SIZE:
            self._turn_cache.popitem(last=False)
        return view.turns[0]

    def seeded(self, seq: int) -> SessionView:
        """An empty view holding the fold state before `seq`: fold events `seq..` into it to get
        their turns, items and requests exactly as a fold from seq 0 makes them."""
        return SessionView.seeded(self.header, self._state_at(seq).seed(self._chain, self._last_window))

    def item(self, index: int) -> Item:
        item = item_of(self._chain.event(self._items.nth(index)))
        assert item is not None
        return item

    def item_run(self, start: int, stop: int) -> list[Item]:
        """Items `start..stop-1`, parsed from one read. Their positions are then counted in one
        pass over the type codes they span, when one of them is first asked for (`position`)."""
        seqs = self._items.run(start, stop)
        self._run_seqs, self._run_positions = seqs, None
        with collector_paused():
            return [item for item in map(item_of, self._chain.decoded(seqs)) if item is not None]

    def turn_bounds(self, index: int) -> TurnBounds:
        """Where turn `index + 1` starts and ends and why, as its `Turn` says, without building it: no
        fold state, one `turn/end` line parsed (a reader going back through a log by whole turns)."""
        start = self._turn_starts.nth(index)
        stop = len(self._chain) if index + 1 >= len(self._turn_starts) else self._turn_starts.nth(index + 1)
        end = self._chain.types.find(_TURN_END, start, stop)
        if end < 0:
            return TurnBounds(start, None, None)
        (event,) = self._chain.decoded([end])  # its Struct: no model built for a reason
        assert event.type == "turn/end"
        return TurnBounds(start, end, event.data.reason)

    def position(self, seq: int) -> tuple[int, int, int]:
        """(turn, step, requests made before) at `seq`: what a list row shows beside its item.

        The items of the last run built (`item_run`: the rows a list shows) are counted on from the
        first one's position in one pass over their codes, not each found again from the end or the
        block totals."""
        run = self._run_seqs
        if run and run[0] <= seq <= run[-1]:
            if self._run_positions is None:
                self._run_positions = self._positions_of_run(run)
            known = self._run_positions.get(seq)
            if known is not None:
                return known
        return self._position_from_counts(seq)

    def _positions_of_run(self, seqs: list[int]) -> dict[int, tuple[int, int, int]]:
        """`position` of each of the ascending `seqs`, from the first one's, counted on over the codes
        they span: running counts of turn starts, step starts and requests made in C (`accumulate`
        over marked codes), then one lookup per wanted seq rather than a Python step per code."""
        turn, step, requests = self._position_from_counts(seqs[0])
        first, last = seqs[0], seqs[-1]
        types = self._chain.types
        after_first = types[first + 1 : last + 1]
        # Index k of each list is seq first + k.
        made = list(accumulate(types[first:last].translate(_REQUEST_MARKS), initial=requests))
        turns = list(accumulate(after_first.translate(_TURN_MARKS), initial=0))
        steps = list(accumulate(after_first.translate(_STEP_MARKS), initial=0))
        steps_at_turn_start = []  # steps counted before the j-th turn start of the span (from 1)
        at = types.find(_TURN_START, first + 1, last + 1)
        while at >= 0:
            steps_at_turn_start.append(steps[at - first])
            at = types.find(_TURN_START, at + 1, last + 1)
        found = {}
        for seq in seqs:
            k = seq - first
            started = turns[k]  # turns started since the first seq: steps count from the last one
            if started:
                found[seq] = (turn + started, steps[k] - steps_at_turn_start[started - 1], made[k])
            else:  # a step before any turn is not counted
                found[seq] = (turn, step + steps[k] if turn else step, made[k])
        return found

    def _position_from_counts(self, seq: int) -> tuple[int, int, int]:
        turn = self._turn_starts.rank(seq + 1)
        if not turn:
            return 0, 0, self._requests.rank(seq)
        turn_start = self._turn_seqs.get(turn)
        if turn_start is None:
            if len(self._turn_seqs) >= TURN_CACHE_SIZE:
                self._turn_seqs.clear()
            turn_start = self._turn_seqs[turn] = self._turn_starts.nth(turn - 1)
        step = count_in(self._chain.types, STEP_CODES, turn_start, seq + 1)
        return turn, step, self._requests.rank(seq)

    # --- checkpoints -------------------------------------------------------------------------------

    def _state_at(self, seq: int, *, keep: bool = True) -> Cursor:
        """The fold state before `seq`: from the last state built when it is on the way, else from
        the nearest checkpoint."""
        self._extend_checkpoints(seq)
        self._save_checkpoints()
        cursor = self._cursor
        nearest = min(seq // self._every, len(self._checkpoints) - 1)
        if not keep or cursor is None or not nearest * self._every <= cursor.seq <= seq:
            cursor = self._restore(nearest)
        cursor.advance(seq, self._chain)
        if not keep:
            return cursor
        self._cursor = cursor
        return cursor.copy()

    def _restore(self, number: int) -> Cursor:
        """Checkpoint `number` as a cursor. One that is not what a fold records (the cache was
        damaged) is dropped with those after it and recorded again from an earlier one."""
        recorded_again = False
        while True:
            state = _checked_state(self._checkpoints[number], number * self._every, self._chain.types)
            if state is not None and state[1] == self._requests.rank(state[0]):
                return Cursor.from_json(state, self._chain)
            if recorded_again:  # one this process just recorded: the index's counts are not its codes'
                raise Chain.stale(self._chain.own)
            del self._checkpoints[number:]
            self._extend_checkpoints(number * self._every)
            recorded_again = True

    def _extend_checkpoints(self, seq: int) -> None:
        """Record the checkpoints up to `seq` that no one recorded yet (a fold over few events)."""
        if not self._checkpoints:
            self._checkpoints.append(_empty_cursor(self._chain).encoded())
            self._unsaved = True
        last = len(self._checkpoints) - 1
        if last * self._every + self._every > seq:
            return
        cursor = self._restore(last)
        for boundary in range((last + 1) * self._every, seq + 1, self._every):
            cursor.advance(boundary, self._chain)
            self._checkpoints.append(cursor.encoded())
        self._unsaved = True

    @property
    def _checkpoints(self) -> list[bytes]:
        if self._loaded_checkpoints is None:
            self._loaded_checkpoints = self._load_checkpoints()
        return self._loaded_checkpoints

    def _load_checkpoints(self) -> list[bytes]:
        """The checkpoints kept in the index: a JSON line naming the spacing and the chain they hold
        for, then one line per checkpoint (split, not parsed)."""
        saved = self._chain.own.index.extra.raw(CHECKPOINTS)
        if not saved:
            return []
        first, *states = saved.split(b"\n")
        try:
            meta = json.loads(first)
        except ValueError:
            return []
        if isinstance(meta, dict) and meta.get("every") == self._every and meta.get("chain") == self._chain.key():
            return states[: len(self._chain) // self._every + 1]
        return []

    def _save_checkpoints(self, *, force: bool = False) -> None:
        if not self._unsaved and not force:
            return
        index = self._chain.own.index
        meta = json.dumps({"every": self._every, "chain": self._chain.key()}, separators=(",", ":")).encode()
        index.extra.set_raw(CHECKPOINTS, b"\n".join([meta, *self._checkpoints]))
        save_index(index)
        self._unsaved = False


def _checked_state(raw: bytes, seq: int, types: bytearray) -> list | None:  # type: ignore[type-arg]
    """The checkpoint `raw` parsed, if it has the shape `Cursor.to_json` writes for `seq` and every
    seq in it points before `seq` at an event of the kind it names; else None."""
    try:
        state = json.loads(raw)
        state_seq, requests, header_seq, history, pinned, window_start = state
        start_seq, history_header, started, updates = history
        headers = [seq for seq in (header_seq, start_seq, history_header) if seq is not None]
        seqs = [state_seq, requests, window_start, *headers, *updates, *pinned]
    except (ValueError, TypeError):
        return None
    if not all(type(value) is int and value >= 0 for value in seqs) or type(started) is not bool:
        return None
    if state_seq != seq or window_start > seq or any(value >= seq for value in (*headers, *updates, *pinned)):
        return None
    if any(types[value] != _HEADER for value in headers) or any(types[value] != _DEVELOPER for value in updates):
        return None
    if any(types[value] not in _PINNED for value in pinned):
        return None
    return state
def _empty_cursor(chain: Chain) -> Cursor:
    from app.session.tool_history import ToolHistoryReducer

    return Cursor(0, 0, None, None, ToolHistoryReducer(chain.event), (), 0)


def _item_codes() -> bytes:
    return bytes(code for code in TYPE_CODES.values() if code not in STRUCTURE_CODES) + b"?"

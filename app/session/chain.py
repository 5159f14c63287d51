"""A session and its parent chain opened through line indexes (docs/architecture.md §5).

Opening reads the header lines and brings each file's line index up to date
(`app.session.line_index`); no event is parsed and no file is read whole. Events are then read by
seq range, each line validated strictly on its own when it is read (`event`, `events`); the
cross-event rules need the whole log in order, which `validate` does as a stream of progress
reports.
"""

from __future__ import annotations

import bisect
import gc
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from app.i18n import _
from app.session import structs
from app.session.errors import SessionCorruptionError, SessionNotFoundError, StaleIndexError
from app.session.invariants import InvariantChecker
from app.session.lazy_events import events  # a log is read through Structs; models are built when asked
from app.session.line_index import LineIndex, index_path, open_index
from app.session.reader import (
    EventLineError,
    ParentResolver,
    TornTail,
    decode_event_line,
    parse_line,
    read_header_line,
)
from app.session.type_codes import TYPE_CODES, UNKNOWN, type_code
from app.untrusted_json import loads

EVENT_CACHE_SIZE = 4096
VALIDATION_BATCH = 4096  # lines validated between two progress reports
GAP = 1 << 16  # wanted lines further apart than this many bytes are read separately


@contextmanager
def collector_paused() -> Iterator[None]:
    """No garbage collection while many objects are made at once: events, Structs and view items
    hold no cycles, so a collection there finds nothing and only costs time — and a full one, which
    a burst of new objects sets off, cost more than the burst itself."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


class Segment:
    """The lines of one file of the chain that the session sees: seqs `first_seq..first_seq+count-1`.

    `last_line` is a complete last event line that lacks its newline (not in the index); `limit`
    the last seq a descendant inherits from this file (None for the session's own file). `header`
    is msgspec's Struct of line 1 until `Chain.header` builds its model (the same fields).
    A plain class (docs/decisions.md, *Plain classes*).
    """

    __slots__ = ("header", "index", "first_seq", "count", "last_line", "limit")

    def __init__(
        self,
        header: events.SessionHeader | structs.SessionHeader,
        index: LineIndex,
        first_seq: int,
        count: int,
        last_line: bytes | None,
        limit: int | None = None,
    ) -> None:
        self.header = header
        self.index = index
        self.first_seq = first_seq
        self.count = count
        self.last_line = last_line
        self.limit = limit

    @property
    def path(self) -> Path:
        return self.index.path

    @property
    def lines(self) -> int:
        """Event lines in the file (the session may see fewer of an ancestor's)."""
        return len(self.index) + (self.last_line is not None)


_KEPT_AS_MODELS = frozenset(("request/header", "developer/message"))
"""Events whose data the tool history and the requests keep (`Chain.folded_events`)."""


def folded(event: structs.Envelope) -> events.Event | structs.Envelope:
    """A validated Struct as a fold takes it: as its model where the tool history keeps the
    event's data, else as it is (the view's items take either kind)."""
    return structs.model_of(event) if event.type in _KEPT_AS_MODELS else event


class Chain:
    """The files of a session, ancestors first, with seq → line lookup and on-demand parsing."""

    def __init__(self, segments: list[Segment], torn: TornTail | None) -> None:
        self.segments = segments
        self.torn = torn
        self._starts = [segment.first_seq for segment in segments]
        self._cache: OrderedDict[int, events.Event] = OrderedDict()
        own = segments[-1]
        if len(segments) == 1 and own.last_line is None:
            # The own index's codes are the session's: shared, so appends reach both.
            self.types = own.index.types
        else:
            self.types = bytearray().join(
                segment.index.types[: segment.count] for segment in segments
            )
            if own.last_line is not None:
                self.types.append(type_code(own.last_line))

    @property
    def own(self) -> Segment:
        return self.segments[-1]

    @property
    def from_cache(self) -> bool:
        """Whether any file's line index came from its cache (rather than from its bytes)."""
        return any(segment.index.from_cache for segment in self.segments)

    @property
    def header(self) -> events.SessionHeader:
        """The session's header model, built from its Struct the first time it is asked for."""
        own = self.own
        header = own.header = structs.model_of(own.header)
        return header  # type: ignore[no-any-return]

    @property
    def path(self) -> Path:
        return self.own.path

    def __len__(self) -> int:
        """Events the session sees, inherited ones included (the seq after the last)."""
        own = self.own
        return own.first_seq + own.count

    # --- lookup ----------------------------------------------------------------------------------

    def locate(self, seq: int) -> tuple[Segment, int]:
        """The segment holding `seq` and the 0-based line of it in that file."""
        position = bisect.bisect_right(self._starts, seq) - 1
        while self.segments[position].count <= seq - self.segments[position].first_seq:
            position += 1  # an ancestor cut before its child starts has no line for this seq
        segment = self.segments[position]
        return segment, seq - segment.first_seq

    def counted(self, codes: bytes) -> int | None:
        """How many events of the session have a type code in `codes`, when the line index keeps
        the count (one file, its lines all indexed); None when only a pass over `types` can tell."""
        own = self.own
        if self.types is not own.index.types:
            return None
        counts = own.index.code_counts()
        return sum(counts.get(code, 0) for code in codes)

    def block_counts(self) -> array | None:
        """The line index's per-block code counts (`LineIndex.block_counts`) when its blocks are the
        session's (one file); None when only a pass over `types` can tell."""
        own = self.own
        return own.index.block_counts() if self.types is own.index.types else None

    def line_number(self, seq: int) -> tuple[Path, int]:
        segment, line = self.locate(seq)
        return segment.path, line + 2

    def lines(self, start: int, stop: int) -> Iterator[tuple[int, Segment, int, bytes]]:
        """(seq, segment, line number, bytes) for seqs `start..stop-1`, one read per segment."""
        for seq, segment, line, texts in self._runs(start, stop):
            for offset, text in enumerate(texts):
                yield seq + offset, segment, line + offset + 2, text

    def _runs(self, start: int, stop: int) -> Iterator[tuple[int, Segment, int, list[bytes]]]:
        """(first seq, segment, its 0-based line, the lines) for seqs `start..stop-1`, a run per
        segment, each from one read."""
        seq = start
        while seq < stop:
            segment, line = self.locate(seq)
            take = min(stop - seq, segment.count - line)
            indexed = max(0, min(take, len(segment.index) - line))
            texts: list[bytes] = []
            if indexed:
                first, _end = segment.index.span(line)
                _start, last_end = segment.index.span(line + indexed - 1)
                with segment.path.open("rb") as handle:
                    handle.seek(first)
                    texts = handle.read(last_end - first).split(b"\n")
                if len(texts) != indexed:
                    raise self.stale(segment)
            if take > indexed:
                assert segment.last_line is not None
                texts.append(segment.last_line)
            yield seq, segment, line, texts
            seq += take

    def event(self, seq: int) -> events.Event:
        """The event `seq`, its line validated strictly (not against the cross-event rules)."""
        cached = self._cache.get(seq)
        if cached is not None:
            self._cache.move_to_end(seq)
            return cached
        return next(iter(self.events(seq, seq + 1)))

    def events(self, start: int, stop: int) -> list[events.Event]:
        """Events `start..stop-1`, parsed from one read per file."""
        found: list[events.Event] = []
        missing_from = start
        while missing_from < stop and missing_from in self._cache:
            found.append(self.event(missing_from))
            missing_from += 1
        if missing_from == stop:
            return found
        for seq, segment, number, line in self.lines(missing_from, stop):
            event = self._cache.get(seq)
            if event is None:
                event = self._decode(segment, number, line)
                self._remember(seq, event)
            found.append(event)
        return found

    def folded_events(self, start: int, stop: int) -> Iterator[events.Event | structs.Envelope]:
        """Events `start..stop-1` for a fold that reads each once, none remembered: the msgspec
        Struct of a line it validates (the view's items take either kind), as its model where the
        tool history keeps the event's data (headers, developer messages); else, as `events`
        gives them, the pydantic event or the error naming the line."""
        for _seq, segment, number, line in self.lines(start, stop):
            event = structs.decode_valid(line)
            yield self._decode(segment, number, line) if event is None else folded(event)

    def select(self, seqs: list[int]) -> list[events.Event]:
        """The events of `seqs` (in that order), each parsed alone; only their lines are read."""
        found: dict[int, events.Event] = {}
        missing = []
        for seq in sorted(set(seqs)):
            event = self._cache.get(seq)
            if event is None:
                missing.append(seq)
            else:
                found[seq] = event
        with collector_paused():
            for seq, segment, number, line in self.picked_lines(missing):
                event = self._decode(segment, number, line)
                self._remember(seq, event)
                found[seq] = event
        return [found[seq] for seq in seqs]

    def decoded(self, seqs: list[int]) -> list[events.Event | structs.Envelope]:
        """The events of `seqs` (in that order) for reading only, the fast way: an event parsed
        before as it was, else the msgspec Struct of its line (validated in the pass that parses
        it; not kept), else — a line msgspec refuses — the pydantic event or the error naming the
        line's fault, as `select` gives. `app.session.view_items.item_of` takes either kind.

        Lines close together are parsed in one call (`structs.decode_run`, the lines between
        them included): a window's or a tail's lines cost msgspec's parse, not a Python step each.
        A run it cannot vouch for is read line by line as before."""
        cache = self._cache
        read: dict[int, events.Event | structs.Envelope] = {}
        for run in self._picked_runs(sorted({seq for seq in seqs if seq not in cache})):
            parsed = run.decoded()
            if parsed is not None:
                read.update(zip(run.seqs, parsed))
                continue
            for seq, segment, number, line in run.lines():
                read[seq] = structs.decode_valid(line) or self._decode(segment, number, line)
        return [read[seq] if seq in read else cache[seq] for seq in seqs]

    def picked_lines(self, seqs: list[int]) -> Iterator[tuple[int, Segment, int, bytes]]:
        """(seq, segment, line number, bytes) for the ascending `seqs`: lines close together come
        from one read, and no line between two far apart is read or split."""
        for run in self._picked_runs(seqs):
            yield from run.lines()

    def _picked_runs(self, seqs: list[int]) -> Iterator[_Run]:
        """The ascending `seqs` in runs of lines of one file close together, each run read at once."""
        position = 0
        while position < len(seqs):
            segment, line = self.locate(seqs[position])
            index = segment.index
            if line >= len(index):
                assert segment.last_line is not None
                yield _Run(self, segment, seqs[position : position + 1], segment.last_line + b"\n", line)
                position += 1
                continue
            indexed, first_seq = len(index), segment.first_seq
            seqs_indexed_end = first_seq + min(indexed, segment.count)  # past this file's indexed lines
            last_here = seqs[bisect.bisect_left(seqs, seqs_indexed_end, position) - 1] - first_seq
            index.trust(line, last_here + 1)
            offsets = index.offsets
            run_end = position + 1
            while (
                run_end < len(seqs)
                and seqs[run_end] < seqs_indexed_end
                and offsets[seqs[run_end] - first_seq] - offsets[seqs[run_end - 1] - first_seq] <= GAP
            ):
                run_end += 1
            start = offsets[line]
            last = seqs[run_end - 1] - first_seq
            stop = offsets[last + 1] if last + 1 < indexed else index.end
            with segment.path.open("rb") as handle:
                handle.seek(start)
                data = handle.read(stop - start)
            yield _Run(self, segment, seqs[position:run_end], data, line)
            position = run_end

    @staticmethod
    def _decode(segment: Segment, number: int, line: bytes) -> events.Event:
        """The event of a line, validated strictly: the pydantic model built from msgspec's Struct
        when msgspec says yes; else the models' parse, which accepts the line or names its fault."""
        event = structs.event_model(line)
        if event is not None:
            return event  # type: ignore[return-value]
        try:
            return decode_event_line(line)
        except EventLineError as error:
            raise SessionCorruptionError(segment.path, number, error.reason) from None

    def _remember(self, seq: int, event: events.Event) -> None:
        self._cache[seq] = event
        if len(self._cache) > EVENT_CACHE_SIZE:
            self._cache.popitem(last=False)

    # --- growth ----------------------------------------------------------------------------------

    def add_line(self, offset: int, line: bytes, event: events.Event | None = None) -> None:
        """A line the writer (or a refresh) found appended to the own file at `offset`
        (`line` with its newline)."""
        own = self.own
        own.index.add_line(offset, line)
        if own.last_line is not None:
            # The complete last line that lacked its newline has got it: already counted.
            own.last_line = None
            return
        own.count += 1
        if self.types is not own.index.types:
            self.types.append(own.index.types[-1])
        if event is not None:
            self._remember(own.first_seq + own.count - 1, event)

    # --- strict validation ---------------------------------------------------------------------------

    def validate(
        self, checker: InvariantChecker, observe: Callable[[events.Event | structs.Envelope], None] | None = None
    ) -> Iterator[int]:
        """Validate every line from `checker.next_seq` on strictly and against the invariants, in log
        order, feeding `checker`; yield how many events are validated so far, every few thousand.
        Raises SessionCorruptionError / UnsupportedFormatError naming file and line, as the reader
        does. A checker restored after the ancestors' lines goes on from there. `observe` gets each
        event once it is validated, as `folded_events` gives it (a fold in the same pass)."""
        for position, segment in enumerate(self.segments):
            seq = max(segment.first_seq, checker.next_seq)
            stop = segment.first_seq + segment.count
            if seq >= stop and position + 1 < len(self.segments):
                continue  # an ancestor the restored checker has already seen whole
            while seq < stop:
                batch_stop = min(stop, seq + VALIDATION_BATCH)
                self._validate_batch(segment, seq, batch_stop, checker, observe)
                seq = batch_stop
                yield seq
            if position + 1 < len(self.segments):
                self._check_inherited(segment, position, checker)
        yield len(self)

    def key(self) -> list[list[object]]:
        """The ancestors as this chain sees them — file, inode, seqs and where the inherited lines
        end — what a record kept in the own index depends on."""
        return [
            [str(segment.path), _inode(segment.path), segment.first_seq, segment.count, _inherited_end(segment)]
            for segment in self.segments[:-1]
        ]

    def _validate_batch(
        self,
        segment: Segment,
        start: int,
        stop: int,
        checker: InvariantChecker,
        observe: Callable[[events.Event | structs.Envelope], None] | None,
    ) -> None:
        """Seqs `start..stop-1` of `segment`, in one tight loop: a valid line costs one msgspec
        decode into the Structs that mirror the models (`app.session.structs`, faster than
        `json.loads`) and the checker; a line msgspec refuses goes through `parse_line` and the
        pydantic models, which accept it or name the reason. The collector is paused for the batch
        only (`collector_paused`): collections of the growing checker state only cost time."""
        check, apply = checker.check, checker.apply
        with collector_paused():
            for _seq, _segment, line, texts in self._runs(start, stop):
                for number, text in enumerate(texts, line + 2):
                    event = structs.decode_valid(text)
                    if event is None:
                        parsed = parse_line(segment.path, number, text, checker)  # or raises, naming the reason
                        if observe is not None:
                            observe(parsed)
                        continue
                    reason = check(event)
                    if reason is not None:
                        raise SessionCorruptionError(segment.path, number, reason)
                    apply(event)
                    if observe is not None:
                        observe(folded(event))
        # The types of the lines read, as validated, against the index's (one comparison in C): the
        # index classifies every valid line as the strict reader does, so a difference means the
        # index is not the file's.
        if checker.types(start, stop) != self.types[start:stop]:
            raise self.stale(segment)

    @staticmethod
    def stale(segment: Segment) -> StaleIndexError:
        """The error for `segment`'s index not being its file's, its cache removed."""
        index_path(segment.path).unlink(missing_ok=True)
        return StaleIndexError(segment.path)

    def _check_inherited(self, segment: Segment, position: int, checker: InvariantChecker) -> None:
        assert segment.limit is not None
        if checker.next_seq <= segment.limit:
            raise SessionCorruptionError(
                self.segments[position + 1].path,
                1,
                _("the parent session ends at seq {last}, before parent.seq {seq}").format(
                    last=checker.next_seq - 1, seq=segment.limit
                ),
            )


class _Run:
    """Wanted lines of one file close together, and the bytes read for them: from the first wanted
    line's start to the last one's newline (the lines between included), or a complete last line
    that lacks its newline (not in the index; given one here)."""

    def __init__(self, chain: Chain, segment: Segment, seqs: list[int], data: bytes, line: int) -> None:
        self.chain, self.segment, self.seqs, self.data, self.line = chain, segment, seqs, data, line

    def lines(self) -> Iterator[tuple[int, Segment, int, bytes]]:
        """(seq, segment, line number, bytes) of each wanted line, each checked against the index."""
        segment, data = self.segment, self.data
        index = segment.index
        if self.line >= len(index):
            yield self.seqs[0], segment, self.line + 2, data[:-1]
            return
        offsets, types, indexed, first_seq = index.offsets, index.types, len(index), segment.first_seq
        start = offsets[self.line]
        for seq in self.seqs:
            at = seq - first_seq
            begin = offsets[at] - start
            end = (offsets[at + 1] if at + 1 < indexed else index.end) - 1 - start
            text = data[begin:end]
            if data[end : end + 1] != b"\n" or type_code(text) != types[at]:
                raise self.chain.stale(segment)
            yield seq, segment, at + 2, text

    def decoded(self) -> list[structs.Envelope | events.Event] | None:
        """The Structs of the wanted lines from one msgspec call over the run, when every line of it
        is one msgspec accepts and the index's type codes say what each is (so each starts with
        `{"type":"`, as `decode_valid` asks); None when it cannot vouch for them all (the lines are
        then read one by one, which names a line's fault or a changed file). A wanted header with
        more brackets than the models nest is judged alone (`Chain._decode`)."""
        segment = self.segment
        index = segment.index
        if self.line >= len(index) or len(self.seqs) < 2:
            return None
        first_seq, types, data = segment.first_seq, index.types, self.data
        first, last = self.line, self.seqs[-1] - first_seq
        if types.find(UNKNOWN, first, last + 1) >= 0:
            return None
        # Every line starts with `{"type":"` (a line the index classifies does, if the file is as
        # the index saw it): checked for all at once, as the type each was parsed as is below.
        count = last + 1 - first
        if not data.startswith(_EVENT_START) or data.count(_NEXT_EVENT_START) != count - 1:
            return None
        parsed = structs.decode_run(data)
        if parsed is None or len(parsed) != count:
            return None
        if bytes(map(structs.STRUCT_CODES.__getitem__, map(type, parsed))) != types[first : last + 1]:
            return None  # not the lines the index saw: read one by one, which says so
        wanted: list[structs.Envelope | events.Event] = [parsed[seq - first_seq - first] for seq in self.seqs]
        # A wanted header nested deeper than the models parse is theirs to judge, alone; one not
        # wanted is not read (as line by line). Most headers over the bracket count are not deep but
        # long (a tool list): they spoil nothing else of the run.
        header = types.find(_HEADER, first, last + 1)
        while header >= 0:
            position = bisect.bisect_left(self.seqs, header + first_seq)
            wanted_header = position < len(self.seqs) and self.seqs[position] == header + first_seq
            if wanted_header and not structs.within_models_bound(text := self._text(header)):
                wanted[position] = self.chain._decode(segment, header + 2, text)
            header = types.find(_HEADER, header + 1, last + 1)
        return wanted

    def _text(self, at: int) -> bytes:
        """Line `at` (0-based in the file) of the run's data, without its newline."""
        index = self.segment.index
        start = index.offsets[self.line]
        stop = index.offsets[at + 1] if at + 1 < len(index) else index.end
        return self.data[index.offsets[at] - start : stop - 1 - start]


_EVENT_START = b'{"type":"'
_NEXT_EVENT_START = b"\n" + _EVENT_START
_HEADER = TYPE_CODES["request/header"]


# --- opening -------------------------------------------------------------------------------------


def open_chain(path: Path, resolve_parent: ParentResolver | None = None, *, use_cache: bool = True) -> Chain:
    """Open `path` and its ancestors (walked in a loop, not recursively), validating header lines
    and the fork points against each parent's line count. Without `use_cache`, every file is
    indexed from its bytes."""
    opened: list[tuple[events.SessionHeader, LineIndex, bytes | None, TornTail | None]] = []
    visited: set[Path] = set()
    current = path
    while True:
        header, index, last_line, torn = _open_file(current, use_cache)
        opened.append((header, index, last_line, torn))
        visited.add(current.resolve())
        if header.parent is None:
            break
        parent_path = _parent_path(current, header, resolve_parent)
        if parent_path.resolve() in visited:
            raise SessionCorruptionError(
                current, 1, _("the parent chain loops back to {path}").format(path=parent_path)
            )
        if not parent_path.is_file():
            raise SessionCorruptionError(
                current,
                1,
                _("parent session {id} not found (looked for {path})").format(
                    id=header.parent.id, path=parent_path
                ),
            )
        current = parent_path
    opened.reverse()
    segments: list[Segment] = []
    for header, index, last_line, _torn in opened:
        base = header.parent.seq + 1 if header.parent is not None else 0
        segments.append(Segment(header, index, base, len(index) + (last_line is not None), last_line))
    for position in range(len(segments) - 1):
        parent, child = segments[position], segments[position + 1]
        assert child.header.parent is not None
        fork_seq = child.header.parent.seq
        parent_last = parent.first_seq + parent.lines - 1
        if fork_seq > parent_last:
            raise SessionCorruptionError(
                child.path,
                1,
                _("parent.seq {seq} is beyond the last event of parent session {id} (seq {last})").format(
                    seq=fork_seq, id=child.header.parent.id, last=parent_last
                ),
            )
    # Each ancestor is seen up to the lowest fork point below it.
    limit: int | None = None
    for position in range(len(segments) - 1, 0, -1):
        fork_seq = segments[position].first_seq - 1
        limit = fork_seq if limit is None else min(limit, fork_seq)
        parent = segments[position - 1]
        parent.limit = limit
        parent.count = max(0, min(parent.lines, limit - parent.first_seq + 1))
    return Chain(segments, opened[-1][3])


def _open_file(path: Path, use_cache: bool) -> tuple[events.SessionHeader | structs.SessionHeader, LineIndex, bytes | None, TornTail | None]:
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise SessionNotFoundError(str(path)) from None
    with handle:
        first_line = handle.readline()
        if not first_line:
            raise SessionCorruptionError(path, 1, _("missing session header: the file is empty"))
        header = read_header_line(path, first_line.rstrip(b"\n"))
        if not first_line.endswith(b"\n"):
            return header, LineIndex(path, len(first_line), 0, end=len(first_line)), None, None
        index, rest = open_index(path, handle, first_line.rstrip(b"\n"), use_cache=use_cache)
    if not rest:
        return header, index, None, None
    if _is_json(rest):
        return header, index, rest, None
    return header, index, None, TornTail(offset=index.end, data=rest)


def _parent_path(path: Path, header: events.SessionHeader | structs.SessionHeader, resolve_parent: ParentResolver | None) -> Path:
    assert header.parent is not None
    parent_id = header.parent.id
    # The header's model admits only plain ids (`SESSION_ID_PATTERN`): never a path elsewhere.
    if resolve_parent is not None:
        return resolve_parent(parent_id)
    return path.parent / f"{parent_id}.jsonl"


def _is_json(line: bytes) -> bool:
    try:
        loads(line)
    except ValueError:  # bad UTF-8, malformed or too deeply nested JSON
        return False
    return True


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None


def _inherited_end(segment: Segment) -> int:
    """The offset just past the last line a descendant inherits from `segment`'s file."""
    if not segment.count:
        return segment.index.header_end
    if segment.count <= len(segment.index):
        return segment.index.span(segment.count - 1)[1] + 1
    assert segment.last_line is not None
    return segment.index.end + len(segment.last_line)

"""The tool-history reducer (docs/architecture.md §6): one capability-independent reduction of headers and
developer messages into an immutable snapshot that every route's projection starts from.

Only `request/header` and `developer/message` events carry tool history; every other event just
advances `last_seq`. That is what lets a cold reduction skip parsing most lines of a log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from app.session.headers import canonical_tool
from app.session.lazy_events import events  # imported when first used: events are read by their tag


@dataclass(frozen=True, slots=True)
class HistoryUpdate:
    """One developer message of the current sequence, resolved to definitions.

    A tool-registry message has `additions`/`removals`; an instructions message has `text`.
    """

    message_id: str
    seq: int
    additions: tuple[events.ToolDefinition, ...] = ()
    removals: tuple[str, ...] = ()
    text: str | None = None

    @property
    def is_instructions(self) -> bool:
        return self.text is not None


@dataclass(frozen=True, slots=True)
class ToolHistory:
    """What every projection needs, frozen at `last_seq`.

    `initial`/`system` are the declarations and top system text when the current projection
    sequence started (a new `sequence`, or a rebuild after a retained tool's definition changed);
    `declared` is D of docs/architecture.md §8: `initial`, then each added definition in first-seen order;
    `current`/`current_system` are the header in force.
    """

    sequence: int
    initial: tuple[events.ToolDefinition, ...]
    system: str
    updates: tuple[HistoryUpdate, ...]
    declared: tuple[events.ToolDefinition, ...]
    current: tuple[events.ToolDefinition, ...]
    current_system: str
    header_seq: int | None
    start_seq: int | None
    last_seq: int

    @property
    def current_names(self) -> frozenset[str]:
        return frozenset(tool.name for tool in self.current)


EMPTY_HISTORY = ToolHistory(
    sequence=0,
    initial=(),
    system="",
    updates=(),
    declared=(),
    current=(),
    current_system="",
    header_seq=None,
    start_seq=None,
    last_seq=-1,
)


@dataclass(frozen=True, slots=True)
class HistoryState:
    """Where a reducer stands, by reference to events: the header that started the current
    projection sequence, the header in force, whether that header started it, and the developer
    messages that made the updates. A checkpoint keeps this; `ToolHistoryReducer.restore` rebuilds
    the reducer from it by reading those few events."""

    start_seq: int | None
    header_seq: int | None
    header_started: bool
    update_seqs: tuple[int, ...]

    def to_json(self) -> list[object]:
        return [self.start_seq, self.header_seq, self.header_started, list(self.update_seqs)]

    @classmethod
    def from_json(cls, value: list) -> HistoryState:  # type: ignore[type-arg]
        start_seq, header_seq, started, updates = value
        return cls(start_seq, header_seq, bool(started), tuple(updates))


EventAt = Callable[[int], "events.Envelope"]
"""The event of a seq, for a reducer that does not hold every header it has seen."""


class ToolHistoryReducer:
    """Folds events one at a time; `snapshot()` is O(1) between changes: snapshots share the
    update and declaration tuples until an update or declaration changes them."""

    __slots__ = (
        "_sequence",
        "_initial",
        "_system",
        "_declared",
        "_declared_json",
        "_updates",
        "_current",
        "_current_system",
        "_header_seq",
        "_start_seq",
        "_header_started",
        "_headers",
        "_event_at",
        "_last_seq",
        "_cached",
        "_updates_tuple",
        "_declared_tuple",
    )

    def __init__(self, event_at: EventAt | None = None) -> None:
        self._sequence = 0
        self._initial: tuple[events.ToolDefinition, ...] = ()
        self._system = ""
        self._declared: dict[str, events.ToolDefinition] = {}
        self._declared_json: dict[str, str] = {}
        self._updates: list[HistoryUpdate] = []
        self._current: tuple[events.ToolDefinition, ...] = ()
        self._current_system = ""
        self._header_seq: int | None = None
        self._start_seq: int | None = None
        self._header_started = False
        self._headers: dict[int, dict[str, events.ToolDefinition]] = {}
        self._event_at = event_at
        self._last_seq = -1
        self._cached: ToolHistory | None = EMPTY_HISTORY
        self._updates_tuple: tuple[HistoryUpdate, ...] = ()
        self._declared_tuple: tuple[events.ToolDefinition, ...] | None = ()

    @classmethod
    def restore(cls, state: HistoryState, last_seq: int, event_at: EventAt) -> ToolHistoryReducer:
        """The reducer as it stood after `last_seq`, rebuilt from `state` by replaying the events
        that made it (the starting header, its updates, the header in force)."""
        reducer = cls(event_at)
        if state.start_seq is not None:
            start = event_at(state.start_seq)
            assert start.type == "request/header"
            reducer._start_over(state.start_seq, start.data)
            reducer._header_seq = state.start_seq
            reducer._current, reducer._current_system = start.data.tools, start.data.system
            reducer._header_started = False
            for seq in state.update_seqs:
                message = event_at(seq)
                assert message.type == "developer/message"
                reducer._developer(message)
        if state.header_seq is not None:
            current = event_at(state.header_seq)
            assert current.type == "request/header"
            reducer._current, reducer._current_system = current.data.tools, current.data.system
            reducer._header_seq = state.header_seq
        reducer._header_started = state.header_started
        reducer._last_seq = last_seq
        reducer._cached = None
        return reducer

    def state(self) -> HistoryState:
        return HistoryState(
            self._start_seq,
            self._header_seq,
            self._header_started,
            tuple(update.seq for update in self._updates),
        )

    def copy(self) -> ToolHistoryReducer:
        """An independent reducer in the same state (the containers copied, the values shared)."""
        twin = ToolHistoryReducer(self._event_at)
        for name in self.__slots__:
            setattr(twin, name, getattr(self, name))
        twin._declared = dict(self._declared)
        twin._declared_json = dict(self._declared_json)
        twin._updates = list(self._updates)
        twin._headers = dict(self._headers)
        return twin

    @property
    def last_seq(self) -> int:
        return self._last_seq

    def apply(self, event: events.Envelope) -> None:
        kind = event.type
        if kind == "request/header":
            self._header(event.seq, event.data)
        elif kind == "developer/message":
            self._developer(event)
        self.advance(event.seq)

    def advance(self, seq: int) -> None:
        """Note that events up to `seq` were seen (the ones carrying no tool history)."""
        if seq > self._last_seq:
            self._last_seq = seq

    def snapshot(self) -> ToolHistory:
        if self._cached is None:
            if self._declared_tuple is None:
                self._declared_tuple = tuple(self._declared.values())
            self._cached = ToolHistory(
                sequence=self._sequence,
                initial=self._initial,
                system=self._system,
                updates=self._updates_tuple,
                declared=self._declared_tuple,
                current=self._current,
                current_system=self._current_system,
                header_seq=self._header_seq,
                start_seq=self._start_seq,
                last_seq=self._last_seq,
            )
        elif self._cached.last_seq != self._last_seq:
            self._cached = replace(self._cached, last_seq=self._last_seq)
        return self._cached

    # --- the rules ---------------------------------------------------------------------------------

    def _header(self, seq: int, header: events.RequestHeaderData) -> None:
        self._headers[seq] = {tool.name: tool for tool in header.tools}
        if (
            self._header_seq is None
            or header.sequence != self._sequence
            or self._redefines_declared(header.tools)
        ):
            self._start_over(seq, header)
        else:
            self._header_started = False
        self._current = header.tools
        self._current_system = header.system
        self._header_seq = seq
        self._cached = None

    def _redefines_declared(self, tools: tuple[events.ToolDefinition, ...]) -> bool:
        for tool in tools:
            known = self._declared.get(tool.name)
            if known is not None and known is not tool and self._declared_canonical(known) != canonical_tool(tool):
                return True
        return False

    def _declared_canonical(self, tool: events.ToolDefinition) -> str:
        """The canonical JSON of a declared tool, made when a header is first compared with it (a
        reducer restored from a checkpoint replays headers of dozens of tools it may never compare)."""
        known = self._declared_json.get(tool.name)
        if known is None:
            known = self._declared_json[tool.name] = canonical_tool(tool)
        return known

    def _start_over(self, seq: int, header: events.RequestHeaderData) -> None:
        self._sequence = header.sequence
        self._initial = header.tools
        self._system = header.system
        self._declared = {tool.name: tool for tool in header.tools}
        self._declared_json = {}  # filled by `_declared_canonical`
        self._updates = []
        self._updates_tuple = ()
        self._declared_tuple = None
        self._start_seq = seq
        self._header_started = True

    def _developer(self, event: events.DeveloperMessage) -> None:
        message = event.data
        if self._header_seq is None or self._header_started:
            # Belongs to a header that started or rebuilt the sequence: already in `initial`.
            return
        if message.source == "instructions":
            update = HistoryUpdate(message_id=message.id, seq=event.seq, text=message.text)
        else:
            additions = []
            for addition in message.additions:
                definition = self._header_tools(addition.header_seq)[addition.name]
                if definition.name not in self._declared:
                    self._declared[definition.name] = definition
                    self._declared_tuple = None
                additions.append(definition)
            update = HistoryUpdate(
                message_id=message.id,
                seq=event.seq,
                additions=tuple(additions),
                removals=message.removals,
            )
        self._updates.append(update)
        self._updates_tuple = (*self._updates_tuple, update)
        self._cached = None

    def _header_tools(self, seq: int) -> dict[str, events.ToolDefinition]:
        tools = self._headers.get(seq)
        if tools is None and self._event_at is not None:
            header = self._event_at(seq)
            if header.type == "request/header":
                tools = self._headers[seq] = {tool.name: tool for tool in header.data.tools}
        if tools is None:
            raise KeyError(seq)
        return tools

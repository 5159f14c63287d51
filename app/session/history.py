"""The tool-history reducer (DESIGN §4): one capability-independent reduction of headers and
developer messages into an immutable snapshot that every route's projection starts from.

Only `request/header` and `developer/message` events carry tool history; every other event just
advances `last_seq`. That is what lets a cold reduction skip parsing most lines of a log.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.session.events import (
    DeveloperMessage,
    Envelope,
    InstructionsUpdate,
    RequestHeader,
    RequestHeaderData,
    ToolDefinition,
)
from app.session.headers import canonical_tool

HISTORY_EVENT_TYPES = frozenset({"request/header", "developer/message"})


@dataclass(frozen=True, slots=True)
class HistoryUpdate:
    """One developer message of the current sequence, resolved to definitions.

    A tool-registry message has `additions`/`removals`; an instructions message has `text`.
    """

    message_id: str
    seq: int
    additions: tuple[ToolDefinition, ...] = ()
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
    `declared` is D of DESIGN §5: `initial`, then each added definition in first-seen order;
    `current`/`current_system` are the header in force.
    """

    sequence: int
    initial: tuple[ToolDefinition, ...]
    system: str
    updates: tuple[HistoryUpdate, ...]
    declared: tuple[ToolDefinition, ...]
    current: tuple[ToolDefinition, ...]
    current_system: str
    header_seq: int | None
    start_seq: int | None
    last_seq: int

    @property
    def current_names(self) -> frozenset[str]:
        return frozenset(tool.name for tool in self.current)

    @property
    def update_ids(self) -> tuple[str, ...]:
        return tuple(update.message_id for update in self.updates)


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


class ToolHistoryReducer:
    """Folds events one at a time; `snapshot()` is cheap and shares unchanged parts."""

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
        "_last_seq",
        "_cached",
    )

    def __init__(self) -> None:
        self._sequence = 0
        self._initial: tuple[ToolDefinition, ...] = ()
        self._system = ""
        self._declared: dict[str, ToolDefinition] = {}
        self._declared_json: dict[str, str] = {}
        self._updates: list[HistoryUpdate] = []
        self._current: tuple[ToolDefinition, ...] = ()
        self._current_system = ""
        self._header_seq: int | None = None
        self._start_seq: int | None = None
        self._header_started = False
        self._headers: dict[int, dict[str, ToolDefinition]] = {}
        self._last_seq = -1
        self._cached: ToolHistory | None = EMPTY_HISTORY

    @property
    def last_seq(self) -> int:
        return self._last_seq

    def apply(self, event: Envelope) -> None:
        if isinstance(event, RequestHeader):
            self._header(event.seq, event.data)
        elif isinstance(event, DeveloperMessage):
            self._developer(event)
        self.advance(event.seq)

    def advance(self, seq: int) -> None:
        """Note that events up to `seq` were seen (the ones carrying no tool history)."""
        if seq > self._last_seq:
            self._last_seq = seq
            self._cached = None

    def snapshot(self) -> ToolHistory:
        if self._cached is None:
            self._cached = ToolHistory(
                sequence=self._sequence,
                initial=self._initial,
                system=self._system,
                updates=tuple(self._updates),
                declared=tuple(self._declared.values()),
                current=self._current,
                current_system=self._current_system,
                header_seq=self._header_seq,
                start_seq=self._start_seq,
                last_seq=self._last_seq,
            )
        return self._cached

    # --- the rules ---------------------------------------------------------------------------------

    def _header(self, seq: int, header: RequestHeaderData) -> None:
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

    def _redefines_declared(self, tools: tuple[ToolDefinition, ...]) -> bool:
        for tool in tools:
            known = self._declared_json.get(tool.name)
            if known is not None and known != canonical_tool(tool):
                return True
        return False

    def _start_over(self, seq: int, header: RequestHeaderData) -> None:
        self._sequence = header.sequence
        self._initial = header.tools
        self._system = header.system
        self._declared = {tool.name: tool for tool in header.tools}
        self._declared_json = {tool.name: canonical_tool(tool) for tool in header.tools}
        self._updates = []
        self._start_seq = seq
        self._header_started = True

    def _developer(self, event: DeveloperMessage) -> None:
        message = event.data
        if self._header_seq is None or self._header_started:
            # Belongs to a header that started or rebuilt the sequence: already in `initial`.
            return
        if isinstance(message, InstructionsUpdate):
            update = HistoryUpdate(message_id=message.id, seq=event.seq, text=message.text)
        else:
            additions = []
            for addition in message.additions:
                definition = self._headers[addition.header_seq][addition.name]
                if definition.name not in self._declared:
                    self._declared[definition.name] = definition
                    self._declared_json[definition.name] = canonical_tool(definition)
                additions.append(definition)
            update = HistoryUpdate(
                message_id=message.id,
                seq=event.seq,
                additions=tuple(additions),
                removals=message.removals,
            )
        self._updates.append(update)
        self._cached = None

"""The trajectory's rows: the kinds a filter shows, and one `Entry` per event the user can see.

An entry holds its event's subject (a turn or step start, or an item of the session view) with
where it sits, so the tree, the flat list, the search and the detail pane all read the same rows
(`TrajectoryModel` makes them from a view, `IndexedTrajectory` from a file's line index).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Union, overload

from app.export.view_json import item_json, step_fields, turn_fields
from app.i18n import N_, _
from app.session.view import ModelRequest, Step, Turn
from app.session.view_items import Item
from app.terminal import json_text

# --- kinds and filters ---------------------------------------------------------------------------

KINDS: dict[str, str] = {
    "turn": N_("Turn starts"),
    "step": N_("Step starts"),
    "user": N_("User messages"),
    "request": N_("Model requests"),
    "reasoning": N_("Reasoning"),
    "context": N_("Context nodes (tool changes)"),
    "tool": N_("Tool calls and results"),
    "error": N_("Errors"),
    "retry": N_("Retries"),
    "compaction": N_("Compactions"),
    "sequence": N_("Sequence boundaries"),
    "header": N_("Request headers"),
    "cache-break": N_("Cache breaks (requests whose route missed its prompt cache)"),
}
"""Every kind a filter can show or hide, with its name in the kinds menu (translated when shown).
Turns and steps always group the tree; their own toggles show or hide their rows in the flat list.
A cache break is a request row too: it is found by a pass of its own (`breaks_matter`)."""

CACHE_BREAK = frozenset({"cache-break"})


def breaks_matter(kinds: frozenset[str]) -> bool:
    """Whether `kinds` show a request for its cache break alone: then every request's diagnostic
    is needed (`app.trajectory.cache_marks.cache_breaks`) before the filter shows them."""
    return "cache-break" in kinds and "request" not in kinds


@dataclass(frozen=True, slots=True)
class Preset:
    name: str  # marked with N_
    kinds: frozenset[str]


PRESETS: tuple[Preset, ...] = (
    Preset(
        N_("default"),
        frozenset(KINDS) - {"step", "header"},
    ),
    Preset(N_("tool changes only"), frozenset({"context", "sequence"})),
    Preset(N_("tools"), frozenset({"tool", "context", "sequence"})),
    Preset(N_("errors and retries"), frozenset({"error", "retry"})),
    Preset(N_("everything"), frozenset(KINDS)),
    Preset(N_("cache breaks"), frozenset({"cache-break"})),
)


def preset_named(kinds: frozenset[str]) -> Preset | None:
    return next((preset for preset in PRESETS if preset.kinds == kinds), None)


# --- entries -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Unreadable:
    """An event line of a large session file that does not parse, met while browsing: shown as a
    row of its own (the validation behind the trajectory names it too), so nothing else is lost."""

    seq: int
    reason: str


Subject = Union[Turn, Step, Item, Unreadable]


@dataclass(frozen=True, slots=True)
class Entry:
    """One row: a turn or step start, or an item, with where it sits (turn, step) and its request."""

    seq: int
    kinds: frozenset[str]
    subject: Subject
    turn: Turn | None
    step: Step | None
    request: ModelRequest | None = None

    def shown(self, kinds: frozenset[str]) -> bool:
        return not self.kinds.isdisjoint(kinds)

    @property
    def is_structure(self) -> bool:
        return isinstance(self.subject, (Turn, Step))


@dataclass(frozen=True, slots=True)
class TurnGroup:
    """A node of the tree of a session with very many turns: turns `first..stop-1` (0-based),
    in groups of `span // 10` when `span` is more than the smallest group."""

    first: int
    stop: int
    span: int


class EntryRows(Sequence[Entry]):
    """The rows a filter shows, in log order, with the row of an event found by its seq."""

    def __init__(self, entries: list[Entry]) -> None:
        self._entries = entries

    def __len__(self) -> int:
        return len(self._entries)

    @overload
    def __getitem__(self, index: int) -> Entry: ...
    @overload
    def __getitem__(self, index: slice) -> list[Entry]: ...
    def __getitem__(self, index: int | slice) -> Entry | list[Entry]:
        return self._entries[index]

    def position(self, seq: int) -> int | None:
        index = bisect_left(self._entries, seq, key=lambda entry: entry.seq)
        return index if index < len(self._entries) and self._entries[index].seq == seq else None

    def extend(self, entries: list[Entry]) -> None:
        self._entries += entries


def sequence_boundary(previous: int | None, sequence: int) -> bool:
    """Whether a request header of projection `sequence` starts a new one (a row of its own)."""
    return previous is not None and previous != sequence


def is_top_level(entry: Entry) -> bool:
    return isinstance(entry.subject, Turn) or (entry.turn is None and not entry.is_structure)


def step_from(
    things: Sequence[Any], seq: int, direction: int, *, wrap: bool, key: Callable[[Any], int] = lambda seq: seq
) -> Any:
    """The first of `things` (in log order) after `seq`, or the last before it going back."""
    if not things:
        return None
    index = bisect_right(things, seq, key=key)
    if direction > 0:
        if index < len(things):
            return things[index]
        return things[0] if wrap else None
    index -= 1 if index and key(things[index - 1]) == seq else 0
    if index > 0:
        return things[index - 1]
    return things[-1] if wrap else None


DETAIL_LIMIT = 100_000
"""Characters of JSON the detail pane highlights; a huge tool result is cut (the export has it)."""


def detail_json(entry: Entry) -> str:
    """The entry as the session view's JSON (the same shape `toolscope export --format json` writes),
    with anything a terminal would act on escaped."""
    subject = entry.subject
    value: dict[str, Any]
    if isinstance(subject, Turn):
        value = {"kind": "turn", **turn_fields(subject)}
    elif isinstance(subject, Step):
        value = {"kind": "step", "turn": subject.turn, **step_fields(subject)}
    elif isinstance(subject, Unreadable):
        value = {"kind": "unreadable", "seq": subject.seq, "reason": subject.reason}
    else:
        value = item_json(subject)
        if entry.request is not None:
            value = {"request": entry.request.index, "header_seq": entry.request.header_seq, **value}
    text = json_text(value, indent=2)
    if len(text) > DETAIL_LIMIT:
        text = text[:DETAIL_LIMIT] + "\n" + _("… cut here: {count} more characters").format(
            count=len(text) - DETAIL_LIMIT
        )
    return text

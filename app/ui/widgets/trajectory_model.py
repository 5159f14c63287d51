"""What the trajectory shows, derived from the session view alone (no Textual here).

`TrajectoryModel.update(view)` turns the view's turns, steps and items into `Entry` rows, one per
event the user can see (a turn or step start, or an item), in log order; it is incremental: only
what the view gained since the last call is added, so a live session costs nothing per event but
its own rows. The tree and the flat list read the same entries; filters are sets of `KINDS`.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Union, overload

from markdown_it import MarkdownIt
from rich.text import Text

from app.agent.notices import instructions_notice, tool_change_notice
from app.export.view_json import item_json, step_fields, turn_fields
from app.i18n import N_, _, ngettext
from app.session.events import ToolRegistryUpdate
from app.session.view import ModelRequest, SessionView, Step, Turn
from app.session.view_items import (
    AssistantItem,
    ContextItem,
    HeaderItem,
    Item,
    RequestErrorItem,
    RetryItem,
    SummaryItem,
    ToolCallItem,
    ToolResultItem,
    UserItem,
)
from app.session.tool_changes import ChangedTool, changed_tools
from app.terminal import first_line, json_text, printable_line

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
}
"""Every kind a filter can show or hide, with its name in the kinds menu (translated when shown).
Turns and steps always group the tree; their own toggles show or hide their rows in the flat list."""


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
        words = query.lower().split()
        if not words:
            return []
        return [
            entry.seq
            for entry in list(self.entries)
            if entry.shown(kinds) and all(word in search_text(entry).lower() for word in words)
        ]

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


def _within(span: Turn | Step, seq: int) -> bool:
    return span.seq < seq and (span.end_seq is None or seq < span.end_seq)


# --- labels, search text, detail -----------------------------------------------------------------

LABEL_LIMIT = 240
"""Characters of untrusted text in a one-line label; the detail pane has the rest."""
PROMPT_CELLS = 50
"""Cells of a turn's row given to the start of its prompt: the row says what the turn was about and
leaves the tree's width to the rows under it (the user message's row has the rest)."""


def _clip(text: str) -> str:
    line = printable_line(text[: LABEL_LIMIT + 1])
    return line if len(line) <= LABEL_LIMIT else line[:LABEL_LIMIT] + "…"


def _styled(prefix: str, style: str, rest: str = "") -> Text:
    """A label: our own words styled, the untrusted part plain (Text never reads markup)."""
    text = Text(prefix, style=style)
    if rest:
        text.append(" ")
        text.append(_clip(rest))
    return text


def entry_label(entry: Entry) -> Text:
    subject = entry.subject
    if isinstance(subject, Turn):
        label = Text(_turn_heading(subject), style="bold")
        prompt = next((item.text for item in subject.items if isinstance(item, UserItem)), "")
        if prompt:
            label.append(" · ")
            label.append(first_line(prompt, PROMPT_CELLS))
        return label
    if isinstance(subject, Step):
        return Text(_("Step {n}").format(n=subject.number), style="dim")
    if isinstance(subject, UserItem):
        return _styled(_("User:"), "bold cyan", subject.text)
    if isinstance(subject, AssistantItem):
        return _request_label(entry, subject)
    if isinstance(subject, RequestErrorItem):
        index = entry.request.index if entry.request is not None else "?"
        failure = subject.failure
        return _styled(
            _("✗ Request {n} failed · {code}:").format(n=index, code=failure.code), "bold red", failure.message
        )
    if isinstance(subject, ContextItem):
        return Text(_clip(_context_summary(subject)), style="magenta")
    if isinstance(subject, ToolCallItem):
        return _styled(_("→ {name}").format(name=_clip(subject.name)), "yellow", subject.arguments)
    if isinstance(subject, ToolResultItem):
        if subject.is_error:
            message = subject.error.message if subject.error is not None else subject.content
            code = subject.error.code if subject.error is not None else ""
            return _styled(_("✗ {name} {code}:").format(name=_clip(subject.name), code=code), "red", message)
        return _styled(_("← {name}:").format(name=_clip(subject.name)), "green", subject.content)
    if isinstance(subject, RetryItem):
        return _styled(
            _("↻ Retry {retry}/{max} after {seconds:.1f} s · {code}").format(
                retry=subject.retry,
                max=subject.max_retries,
                seconds=subject.delay_ms / 1000,
                code=subject.failure.code,
            ),
            "yellow",
        )
    if isinstance(subject, SummaryItem):
        return _styled(_("Compaction (sequence {n}):").format(n=subject.sequence), "bold blue", subject.summary)
    if isinstance(subject, Unreadable):
        return _styled(_("✗ Unreadable line:"), "bold red", subject.reason)
    assert isinstance(subject, HeaderItem)
    header = subject.header
    tools = ngettext("{n} tool", "{n} tools", len(header.tools)).format(n=len(header.tools))
    if "sequence" in entry.kinds:
        return _styled(
            _("═ New projection sequence {n} ·").format(n=header.sequence), "bold blue", f"{header.route} · {tools}"
        )
    return _styled(_("Request header ·"), "dim", f"{header.route} · {header.model} · {tools}")


_INLINE_TEXT = ("text", "code_inline", "html_inline", "image")


def plain_first_line(markdown: str) -> str:
    """The first non-blank line of a model's Markdown answer as the reader sees it: emphasis, code
    marks, heading and list marks and link targets dropped (a line that is no prose, such as a
    fence, stays as it is)."""
    line = next((line for line in markdown.splitlines() if line.strip()), "")
    if _PROSE.fullmatch(line.strip()):
        return line.strip()  # what the parse gives, at a fraction of its cost (a row per answer)
    return parsed_first_line(line)


_PROSE = re.compile(r"[^\W\d_][^\\`*_\[\]<>!&~\x00]*")
"""A line Markdown reads as plain text: it starts with a letter (no block mark: heading, quote,
list, fence, HTML) and holds no character an inline rule acts on."""


def parsed_first_line(line: str) -> str:
    """`line` as Markdown renders it, reduced to its inline text."""
    pieces = [
        child.content
        for token in _markdown().parse(line)
        if token.type == "inline"
        for child in token.children or ()
        if child.type in _INLINE_TEXT
    ]
    return "".join(pieces) or line.strip()


@functools.cache
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark")


def _request_label(entry: Entry, item: AssistantItem) -> Text:
    index = entry.request.index if entry.request is not None else "?"
    label = _styled(_("Request {n}").format(n=index), "bold", "")
    label.append(" · ")
    label.append(_clip(item.route), style="dim")
    calls = item.tool_calls
    if calls:
        label.append(" · ")
        label.append(ngettext("{n} tool call", "{n} tool calls", len(calls)).format(n=len(calls)))
    if item.text:
        label.append(" · ")
        label.append(_clip(plain_first_line(item.text)))
    if item.interrupted:
        label.append(" · " + _("interrupted"), style="yellow")
    return label


MATCH_STYLE = "bold black on yellow"


def highlighted(label: Text, words: tuple[str, ...]) -> Text:
    """`label` with every occurrence of the search's words marked (any case), as a pager marks
    them; the label itself is left as it was."""
    if not words:
        return label
    marked = label.copy()
    marked.highlight_words(words, MATCH_STYLE, case_sensitive=False)
    return marked


def reasoning_label(item: AssistantItem) -> Text:
    return _styled(_("Reasoning:"), "italic dim", item.reasoning)


def answer_label(item: AssistantItem) -> Text:
    return _styled(_("Answer:"), "bold", item.text)


def _turn_heading(turn: Turn) -> str:
    """"Turn 3", and how it ended when that is worth a word."""
    heading = _("Turn {n}").format(n=turn.number)
    if turn.end_reason not in (None, "completed"):
        heading += " · " + _end_reason(turn.end_reason)
    return heading


def _end_reason(reason: str) -> str:
    reasons = {
        "aborted": _("cancelled"),
        "error": _("failed"),
        "max-tokens": _("stopped at the token limit"),
        "interrupted": _("interrupted"),
    }
    return reasons.get(reason, reason)


def _context_summary(item: ContextItem) -> str:
    message = item.message
    if isinstance(message, ToolRegistryUpdate):
        return _("ⓘ {notice}").format(notice=tool_change_notice(message).summary)
    return _("ⓘ {notice}").format(notice=instructions_notice())


def changed_tool_label(tool: ChangedTool) -> Text:
    """One tool of a tool change: `+ name · source · description` (`−` for a removed one), the
    sign in its colour, the name and description as the log has them."""
    from app.tools.sources import tool_source

    sign, style = ("+", "green") if tool.added else ("−", "red")
    label = Text(f"{sign} ", style=style).append(_clip(tool.name))
    label.append(" · " + tool_source(tool.name), style="dim")
    if tool.description:
        label.append(" · ")
        label.append(_clip(tool.description))
    return label


def search_text(entry: Entry) -> str:
    """Everything a search should find in the entry (its whole text, not the clipped label)."""
    subject = entry.subject
    if isinstance(subject, Turn):
        return _turn_heading(subject)  # its prompt is its user message's, found there
    if isinstance(subject, Step):
        return entry_label(entry).plain
    if isinstance(subject, UserItem):
        return subject.text
    if isinstance(subject, AssistantItem):
        calls = " ".join(f"{call.name} {call.arguments}" for call in subject.tool_calls)
        return f"{entry_label(entry).plain} {subject.reasoning} {subject.text} {calls}"
    if isinstance(subject, ToolCallItem):
        return f"{subject.name} {subject.arguments}"
    if isinstance(subject, ToolResultItem):
        return f"{entry_label(entry).plain} {subject.content}"
    if isinstance(subject, ContextItem):
        message = subject.message
        names = (
            " ".join([a.name for a in message.additions] + list(message.removals))
            if isinstance(message, ToolRegistryUpdate)
            else message.text
        )
        return f"{entry_label(entry).plain} {names}"
    if isinstance(subject, SummaryItem):
        return f"{entry_label(entry).plain} {subject.summary}"
    if isinstance(subject, HeaderItem):
        names = " ".join(definition.name for definition in subject.header.tools)
        return f"{entry_label(entry).plain} {names}"
    return entry_label(entry).plain


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

"""The order an export tells a session in: turns, their items, sequence boundaries, and after each
model request's outcome the report of what every route received for it. Markdown and HTML both
walk this, so they tell the same story.

The walk reads the session as it goes (the indexed view's items a run at a time, each request and
its report when its outcome comes), so an export is written as it is made and holds one request's
worth of the session at a time, whatever the length of the session.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Union

from app.report.model import RequestReport
from app.session.indexed_view import IndexedView
from app.session.view_items import AssistantItem, HeaderItem, Item, RequestErrorItem, ToolCallItem


@dataclass(frozen=True, slots=True)
class TurnStart:
    number: int


@dataclass(frozen=True, slots=True)
class SequenceStart:
    """The projection sequence changed (a new sequence or a compaction): prefixes start over."""

    number: int


Entry = Union[TurnStart, SequenceStart, Item, RequestReport]


def walk(view: IndexedView, reports: Iterator[RequestReport]) -> Iterator[Entry]:
    """`reports` gives each request's report in order (`iter_reports`). Headers become sequence
    boundaries when their sequence changes; `tool/call` events are left out (each call is shown
    with the assistant message that made it, its result after)."""
    turn = 0
    sequence: int | None = None
    for item in view.items:
        started, _step, _requests = view.position(item.seq)  # turns started up to the item
        while turn < started:
            turn += 1
            yield TurnStart(turn)
        if isinstance(item, HeaderItem):
            if sequence is not None and item.header.sequence != sequence:
                yield SequenceStart(item.header.sequence)
            sequence = item.header.sequence
            continue
        if isinstance(item, ToolCallItem):
            continue
        yield item
        if isinstance(item, (AssistantItem, RequestErrorItem)):  # a request's outcome
            yield next(reports)
    for number in range(turn + 1, len(view.turns) + 1):  # turns with no item left
        yield TurnStart(number)

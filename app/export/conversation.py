"""The order an export tells a session in: turns, their items, sequence boundaries, and after each
model request's outcome the report of what every route received for it. Markdown and HTML both
walk this, so they tell the same story."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Union

from app.report.model import RequestReport
from app.session.view import HeaderItem, Item, SessionView, ToolCallItem, Turn


@dataclass(frozen=True, slots=True)
class SequenceStart:
    """The projection sequence changed (a new sequence or a compaction): prefixes start over."""

    number: int


Entry = Union[Turn, SequenceStart, Item, RequestReport]


def walk(view: SessionView, reports: Sequence[RequestReport]) -> Iterator[Entry]:
    """Headers become sequence boundaries when their sequence changes; `tool/call` events are left
    out (each call is shown with the assistant message that made it, its result after)."""
    by_outcome = {report.request.seq: report for report in reports}
    turns = iter(view.turns)
    next_turn = next(turns, None)
    sequence: int | None = None
    for item in view.items:
        while next_turn is not None and next_turn.seq < item.seq:
            yield next_turn
            next_turn = next(turns, None)
        if isinstance(item, HeaderItem):
            if sequence is not None and item.header.sequence != sequence:
                yield SequenceStart(item.header.sequence)
            sequence = item.header.sequence
            continue
        if isinstance(item, ToolCallItem):
            continue
        yield item
        report = by_outcome.get(item.seq)
        if report is not None:
            yield report
    if next_turn is not None:
        yield next_turn
        yield from turns

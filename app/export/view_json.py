"""The session view as JSON: the stable shape `toolscope export --format json` writes.

Every item of `SessionView.items` in log order (each with its `kind`), the turns and steps that
group them (by `seq`), and every model request with the seqs of the messages it was sent with and
the tool-history snapshot in force. `docs/export.md` documents each field; `FORMAT_VERSION`
changes when a field's meaning does. `write_view_json` writes the document an element at a time,
the same text as the whole document at once.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

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

if TYPE_CHECKING:  # the trajectory imports this module for its item fields, not to export
    from app.export.scrub import Scrubber
    from app.export.target import Lines
    from app.report.cost import CostTally
    from app.report.model import RequestReport
    from app.session.indexed_view import IndexedView

FORMAT = "toolscope-session-view"
FORMAT_VERSION = 1

ITEM_KINDS: dict[type, str] = {
    UserItem: "user",
    AssistantItem: "assistant",
    ToolCallItem: "tool-call",
    ToolResultItem: "tool-result",
    ContextItem: "context",
    HeaderItem: "header",
    RequestErrorItem: "request-error",
    RetryItem: "retry",
    SummaryItem: "compaction",
}


def view_json(view: SessionView | IndexedView) -> dict[str, Any]:
    return {key: list(value) if isinstance(value, Iterator) else value for key, value in _sections(view).items()}


def write_view_json(
    view: SessionView | IndexedView,
    scrub: Scrubber,
    out: Lines,
    reports: Iterator[RequestReport],
    tally: CostTally,
) -> None:
    """`scrub.json(view_json(view))`, written as each item, turn and request is read, with each
    request's cache diagnostic per route (`reports`, one per request in order, passing through
    `tally`) and, last, the session's cost per route."""
    from app.report.cost_json import cost_json
    from app.report.json import cache_json

    def costed(request: ModelRequest, report: RequestReport) -> dict[str, Any]:
        return {**_request_json(request), "cache": {item.route.id: cache_json(item.cache) for item in report.routes}}

    sections = _sections(view) | {"requests": map(costed, view.requests, reports), "cost": lambda: cost_json(tally.session_cost())}
    out.write("{")
    for number, (key, value) in enumerate(sections.items()):
        out.write(("," if number else "") + f"\n  {json.dumps(key)}: ")
        if callable(value):
            value = value()
        if not isinstance(value, Iterator):
            out.write(_indented(scrub.json(value), "  "))
            continue
        empty = True
        for element in value:
            out.write(("[" if empty else ",") + "\n    " + _indented(scrub.json(element), "    "))
            empty = False
        out.write("[]" if empty else "\n  ]")
    out.write("\n}\n")
    out.flush()


def _indented(text: str, indent: str) -> str:
    """JSON text (`json.dumps(indent=2)`, its newline at the end dropped) as a value nested under
    `indent`: a string never holds a raw line break, so each one starts a line of the value."""
    return text.rstrip("\n").replace("\n", "\n" + indent)


def _sections(view: SessionView | IndexedView) -> dict[str, Any]:
    """The document's keys in order; the lists as iterators that read the view as they go."""
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "session": view.header.model_dump(mode="json"),
        "items": map(item_json, view.items),
        "turns": map(_turn_json, view.turns),
        "requests": map(_request_json, view.requests),
    }


def item_json(item: Item) -> dict[str, Any]:
    return {"kind": ITEM_KINDS[type(item)], **_fields(item)}


def turn_fields(turn: Turn) -> dict[str, Any]:
    """A turn's own fields, without its children (the trajectory's detail pane shows these too)."""
    return {"number": turn.number, "seq": turn.seq, "end_seq": turn.end_seq, "end_reason": turn.end_reason}


def step_fields(step: Step) -> dict[str, Any]:
    return {"number": step.number, "seq": step.seq, "end_seq": step.end_seq}


def _turn_json(turn: Turn) -> dict[str, Any]:
    return {
        **turn_fields(turn),
        "items": [item.seq for item in turn.items],
        "steps": [
            {
                **step_fields(step),
                "items": [item.seq for item in step.items],
                "requests": [request.index for request in step.requests],
            }
            for step in turn.steps
        ],
    }


def _request_json(request: ModelRequest) -> dict[str, Any]:
    return {
        "index": request.index,
        "seq": request.seq,
        "turn": request.turn,
        "step": request.step,
        "route": request.route,
        "failed": request.failed,
        "header_seq": request.header_seq,
        "messages": [message.seq for message in request.messages],
        "history": _plain(request.history),
    }


def _fields(value: Any) -> dict[str, Any]:
    return {field.name: _plain(getattr(value, field.name)) for field in dataclasses.fields(value)}


def _plain(value: Any) -> Any:
    """Dataclasses and pydantic models as objects, tuples as arrays, the rest as it is."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _fields(value)
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value

"""Request-header rules (docs/architecture.md §7): canonical form, equality, and the developer messages a change yields.

These are plain functions: the agent loop calls them before each model request; the reducer relies
on the same canonical form to tell a changed definition from an unchanged one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from app.session.lazy_events import events  # imported by the loop's calls below, not by a log's readers

_CANONICAL_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    """Key-sorted, compact, non-ASCII kept: two equal values always give the same text."""
    return _CANONICAL_ENCODER.encode(value)


def canonical_tool(tool: events.ToolDefinition) -> str:
    return canonical_json(tool.to_json())


def canonical_header(header: events.RequestHeaderData) -> str:
    """The parts that decide header equality: route, model, config, system text, tools in order.

    `reason` and `sequence` are bookkeeping, not content; a new sequence is forced separately.
    """
    return canonical_json(
        {
            "route": header.route,
            "model": header.model,
            "config": header.config,
            "system": header.system,
            "tools": [tool.to_json() for tool in header.tools],
        }
    )


def headers_equal(a: events.RequestHeaderData, b: events.RequestHeaderData) -> bool:
    return canonical_header(a) == canonical_header(b)


def needs_new_header(previous: events.RequestHeaderData | None, candidate: events.RequestHeaderData) -> bool:
    """Append `candidate` only if there is no header yet, the sequence moved, or the content changed."""
    if previous is None:
        return True
    return previous.sequence != candidate.sequence or not headers_equal(previous, candidate)


def name_diff(
    previous: Iterable[events.ToolDefinition], current: Iterable[events.ToolDefinition]
) -> tuple[list[str], list[str]]:
    """(added names in `current` order, removed names in `previous` order)."""
    before = [tool.name for tool in previous]
    after = [tool.name for tool in current]
    before_set, after_set = set(before), set(after)
    return [n for n in after if n not in before_set], [n for n in before if n not in after_set]


def tool_registry_message(
    previous: events.RequestHeaderData | None,
    current: events.RequestHeaderData,
    current_seq: int,
    message_id: str,
) -> events.ToolRegistryUpdate | None:
    """The one `developer/message` for a change of tool names, or None (first header, or same names).

    Same names with changed definitions give no message: the header alone records that.
    """
    if previous is None:
        return None
    added, removed = name_diff(previous.tools, current.tools)
    if not added and not removed:
        return None
    return events.ToolRegistryUpdate(
        id=message_id,
        additions=tuple(events.ToolAddition(name=name, header_seq=current_seq) for name in added),
        removals=tuple(removed),
    )


def instructions_message(
    previous: events.RequestHeaderData | None,
    current: events.RequestHeaderData,
    current_seq: int,
    message_id: str,
) -> events.InstructionsUpdate | None:
    """The `developer/message` for a changed system text after the first request, or None."""
    if previous is None or previous.system == current.system:
        return None
    return events.InstructionsUpdate(id=message_id, text=current.system, header_seq=current_seq)

"""Each tool a tool-registry change names, with its description as the request headers give it.

The developer message names the tools only (`docs/session-format.md`). An added tool's
description is in the header its addition points at (`headerSeq`); a removed tool's in the header
before the change's, the last one that still listed it. Two header lines are read, when a change
is first expanded, not when it is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.session.errors import SessionError
from app.session.type_codes import TYPE_CODES
from app.session.view_items import ContextItem, stored_part

if TYPE_CHECKING:
    from app.session.chain import Chain

HEADER = TYPE_CODES["request/header"]


@dataclass(frozen=True, slots=True)
class ChangedTool:
    name: str
    added: bool
    description: str
    """As the header gave it; empty when the header cannot be read (a corrupt line: the
    validation names it)."""


def changed_tools(chain: Chain, item: ContextItem) -> tuple[ChangedTool, ...]:
    """The tools `item` (a tool-registry change) added, then those it removed."""
    message = stored_part(item, "message")
    additions, removals = message.additions, message.removals
    change_header = additions[0].header_seq if additions else chain.types.rfind(HEADER, 0, item.seq)
    before = chain.types.rfind(HEADER, 0, change_header) if change_header > 0 else -1
    added = [ChangedTool(a.name, True, _descriptions(chain, a.header_seq).get(a.name, "")) for a in additions]
    old = _descriptions(chain, before) if removals else {}
    return (*added, *(ChangedTool(name, False, old.get(name, "")) for name in removals))


def _descriptions(chain: Chain, seq: int) -> dict[str, str]:
    if seq < 0:
        return {}
    try:
        event = chain.event(seq)
    except (SessionError, OSError):
        return {}
    if event.type != "request/header":
        return {}
    return {tool.name: tool.description for tool in event.data.tools}

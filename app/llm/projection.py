"""Per-route projection of one capability-independent tool history (DESIGN §5).

`project_tool_updates(request, history, route)` decides what one route receives for one request:
the declarations (with `defer_loading`), the update blocks at their message positions, the beta
header and, when it had to fall back, why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.session.events import ToolDefinition
from app.session.view import Message

DeclarationState = Literal["initial", "added", "retained-removed", "explicit-deferred"]
BlockKind = Literal["tool_addition", "tool_removal", "text"]


@dataclass(frozen=True, slots=True)
class Declaration:
    tool: ToolDefinition
    state: DeclarationState
    defer_loading: bool


@dataclass(frozen=True, slots=True)
class UpdateBlock:
    """One system-role block; `seq` is the developer message that produced it."""

    kind: BlockKind
    seq: int
    name: str | None = None
    text: str | None = None


@dataclass(frozen=True, slots=True)
class BlockGroup:
    """Blocks sent as one system message, inserted before conversation message `position`.

    Positions count conversation messages only (developer messages are not conversation
    messages: they become blocks or vanish), so updates recorded together share one message;
    `position == len(conversation)` means after the last message.
    """

    position: int
    blocks: tuple[UpdateBlock, ...]


@dataclass(frozen=True, slots=True)
class ProjectedRequest:
    route_id: str
    system: str
    """The top system text."""
    declarations: tuple[Declaration, ...]
    conversation: tuple[Message, ...]
    """The request's messages without developer messages, in order."""
    groups: tuple[BlockGroup, ...]
    beta: tuple[str, str] | None
    """(header name, value), only when `groups` is not empty and the route names a beta."""
    fallback: str | None
    """Why the projection fell back to the current effective tools, or None."""

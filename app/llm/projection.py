"""Per-route projection of one capability-independent tool history (docs/architecture.md §8).

`project_tool_updates(messages, history, route)` decides what one route receives for one request:
the declarations (with `defer_loading`), the update blocks at their message positions, the beta
header and, when it had to fall back, why. It is a pure function of the snapshot in force for the
request, the request's messages and the route, so the loop, the inspector and the tests all get the
same answer for the same request, whenever they ask.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from app.i18n import _
from app.llm.routes import Route
from app.session.events import RequestHeaderData, ToolDefinition
from app.session.tool_history import HistoryUpdate, ToolHistory
from app.session.view import ModelRequest
from app.session.view_items import ContextItem, Message

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


FallbackReason = Literal["no-history", "missing-update"]
NO_HISTORY: FallbackReason = "no-history"
MISSING_UPDATE: FallbackReason = "missing-update"


def describe_fallback(reason: str) -> str:
    """The localized explanation of a fallback reason id (an unknown id is shown as it is)."""
    if reason == NO_HISTORY:
        return _(
            "No tool history came with this request: the current tools are declared and no "
            "tool updates are sent."
        )
    if reason == MISSING_UPDATE:
        return _(
            "This request's messages lack an update of the current sequence (an auxiliary "
            "request with a cut history): the current tools are declared and no tool updates "
            "are sent."
        )
    return reason


def project_request(request: ModelRequest, route: Route) -> ProjectedRequest:
    """Project a logged request: its messages with the snapshot that was in force for it."""
    return project_tool_updates(request.messages, request.history, route, header=request.header)


def project_tool_updates(
    messages: Sequence[Message],
    history: ToolHistory | None,
    route: Route,
    *,
    header: RequestHeaderData | None = None,
) -> ProjectedRequest:
    """What `route` receives for a request sent with `messages` under `history`.

    `header` (the request's header) only supplies the current tools and system text when there is
    no snapshot; with a snapshot, everything comes from it.
    """
    return project_split(split_messages(messages), history, route, header=header)


def project_split(
    split: tuple[tuple[Message, ...], dict[str, int]],
    history: ToolHistory | None,
    route: Route,
    *,
    header: RequestHeaderData | None = None,
) -> ProjectedRequest:
    """`project_tool_updates` of messages already split (`split_messages`): a request projected on
    many routes splits its messages once."""
    conversation, positions = split
    snapshot = history if history is not None and history.header_seq is not None else None
    if not route.sends_tool_updates:
        # Nothing to fall back from: such a route always gets the current tools and text.
        return _current_projection(route, conversation, snapshot, header, fallback=None)
    if snapshot is None:
        return _current_projection(route, conversation, None, header, fallback=NO_HISTORY)
    if any(update.message_id not in positions for update in snapshot.updates):
        return _current_projection(route, conversation, snapshot, header, fallback=MISSING_UPDATE)
    return _update_projection(route, conversation, positions, snapshot)


def split_messages(messages: Sequence[Message]) -> tuple[tuple[Message, ...], dict[str, int]]:
    """The conversation messages, and each developer message's position among them."""
    conversation: list[Message] = []
    positions: dict[str, int] = {}
    for message in messages:
        if isinstance(message, ContextItem):
            positions[message.message.id] = len(conversation)
        else:
            conversation.append(message)
    return tuple(conversation), positions


def _current_projection(
    route: Route,
    conversation: tuple[Message, ...],
    snapshot: ToolHistory | None,
    header: RequestHeaderData | None,
    *,
    fallback: FallbackReason | None,
) -> ProjectedRequest:
    """The current effective tools and text, no blocks: `none` routes, and every fallback."""
    if snapshot is not None:
        tools, system = snapshot.current, snapshot.current_system
        added = _added_names(snapshot)
    elif header is not None:
        tools, system, added = header.tools, header.system, frozenset()
    else:
        tools, system, added = (), "", frozenset()
    declarations = []
    for tool in tools:
        # A tool that asks to be deferred stays deferred wherever deferral exists.
        explicit = route.sends_tool_updates and bool(tool.defer_loading)
        if explicit:
            state: DeclarationState = "explicit-deferred"
        else:
            state = "added" if tool.name in added else "initial"
        declarations.append(Declaration(tool=tool, state=state, defer_loading=explicit))
    return ProjectedRequest(
        route_id=route.id,
        system=system,
        declarations=tuple(declarations),
        conversation=conversation,
        groups=(),
        beta=None,
        fallback=fallback,
    )


def _update_projection(
    route: Route,
    conversation: tuple[Message, ...],
    positions: dict[str, int],
    snapshot: ToolHistory,
) -> ProjectedRequest:
    """D (restricted to current names on `addition-only`) plus the sequence's updates as blocks."""
    in_history = route.tool_update == "in-history"
    added = _added_names(snapshot)
    current = snapshot.current_names
    declarations: dict[str, Declaration] = {}
    for tool in snapshot.declared:
        removed = tool.name not in current
        if removed and not in_history:
            continue
        deferred = tool.name in added or bool(tool.defer_loading)
        if removed:
            state: DeclarationState = "retained-removed"
        elif tool.name in added:
            state = "added"
        elif deferred:
            state = "explicit-deferred"
        else:
            state = "initial"
        declarations[tool.name] = Declaration(tool=tool, state=state, defer_loading=deferred)

    blocks_at: dict[int, list[UpdateBlock]] = {}
    for update in snapshot.updates:
        blocks = _blocks(update, declarations, in_history, route.system_in_history)
        if blocks:
            blocks_at.setdefault(positions[update.message_id], []).extend(blocks)
    groups = tuple(
        BlockGroup(position=position, blocks=tuple(blocks))
        for position, blocks in sorted(blocks_at.items())
    )
    beta = None
    if groups and route.beta_header and route.tool_update_beta:
        beta = (route.beta_header, route.tool_update_beta)
    return ProjectedRequest(
        route_id=route.id,
        system=snapshot.system if route.system_in_history else snapshot.current_system,
        declarations=tuple(declarations.values()),
        conversation=conversation,
        groups=groups,
        beta=beta,
        fallback=None,
    )


def _blocks(
    update: HistoryUpdate,
    declarations: dict[str, Declaration],
    in_history: bool,
    system_in_history: bool,
) -> list[UpdateBlock]:
    """One update's blocks: its additions, then its removals, each in the message's order.

    A block only ever names a declared tool. `addition-only` routes add only deferred tools (a
    non-deferred one is loaded already) and never remove.
    """
    if update.is_instructions:
        if not system_in_history:
            return []
        return [UpdateBlock(kind="text", seq=update.seq, text=update.text)]
    blocks = [
        UpdateBlock(kind="tool_addition", seq=update.seq, name=tool.name)
        for tool in update.additions
        if tool.name in declarations and (in_history or declarations[tool.name].defer_loading)
    ]
    if in_history:
        blocks += [
            UpdateBlock(kind="tool_removal", seq=update.seq, name=name)
            for name in update.removals
            if name in declarations
        ]
    return blocks


def _added_names(snapshot: ToolHistory) -> frozenset[str]:
    """Names declared through an update of this sequence rather than at its start."""
    initial = {tool.name for tool in snapshot.initial}
    return frozenset(tool.name for tool in snapshot.declared if tool.name not in initial)

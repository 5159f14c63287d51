"""A developer message: the tool change or instructions update the model was told about.

One change names the tool; several give the counts, with the names (added and removed apart) in a
list that Enter or a click expands. Worded by `tool_change_notice`, exactly as `toolscope run`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from app.agent.notices import instructions_notice, tool_change_notice
from app.i18n import N_, _
from app.session.view import ContextItem, stored_part
from app.ui.text import literal
from app.ui.widgets.block import Block, ExpandsOnClick

if TYPE_CHECKING:
    from app.session import structs
    from app.session.events import InstructionsUpdate, ToolRegistryUpdate


class ContextNode(ExpandsOnClick, Vertical, can_focus=True):
    DEFAULT_CSS = """
    ContextNode {
        height: auto;
        margin: 1 0 0 0;
        padding: 0 1;
        color: $accent;
        border-left: outer $accent;
        &:focus { background: $boost; }
        & > .names { display: none; padding-left: 2; }
        &.-expanded > .names { display: block; }
        & > .added { color: $success; }
        & > .removed { color: $error; }
    }
    """
    BINDINGS = [("enter", "toggle", N_("Expand"))]

    def __init__(self, block: ContextBlock) -> None:
        super().__init__(classes="-expanded" if block.expanded else "")
        self.block = block

    def compose(self) -> ComposeResult:
        message = self.block.message
        if not self.block.item.is_tool_change:
            yield Static(literal(_("ⓘ {notice}").format(notice=instructions_notice())), classes="summary")
            yield Static(literal(message.text), classes="names")
            return
        notice = tool_change_notice(message)
        yield Static(self._summary(notice.summary), classes="summary")
        for name in notice.added if notice.names else ():
            yield Static(literal(f"+ {name}"), classes="names added")
        for name in notice.removed if notice.names else ():
            yield Static(literal(f"− {name}"), classes="names removed")

    def _summary(self, summary: str) -> Content:
        if not self.block.expandable:
            return literal(_("ⓘ {notice}").format(notice=summary))
        marker = "▼" if self.has_class("-expanded") else "▶"
        return literal(_("{marker} {notice}").format(marker=marker, notice=summary))

    def refresh_from_block(self) -> None:
        self.set_class(self.block.expanded, "-expanded")
        item = self.block.item
        summary = tool_change_notice(self.block.message).summary if item.is_tool_change else instructions_notice()
        self.query_one(".summary", Static).update(self._summary(summary))


class ContextBlock(Block):
    def __init__(self, item: ContextItem) -> None:
        self.item = item
        self.expanded = False

    @property
    def message(self) -> ToolRegistryUpdate | InstructionsUpdate | structs.ToolRegistryUpdate | structs.InstructionsUpdate:
        """The item's message as stored (`stored_part`): its fields are read, no model is needed."""
        return stored_part(self.item, "message")  # type: ignore[no-any-return]

    @property
    def expandable(self) -> bool:
        message = self.message
        if self.item.is_tool_change:
            return bool(tool_change_notice(message).names)
        return bool(message.text)

    def build(self) -> ContextNode:
        return ContextNode(self)

"""A developer message: the tool change or instructions update the model was told about.

One change names the tool; several give the counts. Enter or a click expands either to each tool
(added, then removed) with its source and its description, read from the session's headers when
first expanded. Worded by `tool_change_notice`, exactly as `toolscope run`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from app.agent.notices import instructions_notice, tool_change_notice
from app.i18n import N_, _
from app.session.view_items import ContextItem, stored_part
from app.ui.text import literal
from app.ui.widgets.conversation.block import Block, ExpandsOnClick

if TYPE_CHECKING:
    from app.session import structs
    from app.session.events import InstructionsUpdate, ToolRegistryUpdate
    from app.session.tool_changes import ChangedTool


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
        & > .description { color: $text-muted; padding-left: 4; }
    }
    """
    BINDINGS = [("enter", "toggle", N_("Expand"))]

    def __init__(self, block: ContextBlock) -> None:
        super().__init__(classes="-expanded" if block.expanded else "")
        self.block = block
        self._shown_tools = False

    def compose(self) -> ComposeResult:
        message = self.block.message
        if not self.block.item.is_tool_change:
            yield Static(literal(_("ⓘ {notice}").format(notice=instructions_notice())), classes="summary")
            yield Static(literal(message.text), classes="names")
            return
        yield Static(self._summary(tool_change_notice(message).summary), classes="summary")
        if self.block.expanded:
            yield from self._tool_widgets()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool:
        """Expand is offered only where there is something to show."""
        return self.block.expandable if action == "toggle" else True

    def _tool_widgets(self) -> list[Static]:
        """A line per changed tool, its source beside it, its description under it."""
        from app.tools.sources import tool_source

        self._shown_tools = True
        lines = []
        for tool in self.block.tools:
            sign, kind = ("+", "added") if tool.added else ("−", "removed")
            lines.append(
                Static(
                    literal(_("{sign} {name} · {source}").format(sign=sign, name=tool.name, source=tool_source(tool.name))),
                    classes=f"names {kind}",
                )
            )
            if tool.description:
                lines.append(Static(literal(tool.description), classes="names description"))
        return lines

    def _summary(self, summary: str) -> Content:
        if not self.block.expandable:
            return literal(_("ⓘ {notice}").format(notice=summary))
        marker = "▼" if self.block.expanded else "▶"
        return literal(_("{marker} {notice}").format(marker=marker, notice=summary))

    def refresh_from_block(self) -> None:
        self.set_class(self.block.expanded, "-expanded")
        item = self.block.item
        if item.is_tool_change:
            summary = tool_change_notice(self.block.message).summary
            if self.block.expanded and not self._shown_tools:
                self.mount_all(self._tool_widgets())
        else:
            summary = instructions_notice()
        self.query_one(".summary", Static).update(self._summary(summary))


class ContextBlock(Block):
    def __init__(self, item: ContextItem, tools: Callable[[ContextItem], tuple[ChangedTool, ...]]) -> None:
        """`tools` reads what a tool change changed (`changed_tools` over the session's chain)."""
        self.item = item
        self.expanded = False
        self._read_tools = tools
        self._tools: tuple[ChangedTool, ...] | None = None

    @property
    def message(self) -> ToolRegistryUpdate | InstructionsUpdate | structs.ToolRegistryUpdate | structs.InstructionsUpdate:
        """The item's message as stored (`stored_part`): its fields are read, no model is needed."""
        return stored_part(self.item, "message")  # type: ignore[no-any-return]

    @property
    def tools(self) -> tuple[ChangedTool, ...]:
        """Each tool the change added or removed, with its description: read once, when first shown."""
        if self._tools is None:
            self._tools = self._read_tools(self.item)
        return self._tools

    @property
    def expandable(self) -> bool:
        return self.item.is_tool_change or bool(self.message.text)

    def build(self) -> ContextNode:
        return ContextNode(self)

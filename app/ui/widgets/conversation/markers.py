"""Quiet one-line nodes: a compaction and how a turn ended when it did not simply complete."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Static

from app.i18n import N_, _
from app.ui.text import literal
from app.ui.widgets.conversation.block import Block, ExpandsOnClick

if TYPE_CHECKING:
    from app.session.view_items import SummaryItem


class CompactionNode(ExpandsOnClick, Static, can_focus=True):
    DEFAULT_CSS = """
    CompactionNode {
        margin: 1 0 0 0;
        padding: 0 1;
        color: $text-muted;
        border-top: dashed $primary-muted;
        &:focus { background: $boost; }
    }
    """
    BINDINGS = [("enter", "toggle", N_("Expand"))]

    def __init__(self, block: CompactionBlock) -> None:
        super().__init__()
        self.block = block

    def on_mount(self) -> None:
        self.refresh_from_block()

    def refresh_from_block(self) -> None:
        title = _("⇣ Conversation compacted (sequence {sequence})").format(sequence=self.block.item.sequence)
        if self.block.expanded:
            self.update(literal(title + "\n" + self.block.item.summary))
        else:
            self.update(literal(title))


class CompactionBlock(Block):
    def __init__(self, item: SummaryItem) -> None:
        self.item = item
        self.expanded = False

    def build(self) -> CompactionNode:
        return CompactionNode(self)


def turn_end_text(reason: str) -> str:
    return {
        "aborted": _("⏹ Turn cancelled"),
        "interrupted": _("⏹ Turn interrupted (the previous run stopped)"),
        "max-tokens": _("⚠ The answer reached the token limit"),
        "error": _("✗ The turn failed"),
    }.get(reason, reason)


class TurnEndNode(Static):
    DEFAULT_CSS = """
    TurnEndNode {
        margin: 1 0 0 0;
        padding: 0 1;
        color: $warning;
        text-style: italic;
    }
    """

    def __init__(self, block: TurnEndBlock) -> None:
        super().__init__(literal(turn_end_text(block.reason)))
        self.block = block


class TurnEndBlock(Block):
    """Shown only for endings a user must notice; a completed turn needs no marker."""

    SHOWN = ("aborted", "interrupted", "max-tokens", "error")

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def build(self) -> TurnEndNode:
        return TurnEndNode(self)

"""The user's prompt, as typed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Static

from app.ui.text import literal
from app.ui.widgets.block import Block

if TYPE_CHECKING:
    from app.session.view import UserItem


class UserMessage(Static):
    DEFAULT_CSS = """
    UserMessage {
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: thick $primary;
        background: $boost;
    }
    """

    def __init__(self, block: UserBlock) -> None:
        super().__init__(literal(block.item.text))
        self.block = block


class UserBlock(Block):
    def __init__(self, item: UserItem) -> None:
        self.item = item

    def build(self) -> UserMessage:
        return UserMessage(self)

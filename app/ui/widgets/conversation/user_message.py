"""The user's prompt, as typed.

A long one (a large paste, sent whole) shows its first lines until Enter or a click expands it, and
even then at most `SHOWN_LINES`: laying out every line of a 50,000-line paste froze the chat for
seconds. The session keeps the whole text (`toolscope view` shows it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from app.i18n import N_, ngettext
from app.ui.text import clip_lines, line_count, literal
from app.ui.widgets.conversation.block import Block, ExpandsOnClick, expand_hint

if TYPE_CHECKING:
    from app.session.view_items import UserItem

COLLAPSED_LINES = 12
SHOWN_LINES = 1_000


class UserMessage(ExpandsOnClick, Vertical):
    DEFAULT_CSS = """
    UserMessage {
        height: auto;
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: thick $primary;
        background: $boost;
        &:focus { border-left: thick $accent; }
        & .more { color: $text-muted; text-style: italic; }
    }
    """
    BINDINGS = [("enter", "toggle", N_("Expand"))]

    def __init__(self, block: UserBlock) -> None:
        super().__init__()
        self.block = block
        self.can_focus = block.expandable  # only a long message has anything to expand

    def compose(self) -> ComposeResult:
        yield Static(classes="text")
        yield Static(classes="more")

    def on_mount(self) -> None:
        self.refresh_from_block()

    def refresh_from_block(self) -> None:
        shown, hidden = self.block.shown()
        self.query_one(".text", Static).update(literal(shown))
        more = self.query_one(".more", Static)
        more.display = bool(hidden)
        if not hidden:
            return
        if self.block.expanded:
            more.update(
                literal(
                    ngettext(
                        "… {n} more line not shown here (the session has the whole message)",
                        "… {n} more lines not shown here (the session has the whole message)",
                        hidden,
                    ).format(n=hidden)
                )
            )
        else:
            more.update(expand_hint(hidden))


class UserBlock(Block):
    def __init__(self, item: UserItem) -> None:
        self.item = item

    @property
    def expandable(self) -> bool:
        return line_count(self.item.text) > COLLAPSED_LINES

    def shown(self) -> tuple[str, int]:
        """The text shown (collapsed or expanded) and how many lines of the message it leaves out."""
        text = self.item.text
        shown, cut = clip_lines(text, SHOWN_LINES if self.expanded else COLLAPSED_LINES)
        return shown, (line_count(text) - line_count(shown)) if cut else 0

    def build(self) -> UserMessage:
        return UserMessage(self)

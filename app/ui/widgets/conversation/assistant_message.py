"""An assistant reply: collapsible reasoning, then the Markdown answer, streamed as it arrives."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from app.i18n import _
from app.terminal import PrintableStream, printable
from app.ui.text import literal
from app.ui.widgets.conversation.block import Block, PlainBackground
from app.ui.widgets.conversation.reasoning import Reasoning

if TYPE_CHECKING:
    from app.session.view_items import AssistantItem
    from app.ui.widgets.conversation.reply_text import ReplyText


class AssistantMessage(PlainBackground, Vertical):
    DEFAULT_CSS = """
    AssistantMessage {
        height: auto;
        margin: 1 0 0 0;
        & > .interrupted { color: $warning; padding: 0 1; }
    }
    """

    def __init__(self, block: AssistantBlock) -> None:
        super().__init__()
        self.block = block
        # Imported with the first reply: markdown-it is a good part of the chat's start-up
        # otherwise, and an empty chat shows no Markdown.
        from app.ui.widgets.conversation.reply_text import ReplyText

        self.reply_text: ReplyText = ReplyText(block.text)

    def compose(self) -> ComposeResult:
        block = self.block
        if block.reasoning:
            yield Reasoning(block.reasoning, expanded=block.reasoning_expanded, on_toggle=block.set_expanded)
        yield self.reply_text
        if block.interrupted:
            yield Static(literal(_("⏸ Interrupted: the answer stops here.")), classes="interrupted")

    async def write(self, fragment: str) -> None:
        await self.reply_text.write(fragment)

    async def stop_stream(self) -> None:
        await self.reply_text.stop()

    def refresh_from_block(self) -> None:
        block = self.block
        reasoning = self.query(Reasoning)
        if block.reasoning and reasoning:
            reasoning.first().set_text(block.reasoning)
        elif block.reasoning:
            self.mount(
                Reasoning(block.reasoning, expanded=block.reasoning_expanded, on_toggle=block.set_expanded),
                before=0,
            )
        if block.interrupted and not self.query(".interrupted"):
            self.mount(Static(literal(_("⏸ Interrupted: the answer stops here.")), classes="interrupted"))


class AssistantBlock(Block):
    """The reply of one model request: from its `AssistantItem`, or live from the stream."""

    def __init__(self, item: AssistantItem | None = None) -> None:
        self.item = item
        self.text = printable(item.text) if item else ""
        self.reasoning = printable(item.reasoning) if item else ""
        self.interrupted = bool(item and item.interrupted)
        self.reasoning_expanded = False
        self._text_filter = PrintableStream()
        self._reasoning_filter = PrintableStream()

    @property
    def empty(self) -> bool:
        return not (self.text.strip() or self.reasoning.strip() or self.interrupted)

    def set_expanded(self, expanded: bool) -> None:
        self.reasoning_expanded = expanded

    def build(self) -> AssistantMessage:
        return AssistantMessage(self)

    async def add_text(self, fragment: str) -> None:
        shown = self._text_filter.feed(fragment)
        if not shown:
            return
        self.text += shown
        widget = self.widget
        if isinstance(widget, AssistantMessage) and widget.is_mounted:
            await widget.write(shown)

    def add_reasoning(self, fragment: str) -> None:
        self.reasoning += self._reasoning_filter.feed(fragment)
        self.refresh_widget()

    async def finish(self, item: AssistantItem) -> None:
        """The reply was logged: from now on the block shows exactly what a resumed log shows."""
        self.item = item
        self.interrupted = item.interrupted
        widget = self.widget
        if isinstance(widget, AssistantMessage):
            await widget.stop_stream()
        final_text, final_reasoning = printable(item.text), printable(item.reasoning)
        if (final_text, final_reasoning) != (self.text, self.reasoning):
            self.text, self.reasoning = final_text, final_reasoning
            if isinstance(widget, AssistantMessage) and widget.is_mounted:
                await widget.reply_text.update(final_text)
        self.refresh_widget()

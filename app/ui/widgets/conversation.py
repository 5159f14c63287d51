"""The conversation pane: SessionView items in, blocks and their widgets out.

Live and resumed conversations go through the same `add_item` / `end_turn`, so a resumed session
looks exactly as it did live; the stream only adds a reply being written, which the logged
`AssistantItem` then completes (or a failed request removes). Only a window of blocks has a mounted
widget; scrolling to either end of the window mounts the next blocks and unmounts the far ones.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from textual.containers import VerticalScroll
from textual.events import Resize

from app.llm.stream import BlockDelta, BlockStart, StreamEvent
from app.session.events import ToolCallContent
from app.session.view import (
    AssistantItem,
    ContextItem,
    Item,
    RequestErrorItem,
    RetryItem,
    SessionView,
    SummaryItem,
    ToolCallItem,
    ToolResultItem,
    UserItem,
)
from app.ui.messages import NewOutputBelow
from app.ui.widgets.assistant_message import AssistantBlock, AssistantMessage
from app.ui.widgets.block import Block
from app.ui.widgets.context_node import ContextBlock
from app.ui.widgets.failure_nodes import ErrorBlock, RetryBlock
from app.ui.widgets.markers import CompactionBlock, TurnEndBlock
from app.ui.widgets.tool_call import ToolCallBlock
from app.ui.widgets.user_message import UserBlock

WINDOW = 120
"""At most this many blocks have a widget mounted."""
CHUNK = 30
"""How many blocks come back (or go) at a time when the user scrolls past the window."""


def view_entries(view: SessionView) -> list[Item | str]:
    """The view's items in log order, with each turn's end reason (a `str`) where it was logged."""
    ends = sorted((turn.end_seq, turn.end_reason or "") for turn in view.turns if turn.end_seq is not None)
    entries: list[Item | str] = []
    position = 0
    for item in view.items:
        while position < len(ends) and ends[position][0] < item.seq:
            entries.append(ends[position][1])
            position += 1
        entries.append(item)
    entries.extend(reason for _seq, reason in ends[position:])
    return entries


class Conversation(VerticalScroll, can_focus=False):
    DEFAULT_CSS = """
    Conversation {
        layout: vertical;  /* not `stream`: its cached placements go stale when a widget is removed */
        height: 1fr;
        padding: 0 1 1 1;
        scrollbar-size-vertical: 1;
    }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.blocks: list[Block] = []
        self._low = 0
        self._high = 0
        self._calls: dict[str, ToolCallBlock] = {}
        self._live_reply: AssistantBlock | None = None
        self._stream_kinds: dict[int, str] = {}
        self.clock: Callable[[], float] = time.monotonic
        """What retry countdowns read (a test freezes it for a still picture)."""

    def on_mount(self) -> None:
        # New output keeps the view at the bottom until the user scrolls up.
        self.anchor()

    # --- feeding -----------------------------------------------------------------------------------

    async def load(self, entries: Iterable[Item | str]) -> None:
        """Show a whole log at once: blocks for all, widgets for the last window only."""
        for entry in entries:
            if isinstance(entry, str):
                await self._turn_end_block(entry, mount=False)
            else:
                await self._item_blocks(entry, mount=False)
        self._low = max(0, len(self.blocks) - WINDOW)
        self._high = self._low
        await self._mount_range(self._low, len(self.blocks))
        self.anchor()

    async def add_item(self, item: Item) -> None:
        await self._item_blocks(item, mount=True)

    async def end_turn(self, reason: str) -> None:
        self._close_live_reply()
        await self._turn_end_block(reason, mount=True)

    async def add_block(self, block: Block) -> None:
        """A block that is not from the log (an approval prompt)."""
        await self._append(block, mount=True)

    async def remove_block(self, block: Block) -> None:
        # The bookkeeping is done before the first await: blocks may be appended meanwhile.
        index = self.blocks.index(block)
        if index < self._high:
            self._high -= 1
            if index < self._low:
                self._low -= 1
        del self.blocks[index]
        widget, block.widget = block.widget, None
        if widget is not None:
            await widget.remove()

    async def stream(self, event: StreamEvent) -> None:
        if isinstance(event, BlockStart):
            self._stream_kinds[event.index] = event.kind
            if event.kind in ("text", "reasoning") and self._live_reply is None:
                self._live_reply = AssistantBlock()
                await self._append(self._live_reply, mount=True)
        elif isinstance(event, BlockDelta) and self._live_reply is not None:
            kind = self._stream_kinds.get(event.index)
            if kind == "text":
                await self._live_reply.add_text(event.text)
                self._note_new_output()
            elif kind == "reasoning":
                self._live_reply.add_reasoning(event.text)

    # --- items to blocks -----------------------------------------------------------------------------

    async def _item_blocks(self, item: Item, *, mount: bool) -> None:
        if isinstance(item, UserItem):
            await self._append(UserBlock(item), mount=mount)
        elif isinstance(item, AssistantItem):
            await self._assistant(item, mount=mount)
        elif isinstance(item, (ToolCallItem, ToolResultItem)):
            block = self._calls.get(item.call_id)
            if block is None:
                # A call the reply did not list (repair wrote it): shown where it was logged.
                arguments = item.arguments if isinstance(item, ToolCallItem) else ""
                block = self._call_block(ToolCallContent(call_id=item.call_id, name=item.name, arguments=arguments))
                await self._append(block, mount=mount)
            if isinstance(item, ToolCallItem):
                block.start()
            else:
                block.finish(item)
        elif isinstance(item, ContextItem):
            await self._append(ContextBlock(item), mount=mount)
        elif isinstance(item, RequestErrorItem):
            await self._failed_request(item, mount=mount)
        elif isinstance(item, RetryItem):
            await self._append(RetryBlock(item, live=mount, clock=lambda: self.clock()), mount=mount)
        elif isinstance(item, SummaryItem):
            await self._append(CompactionBlock(item), mount=mount)
        # A request header is not a node: the status line shows it.

    def _call_block(self, call: ToolCallContent) -> ToolCallBlock:
        block = ToolCallBlock(call)
        self._calls[call.call_id] = block
        return block

    async def _assistant(self, item: AssistantItem, *, mount: bool) -> None:
        live, self._live_reply = self._live_reply, None
        self._stream_kinds = {}
        if live is not None:
            await live.finish(item)
            if live.empty:
                await self.remove_block(live)
        else:
            block = AssistantBlock(item)
            if not block.empty:
                await self._append(block, mount=mount)
        for call in item.tool_calls:
            await self._append(self._call_block(call), mount=mount)

    async def _failed_request(self, item: RequestErrorItem, *, mount: bool) -> None:
        # What a failed attempt streamed is not part of the log: it goes, as it would on resume.
        live, self._live_reply = self._live_reply, None
        self._stream_kinds = {}
        if live is not None:
            widget = live.widget
            if isinstance(widget, AssistantMessage):
                await widget.stop_stream()
            await self.remove_block(live)
        await self._append(ErrorBlock(item), mount=mount)

    async def _turn_end_block(self, reason: str, *, mount: bool) -> None:
        if reason in TurnEndBlock.SHOWN:
            await self._append(TurnEndBlock(reason), mount=mount)

    def _close_live_reply(self) -> None:
        self._live_reply = None
        self._stream_kinds = {}

    # --- the mounted window --------------------------------------------------------------------------

    async def _append(self, block: Block, *, mount: bool) -> None:
        self.blocks.append(block)
        if not mount:
            return
        if self._high == len(self.blocks) - 1:
            widget = block.build()
            block.widget = widget
            self._high += 1
            await self.mount(widget)
            if self._high - self._low > WINDOW:
                await self._unmount_range(self._low, self._high - WINDOW)
        self._note_new_output()

    async def _mount_range(self, start: int, stop: int) -> None:
        """Mount blocks [start, stop), which lie just before or just after the window.

        The window's bounds change before the first await, so a scroll handler running meanwhile
        sees the blocks as mounted already.
        """
        widgets = []
        for block in self.blocks[start:stop]:
            block.widget = block.build()
            widgets.append(block.widget)
        if not widgets:
            return
        if start < self._low:
            first = self.blocks[self._low].widget
            self._low = start
            await self.mount_all(widgets, before=first)
        else:
            self._high = stop
            await self.mount_all(widgets)

    async def _unmount_range(self, start: int, stop: int) -> None:
        widgets = [block.widget for block in self.blocks[start:stop] if block.widget is not None]
        for block in self.blocks[start:stop]:
            block.widget = None
        if start == self._low:
            self._low = stop
        else:
            self._high = start
        if widgets:
            await self.remove_children(widgets)

    async def show_earlier(self) -> None:
        """Scrolled to the top of the window: bring back the blocks before it, keeping the view still."""
        if self._low == 0:
            return
        start = max(0, self._low - CHUNK)
        before = self.virtual_size.height
        await self._mount_range(start, self._low)
        if self._high - self._low > WINDOW:
            await self._unmount_range(self._high - (self._high - self._low - WINDOW), self._high)

        def keep_position() -> None:
            self.scroll_to(y=self.scroll_y + self.virtual_size.height - before, animate=False, immediate=True)

        self.call_after_refresh(keep_position)

    async def show_later(self) -> None:
        """Scrolled to the bottom of a window that is not the tail: mount the next blocks."""
        if self._high >= len(self.blocks):
            return
        stop = min(len(self.blocks), self._high + CHUNK)
        await self._mount_range(self._high, stop)
        if self._high - self._low > WINDOW:
            before = self.virtual_size.height
            await self._unmount_range(self._low, self._high - WINDOW)

            def keep_position() -> None:
                self.scroll_to(y=self.scroll_y - (before - self.virtual_size.height), animate=False, immediate=True)

            self.call_after_refresh(keep_position)

    async def jump_to_end(self) -> None:
        """Back to the newest output, wherever the window was."""
        if self._high < len(self.blocks):
            await self._unmount_range(self._low, self._high)
            self._low = self._high = max(0, len(self.blocks) - WINDOW)
            await self._mount_range(self._low, len(self.blocks))
        self.anchor()
        self.post_message(NewOutputBelow(False))

    @property
    def mounted_range(self) -> tuple[int, int]:
        return self._low, self._high

    @property
    def following(self) -> bool:
        """Whether new output keeps the view at the bottom (the user has not scrolled up)."""
        if self._high != len(self.blocks):
            return False
        return self.is_anchored and not self._anchor_released or self.scroll_y >= self.max_scroll_y - 1

    def _note_new_output(self) -> None:
        if not self.following:
            self.post_message(NewOutputBelow(True))

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if new_value <= 0 and old_value > 0 and self._low > 0:
            self.run_worker(self.show_earlier(), group="window", exclusive=True)
        elif new_value >= self.max_scroll_y and self._high < len(self.blocks):
            self.run_worker(self.show_later(), group="window", exclusive=True)
        elif new_value >= self.max_scroll_y - 1 and self._high == len(self.blocks):
            self.post_message(NewOutputBelow(False))

    def on_resize(self, event: Resize) -> None:
        if self.is_anchored and self._high == len(self.blocks):
            self.scroll_end(animate=False, immediate=True)

"""The conversation pane: SessionView items in, blocks and their widgets out.

Live and resumed conversations go through the same `_blocks_of`, so a resumed session looks
exactly as it did live; the stream only adds a reply being written, which the logged
`AssistantItem` then completes (or a failed request removes). Only a window of blocks has a mounted
widget; scrolling to either end of the window mounts the next blocks and unmounts the far ones. A
resumed log is read from its end: blocks exist for the turns read so far, and scrolling back past
the first of them reads the turns before (`ResumedLog`, in a thread).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from textual.containers import VerticalScroll
from textual.events import Resize
from textual.geometry import Size

from app.ui.messages import NewOutputBelow
from app.ui.text import clip_lines
from app.ui.widgets.conversation.block import Block, PlainBackground

if TYPE_CHECKING:
    # The session models (pydantic) and the blocks' widgets are imported with the first item or
    # stream event, not before the chat's first frame.
    from app.llm.stream import StreamEvent
    from app.session.resumed import Entry, ResumedLog
    from app.session.tool_changes import ChangedTool
    from app.session.view_items import ContextItem, Item
    from app.ui.widgets.conversation.assistant_message import AssistantBlock
    from app.ui.widgets.conversation.tool_call import ToolCallBlock

WINDOW = 120
"""At most this many blocks have a widget mounted."""
CHUNK = 30
"""How many blocks come back (or go) at a time when the user scrolls past the window."""


def _screenful(blocks: list[Block], size: Size) -> int:
    """How many of the last `blocks` fill a view of `size` (at most a window), by their text's lines
    wrapped at its width: enough for the first frame of a resumed log without laying them out."""
    count = rows = 0
    for block in reversed(blocks):
        if rows >= size.height or count == WINDOW:
            break
        rows += _rows_of(block, max(1, size.width - 4))
        count += 1
    return count


def _rows_of(block: Block, width: int) -> int:
    """About the rows a block takes at `width`, rather fewer than more: its top margin and its text's
    lines (a tool call's result as collapsed); a block of another kind, two."""
    from app.ui.widgets.conversation.assistant_message import AssistantBlock
    from app.ui.widgets.conversation.tool_call import COLLAPSED_LINES, ToolCallBlock
    from app.ui.widgets.conversation.user_message import UserBlock

    if isinstance(block, UserBlock):
        shown, hidden = block.shown()
        return 1 + _wrapped_lines(shown, width) + bool(hidden)
    if isinstance(block, AssistantBlock):
        text = _wrapped_lines(block.text, width) + 1 if block.text else 0  # and the last paragraph's margin
        return 1 + bool(block.reasoning) + text + block.interrupted
    if isinstance(block, ToolCallBlock):
        result = block.result.content if block.result is not None else ""
        shown, cut = (result, False) if block.expanded else clip_lines(result, COLLAPSED_LINES)
        return 2 + (_wrapped_lines(shown, width) if shown else 0) + cut
    return 2


def _wrapped_lines(text: str, width: int) -> int:
    return sum(max(1, -(-len(line) // width)) for line in text.splitlines()) or 1


class Conversation(PlainBackground, VerticalScroll, can_focus=False):
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
        self._resumed: ResumedLog | None = None
        self._reading: asyncio.Task[None] | None = None
        self.clock: Callable[[], float] = time.monotonic
        """What retry countdowns read (a test freezes it for a still picture)."""

    def on_mount(self) -> None:
        # New output keeps the view at the bottom until the user scrolls up.
        self.anchor()

    # --- feeding -----------------------------------------------------------------------------------

    async def load(self, entries: Iterable[Entry]) -> None:
        """Show a whole log at once: blocks for all, widgets for the last window only."""
        for entry in entries:
            self.blocks.extend(self._blocks_of(entry, live=False))
        await self._mount_tail(WINDOW)

    async def resume(self, resumed: ResumedLog, size: Size) -> None:
        """Show the end of a resumed log in a view of `size`: its last turns are read (in a thread)
        and as few of the last blocks mounted for the first frame as fill the view (each Markdown
        reply costs its parse and layout). The rest of the window follows behind it, as a live
        conversation would have it; scrolling back past the window mounts more, and reads the turns
        before once the blocks read so far are all shown."""
        self._resumed = resumed
        self._low = self._high = len(self.blocks)
        first = 0
        while first == self._low and not resumed.exhausted:
            await self._read_earlier(self._low + 1)
            if not self.is_attached:
                return  # the app quit while the log was being read
            first = _screenful(self.blocks[: self._low], size)
        await self._mount_tail(first)
        self.call_after_refresh(self.run_worker, self._fill_window, group="window", exclusive=True)

    async def _fill_window(self) -> None:
        """Mount the window's blocks above the first frame's, a chunk at a time (the view stays at
        the end; a scroll by the user replaces this worker)."""
        while self._high - self._low < WINDOW and self.has_earlier:
            await self._read_earlier(CHUNK)
            count = min(CHUNK, WINDOW - (self._high - self._low), self._low)
            await self._mount_range(self._low - count, self._low)

    async def _mount_tail(self, count: int) -> None:
        self._low = self._high = max(0, len(self.blocks) - count)
        await self._mount_range(self._low, len(self.blocks))
        self.anchor()

    async def add_item(self, item: Item) -> None:
        from app.session.view_items import AssistantItem, RequestErrorItem
        from app.ui.widgets.conversation.assistant_message import AssistantMessage

        if isinstance(item, (AssistantItem, RequestErrorItem)):
            live = self._live_reply
            self._close_live_reply()
            if live is not None and isinstance(item, AssistantItem):
                # The reply written so far becomes the logged one; only its calls are new blocks.
                await live.finish(item)
                if live.empty:
                    await self.remove_block(live)
                for call in item.call_parts:
                    await self._append(self._call_block(call.call_id, call.name, call.arguments))
                return
            if live is not None:
                # What a failed attempt streamed is not part of the log: it goes, as it would on resume.
                widget = live.widget
                if isinstance(widget, AssistantMessage):
                    await widget.stop_stream()
                await self.remove_block(live)
        for block in self._blocks_of(item, live=True):
            await self._append(block)

    async def end_turn(self, reason: str) -> None:
        self._close_live_reply()
        for block in self._blocks_of(reason, live=True):
            await self._append(block)

    async def add_block(self, block: Block) -> None:
        """A block that is not from the log (an approval prompt)."""
        await self._append(block)

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
        from app.llm.stream import BlockDelta, BlockStart
        from app.ui.widgets.conversation.assistant_message import AssistantBlock

        if isinstance(event, BlockStart):
            self._stream_kinds[event.index] = event.kind
            if event.kind in ("text", "reasoning") and self._live_reply is None:
                self._live_reply = AssistantBlock()
                await self._append(self._live_reply)
        elif isinstance(event, BlockDelta) and self._live_reply is not None:
            kind = self._stream_kinds.get(event.index)
            if kind == "text":
                await self._live_reply.add_text(event.text)
                self._note_new_output()
            elif kind == "reasoning":
                self._live_reply.add_reasoning(event.text)

    # --- entries to blocks ---------------------------------------------------------------------------

    def _blocks_of(self, entry: Entry, *, live: bool) -> list[Block]:
        """The new blocks one log entry adds (a tool call or result updates its call's block)."""
        from app.session.view_items import (
            AssistantItem,
            ContextItem,
            RequestErrorItem,
            RetryItem,
            SummaryItem,
            ToolCallItem,
            ToolResultItem,
            UserItem,
        )
        from app.ui.widgets.conversation.assistant_message import AssistantBlock
        from app.ui.widgets.conversation.markers import CompactionBlock, TurnEndBlock
        from app.ui.widgets.conversation.user_message import UserBlock

        if isinstance(entry, str):
            return [TurnEndBlock(entry)] if entry in TurnEndBlock.SHOWN else []
        if isinstance(entry, UserItem):
            return [UserBlock(entry)]
        if isinstance(entry, AssistantItem):
            reply = AssistantBlock(entry)
            calls: list[Block] = [
                self._call_block(call.call_id, call.name, call.arguments) for call in entry.call_parts
            ]
            return calls if reply.empty else [reply, *calls]
        if isinstance(entry, (ToolCallItem, ToolResultItem)):
            new: list[Block] = []
            block = self._calls.get(entry.call_id)
            if block is None:
                # A call the reply did not list (repair wrote it): shown where it was logged.
                arguments = entry.arguments if isinstance(entry, ToolCallItem) else ""
                block = self._call_block(entry.call_id, entry.name, arguments)
                new.append(block)
            if isinstance(entry, ToolCallItem):
                block.start()
            else:
                block.finish(entry)
            return new
        # The rarer kinds' widgets are imported with the first block of their kind.
        if isinstance(entry, ContextItem):
            from app.ui.widgets.conversation.context_node import ContextBlock

            return [ContextBlock(entry, self._changed_tools)]
        if isinstance(entry, RequestErrorItem):
            from app.ui.widgets.conversation.failure_nodes import ErrorBlock

            return [ErrorBlock(entry)]
        if isinstance(entry, RetryItem):
            from app.ui.widgets.conversation.failure_nodes import RetryBlock

            return [RetryBlock(entry, live=live, clock=lambda: self.clock())]
        if isinstance(entry, SummaryItem):
            return [CompactionBlock(entry)]
        return []  # a request header is not a node: the status line shows it

    def _changed_tools(self, item: ContextItem) -> tuple[ChangedTool, ...]:
        """What a tool change changed, read from the headers of the session shown."""
        from app.session.tool_changes import changed_tools
        from app.ui.contract import chat_host

        session = chat_host(self.app).session
        return changed_tools(session.chain, item) if session is not None else ()

    def _call_block(self, call_id: str, name: str, arguments: str) -> ToolCallBlock:
        """The block of a tool call, which holds it as msgspec's Struct whether it was read from a
        resumed log (no model built) or comes live (a model): the two blocks are equal."""
        from app.session.structs import ToolCallContent
        from app.ui.widgets.conversation.tool_call import ToolCallBlock

        block = ToolCallBlock(ToolCallContent(call_id=call_id, name=name, arguments=arguments))
        self._calls[call_id] = block
        return block

    def _close_live_reply(self) -> None:
        self._live_reply = None
        self._stream_kinds = {}

    # --- the mounted window --------------------------------------------------------------------------

    async def _append(self, block: Block) -> None:
        self.blocks.append(block)
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

    @property
    def pristine(self) -> bool:
        """Whether nothing was ever shown in it (a log can be shown in it as in a new one)."""
        return not self.blocks and self._resumed is None and not self._calls and self._live_reply is None

    @property
    def has_earlier(self) -> bool:
        """Whether blocks exist, or could be read, before the mounted window."""
        return self._low > 0 or self._resumed is not None and not self._resumed.exhausted

    async def _read_earlier(self, wanted: int) -> None:
        """Read earlier turns of the resumed log until `wanted` blocks wait before the window (or
        the log's start is reached).

        Each read is a task of its own, shielded: a scroll handler cancelled meanwhile (a newer one
        replaces it) must not lose turns the resumed log has already handed out."""
        resumed = self._resumed
        while self._low < wanted and resumed is not None and not resumed.exhausted:
            if self._reading is None or self._reading.done():
                self._reading = asyncio.create_task(self._prepend_earlier(resumed))
            await asyncio.shield(self._reading)

    async def _prepend_earlier(self, resumed: ResumedLog) -> None:
        entries = await asyncio.to_thread(resumed.earlier)
        blocks = [block for entry in entries for block in self._blocks_of(entry, live=False)]
        self.blocks[:0] = blocks
        self._low += len(blocks)
        self._high += len(blocks)

    async def show_earlier(self, count: int = CHUNK) -> None:
        """Scrolled to the top of the window: bring back the `count` blocks before it, keeping the
        view still."""
        await self._read_earlier(count)
        if self._low == 0:
            return
        start = max(0, self._low - count)
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
        if new_value <= 0 and old_value > 0 and self.has_earlier:
            self.run_worker(self.show_earlier(), group="window", exclusive=True)
        elif new_value >= self.max_scroll_y and self._high < len(self.blocks):
            self.run_worker(self.show_later(), group="window", exclusive=True)
        elif new_value >= self.max_scroll_y - 1 and self._high == len(self.blocks):
            self.post_message(NewOutputBelow(False))

    def on_resize(self, event: Resize) -> None:
        if self.is_anchored and self._high == len(self.blocks):
            self.scroll_end(animate=False, immediate=True)

"""The chat screen: conversation, new-output hint, slash completions, composer, status line, footer.

It turns the agent's messages into conversation blocks (through the session view, never the raw
log) and keeps the status line's figures; the app owns the agent and the session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import cached_property, partial
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events
from textual.worker import get_current_worker
from textual.app import ComposeResult
from textual.binding import Binding
from textual.geometry import Size
from textual.screen import Screen
from textual.widgets import Static

from app.i18n import N_, _
from app.session.resumed import ResumedLog
from app.ui import keymap
from app.ui.contract import ChatHost, chat_host
from app.ui.footer import LocalizedFooter
from app.ui.messages import ApprovalAsked, EventAppended, NewOutputBelow, StreamPiece
from app.ui.text import literal
from app.ui.widgets.composer import Composer, SlashCompletions
from app.ui.widgets.conversation.pane import Conversation
from app.ui.widgets.queued_prompts import QueuedPrompts
from app.ui.widgets.status_line import StatusLine, Usage

if TYPE_CHECKING:
    from textual.css.query import DOMQuery
    from textual.widget import Widget

    from app.llm.routes import Route
    from app.report.cost import RunningCost
    from app.report.prices import PriceBook


def usage_until(path: Path, total: int) -> Usage:
    """The status line's figures over the first `total` items of a log (read through a `Session`
    of its own: a thread must not share the chat's view)."""
    from app.session.session import Session

    usage = Usage()
    for item in islice(Session.open(path).view().items, total):
        usage.count(item)
    return usage


def cost_until(path: Path, total: int, route: Route, prices: PriceBook, stop: Callable[[], bool]) -> RunningCost | None:
    """The session's totals on `route` over the first `total` requests of a log (a `Session` of
    its own, as for `usage_until`); None once `stop()` says so (a request can take tens of
    milliseconds on a long history: a route switch or quitting must not wait for the rest)."""
    from app.report.cost import RunningCost
    from app.session.session import Session

    cost = RunningCost(route, prices)
    for request in islice(Session.open(path).view().requests, total):
        if stop():
            return None
        cost.add(request)
    return cost


class ChatScreen(Screen[None]):
    CSS_PATH = "chat.tcss"
    AUTO_FOCUS = "Composer"
    BINDINGS = [
        Binding(keymap.CANCEL_TURN, "cancel_turn", N_("Cancel turn"), show=True),
        Binding(keymap.JUMP_TO_END, "jump_to_end", N_("Newest"), show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._fed = 0
        self._conversation = Conversation()
        self._cost: RunningCost | None = None
        """The status line's totals on the current route (None: being worked out, or no request)."""
        self._costing = False
        """A worker is working the totals out (for a resumed session, or a new route)."""

    def compose(self) -> ComposeResult:
        if self._conversation.is_attached:
            self._conversation = Conversation()
        yield Static(literal(self._welcome()), id="welcome")
        yield self._conversation
        yield Static(literal(_("↓ New output below (Ctrl+End)")), id="new-output")
        yield QueuedPrompts(id="queued")
        yield Composer(SlashCompletions(id="completions"), id="composer")
        status = StatusLine(id="status")
        status.route, status.read_only = self._host.route, self._host.read_only is not None
        yield status
        yield LocalizedFooter()

    def on_mount(self) -> None:
        self.status.show()
        # After the first frame: starting the tools imports the registry (and more) on this loop.
        self.call_after_refresh(self._host.start_runtime)

    @cached_property
    def _host(self) -> ChatHost:
        return chat_host(self.app)

    @staticmethod
    def _welcome() -> str:
        return _(
            "Welcome to toolscope. Type a prompt and press Enter; Ctrl+J (or Shift+Enter) adds a "
            "new line on every terminal. / lists the commands, Ctrl+P the command palette."
        )

    @property
    def conversation(self) -> Conversation:
        return self._conversation

    @property
    def status(self) -> StatusLine:
        return self.query_one(StatusLine)

    @property
    def composer(self) -> Composer:
        return self.query_one(Composer)

    @property
    def queued(self) -> QueuedPrompts:
        return self.query_one(QueuedPrompts)

    # --- what the app tells the chat -----------------------------------------------------------------

    def load_prompts(self, prompts: list[str]) -> None:
        """The prompts of earlier chats (oldest first), recalled with Up before those sent since."""
        history = self.composer.prompt_history
        history.prompts[:0] = prompts
        history.add("")

    def show_route(self, route: Route) -> None:
        status = self.status
        status.route = route
        status.show()
        if self._cost is not None or self._costing:
            self._restart_cost()

    def show_read_only(self, read_only: bool) -> None:
        """A session another process writes: the status line says so (with its next figures) and
        the composer takes no prompt."""
        self.status.read_only = read_only
        self.composer.disabled = read_only

    def queue(self, prompt: str) -> None:
        """Hold `prompt` until the running turn ends."""
        self.queued.add(prompt)

    def take_queued(self) -> str | None:
        """The oldest queued prompt, now to be sent (None: none waits)."""
        return self.queued.take_next()

    @property
    def queued_count(self) -> int:
        return len(self.queued.prompts)

    def focus_composer(self) -> None:
        self.composer.focus()

    async def show_session(self, path: Path | None) -> None:
        """Render a log from scratch (a resumed session, a language switch): the same blocks as live.

        Only its last turns are read (in a thread) before they are painted; older ones are read when
        the user scrolls back, and the status line's totals over the whole log come after the frame.
        """
        resumed = None
        view = self._view_size()
        conversation = self._conversation
        if not conversation.pristine:
            with self.app.batch_update():
                old, conversation = conversation, Conversation()
                self._conversation = conversation
                await self.mount(conversation, before=old)
                await old.remove()
        self._fed = 0
        if path is not None:
            # Not in the batch below: the screen keeps answering (keys shown) while a log is read,
            # which is seconds when a large one is indexed for the first time.
            resumed = await asyncio.to_thread(ResumedLog, path)
        if not self.is_attached:
            return  # the app quit while the session was being read
        # One layout and one frame for the blocks and the welcome going with them, not one for each
        # step: at start-up each costs about as much as the blocks themselves.
        with self.app.batch_update():
            if resumed is not None:
                self._fed = resumed.total
                await conversation.resume(resumed, view)
                if not self.is_attached:
                    return
            self.query_one("#welcome").set_class(bool(conversation.blocks), "-hidden")
        self.status.reset(Usage())
        self._host.session_advanced.publish(None)
        self._cost, self._costing = None, False
        self.status.show_cost(None)
        if path is not None and resumed is not None:
            # After the frame: counting reads the whole log (in a thread, but it holds the GIL).
            count = partial(self._count_usage, path, resumed.total)
            self.call_after_refresh(self.run_worker, count, group="usage", exclusive=True)
            self.call_after_refresh(self._restart_cost)

    def _view_size(self) -> Size:
        """The conversation's view once the welcome is hidden (the screen's size before its first
        layout)."""
        size = self._conversation.size
        if not size.height:
            return self.app.size
        welcome = self.query_one("#welcome")
        return Size(size.width, size.height + (welcome.outer_size.height if welcome.display else 0))

    async def _count_usage(self, path: Path, total: int) -> None:
        usage = await asyncio.to_thread(usage_until, path, total)
        view = self._host.view()
        for item in view.items[total : self._fed] if view is not None else ():
            usage.count(item)  # fed live while the totals were read
        self.status.reset(usage)

    def _restart_cost(self) -> None:
        """Work the status line's totals out again, for the current route, over the session so far:
        in a thread (a long session takes a while); requests logged meanwhile are added after."""
        host = self._host
        self._cost = None
        self.status.show_cost(None)
        view, session = host.view(), host.session
        total = len(view.requests) if view is not None else 0
        self._costing = bool(total) and session is not None
        if self._costing:
            assert session is not None
            count = partial(self._count_cost, session.path, total, host.route, host.prices())
            self.run_worker(count, group="cost", exclusive=True, thread=True)

    def _count_cost(self, path: Path, total: int, route: Route, prices: PriceBook) -> None:
        """In a thread; a worker started since (a route switch) cancels this one."""
        worker = get_current_worker()
        cost = cost_until(path, total, route, prices, lambda: worker.is_cancelled)
        if cost is not None and not worker.is_cancelled:
            self.app.call_from_thread(self._cost_counted, cost)

    def _cost_counted(self, cost: RunningCost) -> None:
        if cost.route != self._host.route:
            return  # switched again: that route's worker has the totals
        self._cost, self._costing = cost, False
        self._add_requests()

    def _add_requests(self) -> None:
        """Add the requests the view has beyond those the totals hold (one report step each)."""
        view = self._host.view()
        if self._costing or view is None:
            return
        total = len(view.requests)
        cost = self._cost
        if cost is None:
            if not total:
                return
            from app.report.cost import RunningCost

            cost = self._cost = RunningCost(self._host.route, self._host.prices())
        if cost.requests < total:
            for request in view.requests[cost.requests : total]:
                cost.add(request)
            self.status.show_cost(cost.totals())
        elif self.status.cost is None:
            self.status.show_cost(cost.totals())

    async def on_event_appended(self, message: EventAppended) -> None:
        from app.session.events import TurnEnd

        view = self._host.view()
        if view is None:
            return
        event = message.event
        items = view.items
        while self._fed < len(items) and items[self._fed].seq <= event.seq:
            item = items[self._fed]
            self._fed += 1
            await self.conversation.add_item(item)
            self.status.count(item)
        self._add_requests()
        if isinstance(event, TurnEnd):
            await self.conversation.end_turn(event.data.reason)
        self.query_one("#welcome").add_class("-hidden")
        self._host.session_advanced.publish(event)

    async def on_stream_piece(self, message: StreamPiece) -> None:
        await self.conversation.stream(message.event)

    async def on_approval_asked(self, message: ApprovalAsked) -> None:
        from app.ui.widgets.conversation.approval import ApprovalBlock

        block = ApprovalBlock(message.request, message.decision)
        conversation = self.conversation

        async def close_prompt() -> None:
            if not self.is_attached:
                return  # the app is quitting: the turn was cancelled with the prompt open
            await conversation.remove_block(block)
            self.composer.focus()
            conversation.anchor()

        message.decision.add_done_callback(lambda _future: self.run_worker(close_prompt(), group="approval"))
        await conversation.add_block(block)
        # The prompt has the keys (y, a, n): it is shown wherever the user had scrolled to.
        await conversation.jump_to_end()

    def focus_prompt_for(self, key: events.Key) -> None:
        """A printable key typed with the focus elsewhere in the chat (a block, the queue) starts a
        prompt, as in Toad. The app calls this before it delivers the key, so the composer already
        has the focus for it and for the rest of a burst: they arrive in order."""
        focused = self.focused
        if not key.is_printable or isinstance(focused, Composer):
            return  # the common case, decided without a query
        composer = self.composer
        if not composer.disabled and (focused is None or focused not in self._approval_prompts()):
            self.set_focus(composer)

    def on_screen_resume(self) -> None:
        """Back from a screen over the chat: the keys go to a waiting approval prompt, else to the
        composer (not to the block that had the focus before)."""
        waiting = self._approval_prompts()
        self.set_focus(waiting.first() if waiting else self.composer)

    def _approval_prompts(self) -> DOMQuery[Widget]:
        # By name: the approval widgets are imported with the tools, after the first frame.
        return self.query("ApprovalPrompt")

    def on_new_output_below(self, message: NewOutputBelow) -> None:
        self.query_one("#new-output").set_class(message.waiting, "-visible")

    def on_click(self, event: object) -> None:
        widget = getattr(event, "widget", None)
        if widget is not None and widget.id == "new-output":
            self.run_worker(self.conversation.jump_to_end())

    async def action_jump_to_end(self) -> None:
        await self.conversation.jump_to_end()

    def action_cancel_turn(self) -> None:
        if self.composer.completions.visible:
            self.composer.load_text("")
            return
        self._host.cancel_turn()

"""A failed request (its code and message) and the retry that follows, with a live countdown."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual.widgets import Static
from textual.timer import Timer

from app.i18n import _
from app.session.view_items import stored_part
from app.ui.text import literal
from app.ui.widgets.conversation.block import Block

if TYPE_CHECKING:
    from app.session.view_items import RequestErrorItem, RetryItem


class ErrorNode(Static):
    DEFAULT_CSS = """
    ErrorNode {
        margin: 1 0 0 0;
        padding: 0 1;
        color: $error;
        border-left: outer $error;
    }
    """

    def __init__(self, block: ErrorBlock) -> None:
        failure = stored_part(block.item, "failure")  # its fields are read: no model is built
        super().__init__(literal(_("✗ {code}: {message}").format(code=failure.code, message=failure.message)))
        self.block = block


class ErrorBlock(Block):
    def __init__(self, item: RequestErrorItem) -> None:
        self.item = item

    def build(self) -> ErrorNode:
        return ErrorNode(self)


class RetryNode(Static):
    DEFAULT_CSS = """
    RetryNode {
        padding: 0 1;
        color: $warning;
        border-left: outer $warning;
    }
    """
    TICK = 0.1

    def __init__(self, block: RetryBlock) -> None:
        super().__init__()
        self.block = block
        self._timer: Timer | None = None

    def on_mount(self) -> None:
        self.refresh_from_block()
        if self.block.remaining() > 0:
            self._timer = self.set_interval(self.TICK, self.refresh_from_block)

    def refresh_from_block(self) -> None:
        self.update(literal(self.block.text()))
        if self._timer is not None and self.block.remaining() <= 0:
            self._timer.stop()
            self._timer = None

    def freeze(self) -> None:
        """Stop the countdown where it is (snapshot tests need a still picture)."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None


class RetryBlock(Block):
    """`live` retries count down from when they were logged; replayed ones show how long they waited."""

    def __init__(self, item: RetryItem, *, live: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self.item = item
        self._clock = clock
        self._due = clock() + item.delay_ms / 1000 if live else None

    def remaining(self) -> float:
        return 0.0 if self._due is None else max(0.0, self._due - self._clock())

    def text(self) -> str:
        item = self.item
        left = self.remaining()
        if left > 0:
            return _("⟳ Retrying in {seconds:.1f} s (attempt {retry} of {max_retries})").format(
                seconds=left, retry=item.retry, max_retries=item.max_retries
            )
        return _("⟳ Retried after {seconds:.1f} s (attempt {retry} of {max_retries})").format(
            seconds=item.delay_ms / 1000, retry=item.retry, max_retries=item.max_retries
        )

    def build(self) -> RetryNode:
        return RetryNode(self)

"""Textual messages between the agent (running in a worker on the app's loop) and the widgets.

Each is a plain class with its own `__init__`, as Textual's own messages are (docs/decisions.md,
*Plain classes*).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:  # annotations only: the chat's first frame does not wait for the tool registry
    from app.llm.stream import StreamEvent
    from app.session.events import Envelope
    from app.tools.approval import ApprovalRequest
    from app.tools.source_state import SourceProblem


class EventAppended(Message):
    """An event was committed to the session log; the view already contains it."""

    def __init__(self, event: Envelope) -> None:
        super().__init__()
        self.event = event


class StreamPiece(Message):
    """A streamed piece of the reply being received (not logged yet)."""

    def __init__(self, event: StreamEvent) -> None:
        super().__init__()
        self.event = event


ALLOW_ONCE = "once"
ALLOW_SESSION = "session"
DENY = "deny"


class ApprovalAsked(Message):
    """A tool waits for the user; set the future's result to the decision (`ALLOW_ONCE`,
    `ALLOW_SESSION` or `DENY`)."""

    def __init__(self, request: ApprovalRequest, decision: asyncio.Future[str]) -> None:
        super().__init__()
        self.request = request
        self.decision = decision


class ProblemReported(Message):
    """A tool source failed (an MCP server that will not start, a duplicate tool name)."""

    def __init__(self, problem: SourceProblem) -> None:
        super().__init__()
        self.problem = problem


class PromptSubmitted(Message):
    """The composer's text, sent with Enter."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class NewOutputBelow(Message):
    """Whether output arrived below what the user is looking at (they scrolled up)."""

    def __init__(self, waiting: bool) -> None:
        super().__init__()
        self.waiting = waiting

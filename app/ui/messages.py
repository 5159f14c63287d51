"""Textual messages between the agent (running in a worker on the app's loop) and the widgets."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:  # annotations only: the chat's first frame does not wait for the tool registry
    from app.llm.stream import StreamEvent
    from app.session.events import Envelope
    from app.tools.approval import ApprovalRequest
    from app.tools.registry import SourceProblem


@dataclass
class EventAppended(Message):
    """An event was committed to the session log; the view already contains it."""

    event: Envelope


@dataclass
class StreamPiece(Message):
    """A streamed piece of the reply being received (not logged yet)."""

    event: StreamEvent


ALLOW_ONCE = "once"
ALLOW_SESSION = "session"
DENY = "deny"


@dataclass
class ApprovalAsked(Message):
    """A tool waits for the user; set the future's result to the decision (`ALLOW_ONCE`,
    `ALLOW_SESSION` or `DENY`)."""

    request: ApprovalRequest
    decision: asyncio.Future[str]


@dataclass
class ProblemReported(Message):
    """A tool source failed (an MCP server that will not start, a duplicate tool name)."""

    problem: SourceProblem


@dataclass
class TurnFinished(Message):
    """The running turn ended (completed, failed, cancelled)."""


@dataclass
class SessionReady(Message):
    """The session is open (or could only be opened read-only) and its view is reduced."""


@dataclass
class PromptSubmitted(Message):
    """The composer's text, sent with Enter."""

    text: str


@dataclass
class NewOutputBelow(Message):
    """Whether output arrived below what the user is looking at (they scrolled up)."""

    waiting: bool

"""How the agent talks to the UI: a listener and an approver that post Textual messages.

The agent runs in a worker on the app's own event loop, so posting is cheap and ordered; nothing
here blocks (the approver awaits a future the approval prompt resolves).
"""

from __future__ import annotations

import asyncio

from textual.message_pump import MessagePump

from app.agent.loop import AgentListener
from app.llm.stream import StreamEvent
from app.session.events import Envelope
from app.tools.approval import ApprovalRequest
from app.ui.messages import ALLOW_ONCE, ALLOW_SESSION, ApprovalAsked, EventAppended, StreamPiece


class ChatListener(AgentListener):
    def __init__(self, target: MessagePump) -> None:
        self._target = target

    def event_appended(self, event: Envelope) -> None:
        self._target.post_message(EventAppended(event))

    def stream_event(self, event: StreamEvent) -> None:
        self._target.post_message(StreamPiece(event))


class ChatApprover:
    """Asks through an inline prompt; "allow for this session" remembers the tool name."""

    def __init__(self, target: MessagePump) -> None:
        self._target = target
        self.allowed_tools: set[str] = set()

    async def approve(self, request: ApprovalRequest) -> bool:
        if request.tool_name in self.allowed_tools:
            return True
        decision: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._target.post_message(ApprovalAsked(request, decision))
        answer = await decision
        if answer == ALLOW_SESSION:
            self.allowed_tools.add(request.tool_name)
        return answer in (ALLOW_ONCE, ALLOW_SESSION)

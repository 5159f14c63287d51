"""An inline approval prompt: what the tool will do (the command, or the file and a diff), and
allow once / allow for this session / deny, by key or by mouse."""

from __future__ import annotations

import asyncio
from time import monotonic

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import Button, Static

from app.i18n import N_, _
from app.terminal import printable
from app.tools.approval import ApprovalRequest
from app.ui import keymap
from app.ui.messages import ALLOW_ONCE, ALLOW_SESSION, DENY
from app.ui.text import literal
from app.ui.widgets.conversation.block import Block


def diff_content(diff: str) -> Content:
    """A unified diff, each line coloured by its sign, shown literally."""
    lines = []
    for line in printable(diff).split("\n"):
        style = "$text-success" if line.startswith("+") else "$text-error" if line.startswith("-") else ""
        lines.append(Content.styled(line, style) if style else Content(line))
    return Content("\n").join(lines)


ANSWER_DELAY = 0.6
"""Seconds after a prompt appears during which its keys answer nothing. It takes the focus from the
composer, where the user may be typing the next prompt: the letters meant for it must not allow a
command (`a` allows every later one). A click is deliberate and counts at once (browsers delay their
permission buttons likewise)."""


class ApprovalPrompt(Vertical, can_focus=True):
    DEFAULT_CSS = """
    ApprovalPrompt {
        height: auto;
        margin: 1 0 0 2;
        padding: 0 1;
        border: round $warning;
        &:focus { border: round $accent; }
        & > .summary { text-style: bold; }
        & > .detail { background: $surface; padding: 0 1; max-height: 20; overflow-y: auto; }
        & > Horizontal { height: auto; margin-top: 1; }
        & Button { margin-right: 1; min-width: 10; }
    }
    """
    BINDINGS = [
        (keymap.ALLOW_ONCE, "key_answer('once')", N_("Allow once")),
        (keymap.ALLOW_SESSION, "key_answer('session')", N_("Allow for this session")),
        (keymap.DENY, "key_answer('deny')", N_("Deny")),
    ]

    def __init__(self, block: ApprovalBlock) -> None:
        super().__init__()
        self.block = block
        self._shown_at = monotonic()

    def compose(self) -> ComposeResult:
        request = self.block.request
        yield Static(literal(_("⚠ {tool} wants to act: {summary}").format(tool=request.tool_name, summary=request.summary)), classes="summary")
        yield Static(diff_content(request.diff) if request.diff else literal(request.detail), classes="detail")
        with Horizontal():
            yield Button(literal(_("Allow once [y]")), id="once", variant="success", compact=True)
            yield Button(literal(_("Allow for this session [a]")), id="session", variant="primary", compact=True)
            yield Button(literal(_("Deny [n]")), id="deny", variant="error", compact=True)

    def on_mount(self) -> None:
        # Not scrolled to by the focus: that runs before the prompt's layout, scrolls the conversation
        # to where the prompt is not yet and releases its anchor. The chat shows it (`jump_to_end`).
        self.focus(scroll_visible=False)
        self._shown_at = monotonic()
        self.app.bell()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_answer(event.button.id or DENY)

    def action_key_answer(self, answer: str) -> None:
        if monotonic() - self._shown_at < ANSWER_DELAY:
            self.app.bell()  # typed before the prompt could be read
            return
        self.action_answer(answer)

    def action_answer(self, answer: str) -> None:
        self.block.answer(answer)


class ApprovalBlock(Block):
    """Removed from the conversation once answered: the tool call's own result tells the rest."""

    def __init__(self, request: ApprovalRequest, decision: asyncio.Future[str]) -> None:
        self.request = request
        self.decision = decision

    def answer(self, answer: str) -> None:
        if not self.decision.done() and answer in (ALLOW_ONCE, ALLOW_SESSION, DENY):
            self.decision.set_result(answer)

    def build(self) -> ApprovalPrompt:
        return ApprovalPrompt(self)

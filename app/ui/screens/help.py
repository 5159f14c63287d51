"""Keys and commands: a screen over the chat, closed by Escape, F1 or a click outside it.

A screen rather than a notification: a toast stays over whatever opens next (a picker) and no key
closes it.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Static

from app.i18n import _
from app.ui import keymap, slash
from app.ui.screens.modal import ClosableModal
from app.ui.text import literal


def help_lines() -> list[str]:
    return [
        _("Enter sends the prompt; Shift+Enter or Ctrl+J adds a new line."),
        _("Ctrl+J works on every terminal: legacy terminals send the same key for Enter and Shift+Enter."),
        _("Up and Down on the first or last line walk through earlier prompts."),
        _("A prompt sent while a turn runs waits above the prompt; Up in an empty prompt takes it back."),
        _("Escape cancels a running turn (the partial answer is kept) and closes what is on top."),
        _("Ctrl+P opens the command palette; Ctrl+T the tools; Ctrl+R the routes; Ctrl+Q quits."),
        _("Ctrl+G opens the inspector: what each route received for each request, live."),
        _("Ctrl+L opens this session's trajectory; it follows the turn as it runs."),
        _("Enter or a click expands a tool result, a tool-change list or the reasoning."),
        _("Typing anywhere in the chat goes to the prompt."),
    ]


# The chat's keys the help names: pressed here, they close the help and do what it says (a modal
# screen would otherwise keep them from the app).
_CHAT_KEYS = (
    (keymap.TOOLS, "open_tools"),
    (keymap.ROUTES, "pick_route"),
    (keymap.SESSIONS, "pick_session"),
    (keymap.INSPECT, "inspect"),
    (keymap.TRAJECTORY, "open_trajectory"),
)


class HelpScreen(ClosableModal[None]):
    CSS_PATH = "help.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(keymap.HELP, "close", show=False),
        *(Binding(key, f"leave_for({action!r})", show=False) for key, action in _CHAT_KEYS),
    ]

    def action_leave_for(self, action: str) -> None:
        self.dismiss(None)
        self.app.call_later(self.app.run_action, action)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog") as dialog:
            # In the borders, so the way out shows however short the terminal.
            dialog.border_title = literal(_("Keys and commands"))
            dialog.border_subtitle = literal(_("Escape closes (or F1, or a click outside)"))
            yield Static(literal("\n".join(help_lines())))
            commands = (f"{command.name:<14} {command.description}" for command in slash.COMMANDS)
            yield Static(literal("\n".join(commands)), id="help-commands")

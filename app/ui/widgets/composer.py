"""The composer: a multi-line prompt editor with history, slash-command completion and Enter to send.

Enter sends; Shift+Enter and Ctrl+J insert a newline (Ctrl+J works on every terminal, since legacy
terminals send the same byte for Enter and Shift+Enter). Up on the first line and Down on the last
walk the prompt history; while the completion list shows, they move through it instead.

A large paste is kept aside and shown as one placeholder line (`[Pasted text #1: 20000 lines]`),
expanded when the prompt is sent: the editor re-wraps every line it holds, so thousands of pasted
lines would stall the app for seconds.
"""

from __future__ import annotations

import re

from textual import events
from textual.binding import Binding
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

from app.i18n import N_, _, ngettext
from app.terminal import printable
from app.ui import keymap, slash
from app.ui.prompt_history import LARGE_PASTE_CHARS, PromptHistory, keeps
from app.ui.messages import PromptSubmitted
from app.ui.text import line_count, literal
from app.ui.type_ahead import take_typed
from app.ui.widgets.queued_prompts import QueuedPrompts


LARGE_PASTE_LINES = 60
_TYPED_KEYS = re.compile(r"(\r|\n|\x7f|\x08)")


class SlashCompletions(OptionList):
    DEFAULT_CSS = """
    SlashCompletions {
        display: none;
        height: auto;
        max-height: 12;
        border: none;
        padding: 0 1;
        background: $surface;
        &.-visible { display: block; }
    }
    """

    def show(self, commands: list[slash.SlashCommand]) -> None:
        self.clear_options()
        self.add_options(
            Option(literal(f"{command.name:<14} {command.description}"), id=command.name) for command in commands
        )
        self.set_class(bool(commands), "-visible")
        if commands:
            self.highlighted = 0

    @property
    def visible(self) -> bool:
        return self.has_class("-visible")

    def chosen(self) -> str | None:
        if not self.visible or self.highlighted is None:
            return None
        return self.get_option_at_index(self.highlighted).id


class Composer(TextArea):
    DEFAULT_CSS = """
    Composer {
        height: auto;
        min-height: 3;
        max-height: 12;
        border: tall $primary-muted;
        &:focus { border: tall $primary; }
    }
    """
    BINDINGS = [
        Binding(keymap.SEND, "submit", N_("Send"), priority=True),
        # Priority, as Enter: run as the key arrives (see `action_newline`).
        *(Binding(key, "newline", N_("Newline"), show=False, priority=True) for key in keymap.NEWLINE),
        Binding("tab", "complete", N_("Complete"), show=False),
    ]

    def __init__(self, completions: SlashCompletions, **kwargs: object) -> None:
        super().__init__(soft_wrap=True, show_line_numbers=False, tab_behavior="focus", **kwargs)  # type: ignore[arg-type]
        self.completions = completions
        self.prompt_history = PromptHistory()
        self._pastes: dict[str, str] = {}

    def on_mount(self) -> None:
        self.placeholder = literal(_("Ask anything · Enter sends · Ctrl+J newline · / for commands"))
        self._replay(take_typed())

    def _replay(self, typed: str) -> None:
        """Keys typed while the chat started, as if typed now: text, Enter sends, Ctrl+J and
        Backspace edit; other keys (arrows, Tab) are dropped."""
        # Without the empty pieces `split` leaves: inserting nothing is a whole edit of the text area.
        for key in filter(None, _TYPED_KEYS.split(typed)):
            if key == "\r":
                self._submit()
            elif key == "\n":
                self._newline()
            elif key in ("\x7f", "\x08"):
                self.action_delete_left()
            else:
                self.insert(printable(key).replace("\t", "").replace("\n", ""))

    async def on_paste(self, event: events.Paste) -> None:
        # Terminals send a pasted line break as Enter's CR (tmux, xterm): lines, not one long line.
        text = event.text = event.text.replace("\r\n", "\n").replace("\r", "\n")
        if len(text) < LARGE_PASTE_CHARS and text.count("\n") < LARGE_PASTE_LINES:
            return  # TextArea's own handler, which runs after this one, inserts it
        event.prevent_default()
        lines = line_count(text)
        placeholder = ngettext(
            "[Pasted text #{n}: {lines} line]", "[Pasted text #{n}: {lines} lines]", lines
        ).format(n=len(self._pastes) + 1, lines=lines)
        self._pastes[placeholder] = text
        self.insert(placeholder)

    def expanded_text(self) -> str:
        """The prompt with every large paste back in place of its placeholder."""
        text = self.text
        for placeholder, pasted in self._pastes.items():
            text = text.replace(placeholder, pasted)
        return text

    def action_submit(self) -> None:
        # Enter is a priority binding: the app runs it as the key arrives, while keys typed just
        # before it (a burst: typed ahead, or sent by tmux) may still wait in this widget's queue.
        self.call_later(self._submit)

    def _submit(self) -> None:
        chosen = self.completions.chosen()
        if chosen is not None and self.text != chosen:
            self.load_text(chosen)
        if not self.text.strip():
            return
        text = self.expanded_text()
        if keeps(text):
            self.prompt_history.add(text)
        self._pastes.clear()
        self.load_text("")
        self.post_message(PromptSubmitted(text))

    def action_newline(self) -> None:
        # Put in after the keys already waiting in this widget's queue and before those behind:
        # as a plain binding it ran once its key had bubbled up to the app, after the letter tmux
        # sends with Ctrl+J in one read was typed (`hellox⏎ world` for `hello⏎x world`).
        self.call_later(self._newline)

    def _newline(self) -> None:
        self.insert("\n")

    def action_complete(self) -> None:
        chosen = self.completions.chosen()
        if chosen is not None:
            self.load_text(chosen)
            self.move_cursor(self.document.end)

    def action_cursor_up(self, select: bool = False) -> None:
        if self.completions.visible and not select:
            self.completions.action_cursor_up()
        elif not select and not self.text and (queued := self._queued()) is not None and queued.prompts:
            self._recall(queued.take_last())
        elif not select and self.cursor_location[0] == 0:
            self._recall(self.prompt_history.previous(self.text))
        else:
            super().action_cursor_up(select)

    def action_cursor_down(self, select: bool = False) -> None:
        if self.completions.visible and not select:
            self.completions.action_cursor_down()
        elif not select and self.cursor_location[0] == self.document.line_count - 1:
            self._recall(self.prompt_history.next())
        else:
            super().action_cursor_down(select)

    def _queued(self) -> QueuedPrompts | None:
        """The prompts waiting for the running turn, above this composer."""
        found = self.screen.query(QueuedPrompts)
        return found.first() if found else None

    def _recall(self, prompt: str | None) -> None:
        if prompt is not None:
            self.load_text(prompt)
            self.move_cursor(self.document.end)

    async def on_text_area_changed(self, event: TextArea.Changed) -> None:
        commands = slash.matching(self.text)
        if not self.completions.is_attached:
            if not commands:
                return
            # Mounted above the composer with the first slash typed: the chat's first frame does
            # not wait for a hidden list (its widget, its CSS, its layout).
            await self.parent.mount(self.completions, before=self)  # type: ignore[union-attr]
        self.completions.show(commands)

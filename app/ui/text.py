"""The one path from text to the screen: everything the interface shows is made here, literally.

Textual reads a `str` given to a widget, a label, a title or a notification as content markup:
`[/x]` raises (the chat dies), `[b]` styles, `[@click=app.quit]` makes a click quit. Text from
models, tools, MCP servers, providers and session files may hold any of these, and our own
translated words are text we did not type either. So nothing reaches Textual as a str:

- `literal` (and `styled`, `literal_text`, `matched`) make `Content` or a Rich `Text`, which
  Textual never reads as markup, from `app.terminal.printable` text (no escape sequences, control
  characters or bidi controls);
- `LiteralApp` is the apps' base: its `notify` (where a screen's or a widget's `notify` ends too)
  shows message and title as the characters they are.

`tests/functional/test_literal_hygiene.py` holds `app/ui` to this path.
"""

from __future__ import annotations

from typing import Any, TypeVar

from rich.text import Text
from textual.app import App
from textual.binding import Binding
from textual.content import Content
from textual.events import DeliveryComplete
from textual.fuzzy import Matcher
from textual.notifications import SeverityLevel

from app.i18n import _
from app.terminal import printable, printable_line
from app.ui import keymap, wide_cells

wide_cells.install()  # the apps' base is here: every screen they show keeps wide characters whole

ReturnType = TypeVar("ReturnType")


def literal(text: str) -> Content:
    """`text` exactly as typed: no markup, no escape sequences."""
    return Content(printable(text))


def styled(text: str, style: str) -> Content:
    """`text` literally, in `style` (ours: `bold`, a theme variable)."""
    return Content.styled(printable(text), style)


def literal_text(text: str, style: str = "", **options: Any) -> Text:
    """`text` literally as a Rich `Text`, for what takes no `Content` (a table's cells and column
    labels); `options` are `Text`'s (justify, overflow…)."""
    return Text(printable(text), style=style, **options)


def matched(matcher: Matcher, text: str) -> Content:
    """`text` literally, with the characters the palette's `matcher` found marked as Textual marks
    them (its own `Matcher.highlight` reads the text as markup)."""
    content = literal(text)
    score, offsets = matcher.fuzzy_search.match(matcher.query, content.plain)
    for offset in offsets if score else ():
        if not content.plain[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content


def line_count(text: str) -> int:
    """The lines of `text` as `clip_lines` cuts them: at "\n", a final one starting no line."""
    return text.count("\n") + (not text.endswith("\n"))


def clip_lines(text: str, lines: int) -> tuple[str, bool]:
    """The first `lines` lines of `text`, and whether anything was cut."""
    parts = text.split("\n", lines)
    if len(parts) <= lines:
        return text, False
    return "\n".join(parts[:lines]), True


class LiteralApp(App[ReturnType]):
    """An app whose every notification shows its text literally (and where Escape closes Textual's
    keys panel: both apps' changes to what Textual itself shows live here)."""

    # Before any screen's Escape: the keys panel (the palette's "Keys") is what is on top.
    BINDINGS = [Binding(keymap.CLOSE, "hide_keys_panel", show=False, priority=True)]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Off (and out of the footer) while no keys panel shows: Escape goes on to the screen.
        if action == "hide_keys_panel":
            return bool(self.screen.query("HelpPanel"))
        return super().check_action(action, parameters)

    def action_hide_keys_panel(self) -> None:
        self.action_hide_help_panel()
        self.refresh_bindings()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """`message` and `title` as the characters they are, the title on one line. `markup` is
        ignored: a widget's `notify` passes Textual's default (True) on to here."""
        super().notify(
            printable(message), title=printable_line(title), severity=severity, timeout=timeout, markup=False
        )

    def action_help_quit(self) -> None:
        """Textual's hint for a Ctrl+C that does not quit, in our words (its own is markup)."""
        for key, active in self.active_bindings.items():
            if active.binding.action in ("quit", "app.quit"):
                self.notify(_("Press {key} to quit the app").format(key=key), title=_("Do you want to quit?"))
                return

    def action_command_palette(self) -> None:
        """Textual's palette, its prompt in our words (its own is English whatever the language)."""
        from textual.command import CommandPalette

        if self.use_command_palette and not CommandPalette.is_open(self):
            self.push_screen(CommandPalette(placeholder=_("Search for commands…"), id="--command-palette"))

    def on_delivery_complete(self, event: DeliveryComplete) -> None:
        """Textual's note for a saved screenshot, in our words (its own is markup around the path)."""
        if event.name != "screenshot":
            return
        event.prevent_default()
        if event.path is None:
            self.notify(_("Saved the screenshot"), title=_("Screenshot"))
        else:
            self.notify(_("Saved the screenshot to {path}").format(path=event.path), title=_("Screenshot"))

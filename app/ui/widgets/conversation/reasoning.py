"""The model's reasoning: one line while collapsed, the whole text when expanded (click or Enter)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from app.i18n import N_, _
from app.ui.text import literal


class Reasoning(Vertical, can_focus=True):
    DEFAULT_CSS = """
    Reasoning {
        height: auto;
        color: $text-muted;
        padding: 0 1;
        & > .title { text-style: italic; }
        & > .body { display: none; padding-left: 2; }
        &.-expanded > .body { display: block; }
        &:focus > .title { text-style: italic reverse; }
    }
    """
    BINDINGS = [("enter", "toggle", N_("Expand"))]

    def __init__(self, text: str, *, expanded: bool, on_toggle: object = None) -> None:
        super().__init__(classes="-expanded" if expanded else "")
        self._text = text
        self._on_toggle = on_toggle

    def compose(self) -> ComposeResult:
        yield Static(self._title(), classes="title")
        yield Static(literal(self._text), classes="body")

    def _title(self) -> Content:
        marker = "▼" if self.has_class("-expanded") else "▶"
        return literal(_("{marker} Reasoning ({count} characters)").format(marker=marker, count=len(self._text)))

    def set_text(self, text: str) -> None:
        self._text = text
        if self.is_mounted:
            self.query_one(".title", Static).update(self._title())
            self.query_one(".body", Static).update(literal(text))

    def on_click(self) -> None:
        self.action_toggle()

    def action_toggle(self) -> None:
        self.toggle_class("-expanded")
        self.query_one(".title", Static).update(self._title())
        if callable(self._on_toggle):
            self._on_toggle(self.has_class("-expanded"))

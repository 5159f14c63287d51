"""What every modal of the app does alike: Escape, or a click outside the dialog, closes it with
None (as the command palette does)."""

from __future__ import annotations

from typing import ClassVar, TypeVar

from textual.binding import Binding, BindingType
from textual.events import Click
from textual.screen import ModalScreen

ResultT = TypeVar("ResultT")


class ClosableModal(ModalScreen[ResultT | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", show=False)]

    def on_click(self, event: Click) -> None:
        if event.widget is self:
            self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)

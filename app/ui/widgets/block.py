"""A conversation block: the display state of one thing shown, kept while its widget is unmounted.

The conversation mounts only a window of blocks; a block's widget is rebuilt from its state when
the user scrolls back to it, so an expanded list or a finished tool call looks the same again.
"""

from __future__ import annotations

from textual.widget import Widget

from app.i18n import ngettext


class Block:
    widget: Widget | None = None
    expanded: bool = False

    @property
    def expandable(self) -> bool:
        return True

    def build(self) -> Widget:
        """A fresh widget showing this block's current state."""
        raise NotImplementedError

    def refresh_widget(self) -> None:
        """Show a changed state: the mounted widget is updated in place, if there is one."""
        widget = self.widget
        if widget is not None and widget.is_mounted:
            widget.refresh_from_block()  # type: ignore[attr-defined]


class ExpandsOnClick:
    """For a block's widget: Enter or a click flips the block's `expanded` and redraws. The state
    lives on the block, so it survives the widget being unmounted and built again."""

    block: Block

    def on_click(self) -> None:
        self.action_toggle()

    def action_toggle(self) -> None:
        if self.block.expandable:
            self.block.expanded = not self.block.expanded
            self.refresh_from_block()  # type: ignore[attr-defined]


def expand_hint(hidden: int) -> str:
    """The line under a collapsed text saying how many of its lines are hidden."""
    return ngettext(
        "… {n} more line (Enter or click to expand)", "… {n} more lines (Enter or click to expand)", hidden
    ).format(n=hidden)

"""A conversation block: the display state of one thing shown, kept while its widget is unmounted.

The conversation mounts only a window of blocks; a block's widget is rebuilt from its state when
the user scrolls back to it, so an expanded list or a finished tool call looks the same again.
"""

from __future__ import annotations

from textual.content import Content
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from app.i18n import ngettext
from app.ui.text import literal


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


class PlainBackground:
    """For a container that draws nothing but its background: its lines are painted from one line
    of each kind (top padding, content, bottom padding) instead of one by one.

    Textual paints every line of a widget again whenever its size changes, and while a reply
    streams the conversation's containers change size on every frame: much of each paint went
    on their blank lines, keys typed meanwhile waiting. A border, an outline, a hatch, a keyline
    or content of its own makes the lines differ: such a container is painted line by line."""

    def render_lines(self, crop: Region) -> list[Strip]:
        widget: Widget = self  # type: ignore[assignment]
        if crop.height <= 1 or not _draws_only_background(widget):
            return super().render_lines(crop)  # type: ignore[misc]
        top, _right, bottom, _left = widget.styles.gutter
        content_end = widget.region.height - bottom
        kinds: dict[int, Strip] = {}
        lines = []
        for y in range(crop.y, crop.bottom):
            kind = 0 if y < top else 2 if y >= content_end else 1
            line = kinds.get(kind)
            if line is None:
                (line,) = super().render_lines(Region(crop.x, y, crop.width, 1))  # type: ignore[misc]
                kinds[kind] = line
            lines.append(line)
        return lines


def _draws_only_background(widget: Widget) -> bool:
    styles = widget.styles
    return (
        type(widget).render is Widget.render
        and all(edge in ("", "none") for edge, _color in styles.border)
        and all(edge in ("", "none") for edge, _color in styles.outline)
        and (not styles.has_rule("hatch") or styles.hatch == "none")
        and styles.keyline[0] == "none"
    )


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


def expand_hint(hidden: int) -> Content:
    """The line under a collapsed text saying how many of its lines are hidden."""
    return literal(
        ngettext(
            "… {n} more line (Enter or click to expand)", "… {n} more lines (Enter or click to expand)", hidden
        ).format(n=hidden)
    )

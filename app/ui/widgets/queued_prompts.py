"""The prompts sent while a turn runs, waiting above the composer for the turn to end.

A prompt is never thrown away because a turn is running (issue 24): it is queued here, shown, and
sent when the turn ends, in the order typed. Up in an empty composer takes the last one back to
edit it (or to delete it); a cancelled turn keeps the queue.
"""

from __future__ import annotations

from textual.widgets import Static

from app.i18n import _, ngettext
from app.terminal import first_line
from app.ui.text import literal


class QueuedPrompts(Static):
    DEFAULT_CSS = """
    QueuedPrompts {
        display: none;
        height: auto;
        max-height: 8;
        padding: 0 1;
        color: $text-muted;
        &.-visible { display: block; }
    }
    """

    WIDTH = 100
    """Cells of a prompt's first line shown."""

    def __init__(self, **kwargs: str) -> None:
        super().__init__(**kwargs)
        self.prompts: list[str] = []

    def add(self, prompt: str) -> None:
        self.prompts.append(prompt)
        self._show()

    def take_next(self) -> str | None:
        """The oldest prompt, out of the queue (to be sent)."""
        return self._taken(0)

    def take_last(self) -> str | None:
        """The newest prompt, out of the queue (back to the composer)."""
        return self._taken(-1)

    def _taken(self, at: int) -> str | None:
        if not self.prompts:
            return None
        prompt = self.prompts.pop(at)
        self._show()
        return prompt

    def _show(self) -> None:
        prompts = self.prompts
        self.set_class(bool(prompts), "-visible")
        if not prompts:
            self.update("")
            return
        lines = [
            ngettext(
                "{count} prompt queued: sent when the turn ends · ↑ in an empty prompt edits the last",
                "{count} prompts queued: sent in order when the turn ends · ↑ in an empty prompt edits the last",
                len(prompts),
            ).format(count=len(prompts))
        ]
        lines += [_("› {prompt}").format(prompt=first_line(prompt, self.WIDTH)) for prompt in prompts]
        self.update(literal("\n".join(lines)))

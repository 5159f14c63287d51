"""The footer, with binding descriptions translated when shown (bindings are declared with `N_`)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, FooterLabel

from app import i18n
from app.i18n import N_, _
from app.ui.text import literal

N_("palette")  # Textual's own label for the palette's key, translated with the others when shown


class LocalizedFooter(Footer):
    def __init__(self) -> None:
        super().__init__()
        self._composed_from: object = None

    def compose(self) -> ComposeResult:
        inputs = self._inputs()
        shown = False
        for widget in super().compose():
            shown = True
            if isinstance(widget, FooterKey):
                widget.description = _(widget.description) if widget.description else ""
                if widget.has_class("-grouped") and isinstance(widget.tooltip, str):
                    widget.tooltip = literal(_(widget.tooltip))  # a grouped key's own description
            elif isinstance(widget, FooterLabel):
                # A binding group's label (`Binding.Group`), given as the English text.
                widget = FooterLabel(literal(_(str(widget.content))))
            yield widget
        # Textual's footer shows nothing until the screen's bindings are ready; one built before
        # that must be built again, and one that shows nothing costs nothing to build again.
        self._composed_from = inputs if shown else None

    async def recompose(self) -> None:
        """Rebuild only when the keys shown would change. Textual rebuilds the footer whenever the
        screen's bindings may have changed (a focus moving, widgets mounted): each rebuild mounts
        every key again, and while the chat starts or resumes none of them changes what is shown."""
        if self.is_attached and self._composed_from is not None and self._inputs() == self._composed_from:
            return
        await super().recompose()

    def _inputs(self) -> object:
        """What `Footer.compose` reads (the shown keys, the palette's key, the style), as it would
        read it now, and the language the descriptions are shown in."""
        app = self.app
        active = self.screen.active_bindings
        palette = active.get(app.COMMAND_PALETTE_BINDING) if self.show_command_palette else None
        return (
            [
                (binding, enabled, tooltip, app.get_key_display(binding))
                for (_node, binding, enabled, tooltip) in active.values()
                if binding.show
            ],
            palette[1:] if palette is not None and app.ENABLE_COMMAND_PALETTE else None,
            self.compact,
            i18n.current_language(),
        )

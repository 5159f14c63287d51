"""One line under the composer: route and model, tool-update mode, sequence, tokens, retries."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from app.display import token_count
from app.i18n import _
from app.llm.routes import Route
from app.ui.text import literal, styled

OFFLINE_ROUTE = "offline/demo"


class Usage:
    """The status line's figures (a plain class: docs/decisions.md, *Plain classes*)."""

    __slots__ = ("last_in", "last_out", "total_in", "total_out", "cache_read", "retries", "sequence")

    def __init__(self) -> None:
        self.last_in = self.last_out = self.total_in = self.total_out = 0
        self.cache_read = self.retries = self.sequence = 0

    def count(self, item: object) -> None:
        """Fold one item of the view into the figures (live and on resume alike)."""
        from app.session.view_items import AssistantItem, HeaderItem, RetryItem, SummaryItem

        if isinstance(item, AssistantItem) and item.usage is not None:
            usage = item.usage
            self.last_in, self.last_out = usage.input, usage.output
            self.total_in += usage.input
            self.total_out += usage.output
            self.cache_read += usage.cache_read
        elif isinstance(item, RetryItem):
            self.retries += 1
        elif isinstance(item, SummaryItem):
            self.sequence = item.sequence
        elif isinstance(item, HeaderItem):
            self.sequence = item.header.sequence


class StatusLine(Static):
    DEFAULT_CSS = """
    StatusLine {
        height: 1;
        padding: 0 1;
        background: $panel;
        color: $text-muted;
    }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__("", **kwargs)  # type: ignore[arg-type]
        self.usage = Usage()
        self.route: Route | None = None
        self.read_only = False
        self._shown = Content("")

    def reset(self, usage: Usage) -> None:
        self.usage = usage
        self.show()

    def count(self, item: object) -> None:
        self.usage.count(item)
        self.show()

    def show(self) -> None:
        usage, route = self.usage, self.route
        parts: list[Content | str] = []
        if route is not None:
            if route.id == OFFLINE_ROUTE:
                parts.append(styled(_("offline demo model"), "bold $text-warning"))
            else:
                parts.append(styled(route.display_label, "bold"))
            parts.append(route.model)
            parts.append(route.tool_update)
        if self.read_only:
            parts.append(styled(_("read-only"), "bold $text-error"))
        parts.append(_("seq {n}").format(n=usage.sequence))
        parts.append(
            _("last ↑{input} ↓{output}").format(input=token_count(usage.last_in), output=token_count(usage.last_out))
        )
        parts.append(
            _("Σ ↑{input} ↓{output}").format(input=token_count(usage.total_in), output=token_count(usage.total_out))
        )
        parts.append(_("cache {n}").format(n=token_count(usage.cache_read)))
        parts.append(_("retries {n}").format(n=usage.retries))
        content: Content = Content(" · ").join(literal(part) if isinstance(part, str) else part for part in parts)
        if content.plain == self._shown.plain and content.spans == self._shown.spans:
            return  # the same line: no repaint (it is set again at every item and on resume)
        self._shown = content
        # One line high whatever it says: a new text needs no layout of the screen.
        self.update(content, layout=False)

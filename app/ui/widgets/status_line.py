"""One line under the composer: route and model, tool-update mode, sequence, tokens, the session's
estimated cost and cache-hit share on the current route, retries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.content import Content
from textual.widgets import Static

from app.display import money, token_count
from app.i18n import _
from app.llm.routes import Route
from app.ui.text import literal, styled

if TYPE_CHECKING:
    from app.report.cost import RouteTotals

OFFLINE_ROUTE = "offline/demo"


class Usage:
    """The status line's figures (a plain class: docs/decisions.md, *Plain classes*)."""

    __slots__ = ("last_in", "last_out", "total_in", "total_out", "retries", "sequence")

    def __init__(self) -> None:
        self.last_in = self.last_out = self.total_in = self.total_out = 0
        self.retries = self.sequence = 0

    def count(self, item: object) -> None:
        """Fold one item of the view into the figures (live and on resume alike)."""
        from app.session.view_items import AssistantItem, HeaderItem, RetryItem, SummaryItem

        if isinstance(item, AssistantItem) and item.usage is not None:
            usage = item.usage
            self.last_in, self.last_out = usage.input, usage.output
            self.total_in += usage.input
            self.total_out += usage.output
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
        self.cost: RouteTotals | None = None
        """The session's totals on the current route (None while they are worked out)."""
        self._shown = Content("")

    def reset(self, usage: Usage) -> None:
        self.usage = usage
        self.show()

    def count(self, item: object) -> None:
        self.usage.count(item)
        self.show()

    def show_cost(self, totals: RouteTotals | None) -> None:
        self.cost = totals
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
        parts += self._cost_parts()  # early: what the route costs is cut last on a narrow terminal
        parts.append(_("seq {n}").format(n=usage.sequence))
        parts.append(
            _("last ↑{input} ↓{output}").format(input=token_count(usage.last_in), output=token_count(usage.last_out))
        )
        parts.append(
            _("Σ ↑{input} ↓{output}").format(input=token_count(usage.total_in), output=token_count(usage.total_out))
        )
        parts.append(_("retries {n}").format(n=usage.retries))
        content: Content = Content(" · ").join(literal(part) if isinstance(part, str) else part for part in parts)
        if content.plain == self._shown.plain and content.spans == self._shown.spans:
            return  # the same line: no repaint (it is set again at every item and on resume)
        self._shown = content
        # One line high whatever it says: a new text needs no layout of the screen.
        self.update(content, layout=False)

    def _cost_parts(self) -> list[str]:
        """"≈ $0.042 · cache 78 %": nothing before the first request, "no price" for a route
        without one."""
        totals = self.cost
        if totals is None or not totals.requests:
            return []
        parts = [_("no price") if totals.cost is None else _("≈ {cost}").format(cost=money(totals.cost))]
        if totals.hit_share is not None:
            # TRANSLATORS: the share of the input tokens served from the prompt cache, e.g. "cache 78 %".
            parts.append(_("cache {percent} %").format(percent=round(totals.hit_share * 100)))
        return parts

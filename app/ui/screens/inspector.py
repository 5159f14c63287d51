"""The inspector screen: one request of a session, every route side by side (`Inspector`).

Over any app that shows a session (`app.ui.contract.SessionHost`): it reads the session view from
`source` (default: `app.view()`) and the routes from `routes` (default: the app's catalog), costs
them by `prices` (default: the genai-prices data alone; the chat passes its config's), and builds
the request's report with the report model (`inspect_requests`, only that request and the
one before it). When the app has a `session_advanced` signal (the chat publishes it after every
logged event), the screen follows
the session live: the report is read again when a request is logged or the session is replaced,
and while it follows the latest request it moves to each new one.

Keys: previous/next request, the previous/next page of routes (Left/Right, or a click on the
pager's arrows), the latest request (and follow it), the wire body, the diff against the previous
request, the route chooser (which routes are paged through), Escape closes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Checkbox

from app.i18n import N_, _
from app.llm.routes import Route
from app.report.model import RequestReport, inspect_requests
from app.report.prices import PriceBook
from app.session.view import SessionView
from app.ui import keymap
from app.ui.contract import session_host
from app.ui.footer import LocalizedFooter
from app.ui.screens.tools import SourceSwitch
from app.ui.text import literal
from app.ui.widgets.inspector import Inspector, InspectorMode

ViewSource = Callable[[], SessionView | None]


class RouteChooser(VerticalScroll, can_focus=False):
    """Which routes of the catalog the inspector shows: a switch per route (Space, Enter or a click
    toggles one; the arrows move between them)."""

    BINDINGS = [
        Binding("down", "app.focus_next", show=False),
        Binding("up", "app.focus_previous", show=False),
    ]

    def __init__(self, routes: Sequence[Route], shown: set[str]) -> None:
        super().__init__(id="route-chooser")
        self._switches = [
            SourceSwitch(literal(route.id), route.id in shown, name=route.id) for route in routes
        ]

    def compose(self) -> ComposeResult:
        yield from self._switches

    @property
    def chosen(self) -> list[str]:
        return [switch.name for switch in self._switches if switch.value and switch.name]

    def focus_first(self) -> None:
        self._switches[0].focus()


# Each pair is one entry in the footer (`LocalizedFooter` translates the group's label): seven
# entries fit in 120 columns with the app's, nine did not (Escape fell off the end).
ROUTE_PAGE = Binding.Group(N_("Route page"), compact=True)
REQUEST = Binding.Group(N_("Requests"))


class InspectorScreen(Screen[None]):
    CSS_PATH = "inspector.tcss"
    BINDINGS = [
        Binding(keymap.INSPECT_PREVIOUS, "previous", N_("Previous request"), group=REQUEST),
        Binding(keymap.INSPECT_NEXT, "next", N_("Next request"), group=REQUEST),
        # Priority: a focused column, a scrolling container, would take the arrows for itself.
        Binding(keymap.INSPECT_EARLIER_ROUTES, "page_routes(-1)", N_("Earlier routes"), priority=True, group=ROUTE_PAGE),
        Binding(keymap.INSPECT_LATER_ROUTES, "page_routes(1)", N_("Later routes"), priority=True, group=ROUTE_PAGE),
        Binding(keymap.INSPECT_ROUTES, "choose_routes", N_("Routes shown")),
        Binding(keymap.INSPECT_LATEST, "latest", N_("Follow the latest")),
        Binding(keymap.INSPECT_BODY, "mode('body')", N_("Wire body")),
        Binding(keymap.INSPECT_DIFF, "mode('diff')", N_("Diff")),
        Binding(keymap.CLOSE, "close", N_("Close")),
    ]

    def __init__(
        self,
        request: int | None = None,
        follow_latest: bool | None = None,
        *,
        source: ViewSource | None = None,
        routes: Sequence[Route] | None = None,
        shown: Sequence[str] | None = None,
        prices: PriceBook | None = None,
    ) -> None:
        """`request` is a request number (1-based; None: the latest); `follow_latest` defaults to
        following when no request is named. `shown` limits the routes shown at first. `prices`
        costs each route (None: the genai-prices data alone, without [prices] tables)."""
        super().__init__()
        self.prices = prices if prices is not None else PriceBook.of(None)
        self.request = request
        self.following = request is None if follow_latest is None else follow_latest
        self.mode = InspectorMode.SUMMARY
        self._source = source
        self._routes = tuple(routes) if routes is not None else None
        self._shown = list(shown) if shown is not None else None
        self._view: SessionView | None = None
        self._seen_requests = -1
        self.report: RequestReport | None = None
        """The report shown (None: the session has no request yet)."""

    # --- what the screen reads

    @property
    def routes(self) -> tuple[Route, ...]:
        if self._routes is None:
            self._routes = tuple(session_host(self.app).catalog)
        return self._routes

    def _read_view(self) -> SessionView | None:
        source = self._source or session_host(self.app).view
        return source()

    @property
    def inspector(self) -> Inspector:
        return self.query_one(Inspector)

    @property
    def shown_routes(self) -> list[str]:
        return self.query_one(RouteChooser).chosen

    # --- building

    def compose(self) -> ComposeResult:
        shown = set(self._shown) if self._shown is not None else {route.id for route in self.routes}
        chooser = RouteChooser(self.routes, shown)
        chooser.border_title = literal(_("Routes shown"))
        yield chooser
        yield Inspector(self.routes, self.prices, id="inspector")
        yield LocalizedFooter()

    def on_mount(self) -> None:
        self.inspector.show_routes(self.shown_routes)
        self._refresh(force=True)
        signal = session_host(self.app).session_advanced
        if signal is not None:
            signal.subscribe(self, self._session_advanced)

    def on_unmount(self) -> None:
        signal = session_host(self.app).session_advanced
        if signal is not None:
            signal.unsubscribe(self)

    async def _session_advanced(self, event: Any) -> None:
        if event is None:
            # The whole session was replaced (another one resumed, the language switched): build
            # the screen's words again, keeping the routes chosen.
            self._shown = self.shown_routes
            await self.recompose()
            self.inspector.show_routes(self.shown_routes)
        self._refresh(force=event is None)

    def _refresh(self, *, force: bool = False) -> None:
        """Read the view again; rebuild the report when a request was logged (or `force`)."""
        view = self._read_view()
        requests = view.requests if view is not None else []
        if not force and view is self._view and len(requests) == self._seen_requests:
            return
        self._view, self._seen_requests = view, len(requests)
        if not requests:
            # The request asked for stays asked for: the session may still be loading.
            self.report = None
            self._show(rebuild=False)
            return
        if self.following or self.request is None:
            self.request = len(requests)
        else:
            self.request = min(max(self.request, 1), len(requests))
        self._show()

    def _show(self, *, rebuild: bool = True) -> None:
        view = self._view
        total = len(view.requests) if view is not None else 0
        if rebuild and self.request is not None and view is not None:
            (self.report,) = inspect_requests(view.requests, self.routes, only=self.request)
        self.inspector.show(self.report, total, self.mode, following=self.following)

    # --- actions

    def _go(self, number: int) -> None:
        total = self._seen_requests
        if total <= 0:
            return
        self.request = min(max(number, 1), total)
        self.following = self.request == total and self._live
        self._show()

    @property
    def _live(self) -> bool:
        return session_host(self.app).session_advanced is not None

    def action_previous(self) -> None:
        if self.request is not None and self.request > 1:
            self._go(self.request - 1)

    def action_next(self) -> None:
        if self.request is not None:
            self._go(self.request + 1)

    def action_latest(self) -> None:
        self._go(self._seen_requests)

    def action_page_routes(self, step: int) -> None:
        self.inspector.page(step)

    def action_mode(self, mode: str) -> None:
        """The wire body and the diff are toggles: the same key again goes back to the summary."""
        chosen = InspectorMode(mode)
        self.mode = InspectorMode.SUMMARY if self.mode is chosen else chosen
        self._show(rebuild=False)

    def action_choose_routes(self) -> None:
        chooser = self.query_one(RouteChooser)
        chooser.toggle_class("-open")
        if chooser.has_class("-open"):
            chooser.focus_first()
        else:
            self.set_focus(None)

    def action_close(self) -> None:
        chooser = self.query_one(RouteChooser)
        if chooser.has_class("-open"):
            self.action_choose_routes()
        else:
            self.dismiss(None)

    @on(Checkbox.Changed)
    def _routes_chosen(self) -> None:
        self.inspector.show_routes(self.shown_routes)

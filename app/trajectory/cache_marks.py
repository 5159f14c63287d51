"""Which requests broke the prompt cache of the route that ran them: the trajectory's marks, its
detail line and its "cache breaks" filter (issue 27 item 4).

A request's diagnostic needs the previous request's body on the same route, so it is one report
step (`app.report.model.report_after`) per request, computed for the rows drawn (`CacheMarks`) or,
for the filter, in one pass over the requests (`cache_breaks`, a worker thread) — never for the
whole session before the trajectory is shown. A request is marked when its route missed its cache
for a reason other than the initial write; a route the catalog does not know marks nothing.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence

from typing import TYPE_CHECKING

from app.report.cache import CacheCause, CacheDiagnostic
from app.session.view import ModelRequest
from app.trajectory.entries import Entry

if TYPE_CHECKING:
    from app.llm.deepseek.body import WireRequest
    from app.llm.routes import Route
    from app.report.model import RouteReport

KNOWN = 4096
"""Diagnostics kept: far more than a screen's rows, a few hundred kilobytes at most."""
BODIES = 8
"""Wire bodies kept (each is a whole request): the previous row's, to compute the next one's."""


def is_break(diagnostic: CacheDiagnostic | None) -> bool:
    return diagnostic is not None and diagnostic.cause not in (None, CacheCause.INITIAL)


class CacheMarks:
    """The diagnostic of each request on the route that ran it, computed when a row asks and kept
    (UI thread only: a lazy view is not shared across threads)."""

    def __init__(self, requests: Sequence[ModelRequest], routes: Iterable[Route]) -> None:
        self._requests = requests
        self._routes = {route.id: route for route in routes}
        self._known: OrderedDict[int, CacheDiagnostic | None] = OrderedDict()
        self._bodies: OrderedDict[tuple[int, str], WireRequest | None] = OrderedDict()

    def broken(self, entry: Entry) -> CacheDiagnostic | None:
        """The diagnostic of `entry`'s request when its cache broke, else None."""
        return self.broken_request(entry.request) if entry.request is not None else None

    def broken_request(self, request: ModelRequest) -> CacheDiagnostic | None:
        diagnostic = self.of(request)
        return diagnostic if is_break(diagnostic) else None

    def of(self, request: ModelRequest) -> CacheDiagnostic | None:
        """None: the route that ran it is not in the catalog, or its body was never sendable."""
        if request.index in self._known:
            self._known.move_to_end(request.index)
            return self._known[request.index]
        route = self._routes.get(request.route)
        diagnostic = None
        if route is not None:
            earlier = self._requests[request.index - 2] if request.index > 1 else None
            diagnostic = self._report(request, route, earlier).cache
        self._known[request.index] = diagnostic
        if len(self._known) > KNOWN:
            self._known.popitem(last=False)
        return diagnostic

    def _report(self, request: ModelRequest, route: Route, earlier: ModelRequest | None) -> RouteReport:
        from app.report.model import report_after  # with the wire bodies' modules, when a row asks

        previous = None
        if earlier is not None:
            key = (earlier.index, route.id)
            if key not in self._bodies:
                self._bodies[key] = report_after(earlier, route, None, None).wire
            previous = self._bodies[key]
        report = report_after(request, route, earlier, previous)
        self._bodies[(request.index, route.id)] = report.wire
        while len(self._bodies) > BODIES:
            self._bodies.popitem(last=False)
        return report


def cache_breaks(
    requests: Iterable[ModelRequest], routes: Iterable[Route], progress: Callable[[int, int], None], total: int
) -> list[int]:
    """The seqs of the requests whose cache broke, in one pass (a worker thread, with requests of
    its own): the previous request's body is kept for the route that ran it, so a session on one
    route costs one report step per request."""
    from app.report.model import report_after

    by_id = {route.id: route for route in routes}
    found: list[int] = []
    earlier: ModelRequest | None = None
    bodies: dict[str, WireRequest | None] = {}
    for done, request in enumerate(requests, 1):
        route = by_id.get(request.route)
        if route is not None:
            if earlier is not None and route.id not in bodies:
                bodies[route.id] = report_after(earlier, route, None, None).wire
            report = report_after(request, route, earlier, bodies.get(route.id))
            if is_break(report.cache):
                found.append(request.seq)
            bodies = {route.id: report.wire}
        else:
            bodies = {}
        earlier = request
        progress(done, total)
    return found

"""Which requests broke the prompt cache of the route that ran them: the trajectory's marks, its
detail line and its "cache breaks" filter (issue 27 item 4).

A request's diagnostic needs the previous request's body on the same route: a report step
(`app.report.model.report_after`) for each, tens of milliseconds on a long history, too slow for a
row drawn at each key. So a row is drawn with what is known (`CacheMarks.broken`), the rows drawn
without it are wanted, and a worker thread works them out (`Diagnoses.of`, through a session of
its own: a lazy view is not shared across threads) and hands them back to be drawn again. The
filter needs every request's: `cache_breaks`, one pass. Nothing is computed for the whole session
before the trajectory is shown. A request is marked when its route missed its cache for a reason
other than the initial write; a route the catalog does not know marks nothing.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from app.report.cache import CacheCause, CacheDiagnostic
from app.session.view import ModelRequest
from app.trajectory.entries import Entry

if TYPE_CHECKING:
    from app.llm.routes import Route
    from app.report.model import RouteReport

KNOWN = 4096
"""Diagnostics kept: far more than a screen's rows, a few hundred kilobytes at most."""
WANTED = 256
"""Requests waiting to be worked out, the latest drawn first: rows scrolled past are dropped."""
BODIES = 2
"""Reports kept (each holds a whole wire body, megabytes on a long history): the previous
request's, to work out the next one."""


def is_break(diagnostic: CacheDiagnostic | None) -> bool:
    return diagnostic is not None and diagnostic.cause not in (None, CacheCause.INITIAL)


class CacheMarks:
    """What the rows know of their requests' cache breaks (UI thread only): the diagnostics worked
    out so far, and the requests drawn before theirs was (`take_wanted`)."""

    def __init__(self, wanted: Callable[[], None]) -> None:
        """`wanted()` is called each time a row wants a diagnostic not known nor wanted yet."""
        self._known: OrderedDict[int, CacheDiagnostic | None] = OrderedDict()
        self._wanted: OrderedDict[int, None] = OrderedDict()
        self._on_wanted = wanted

    def broken(self, entry: Entry) -> CacheDiagnostic | None:
        """The diagnostic of `entry`'s request when its cache broke, else None (also while it is
        being worked out)."""
        return self.broken_request(entry.request) if entry.request is not None else None

    def broken_request(self, request: ModelRequest) -> CacheDiagnostic | None:
        index = request.index
        if index in self._known:
            self._known.move_to_end(index)
            diagnostic = self._known[index]
            return diagnostic if is_break(diagnostic) else None
        if index not in self._wanted:
            self._on_wanted()
        self._wanted[index] = None
        self._wanted.move_to_end(index)
        while len(self._wanted) > WANTED:
            self._wanted.popitem(last=False)
        return None

    @property
    def waiting(self) -> bool:
        return bool(self._wanted)

    def take_wanted(self) -> list[int]:
        """The request indexes to work out, in log order (the next ones can reuse the bodies)."""
        wanted = sorted(self._wanted)
        self._wanted.clear()
        return wanted

    def know(self, diagnoses: dict[int, CacheDiagnostic | None]) -> None:
        for index, diagnostic in diagnoses.items():
            self._known[index] = diagnostic
            self._known.move_to_end(index)
        while len(self._known) > KNOWN:
            self._known.popitem(last=False)


class Diagnoses:
    """Works out the diagnostic of a request on the route that ran it (a worker thread, with
    requests of its own)."""

    def __init__(self, requests: Sequence[ModelRequest], routes: Iterable[Route]) -> None:
        self._requests = requests
        self._routes = {route.id: route for route in routes}
        self._reports: OrderedDict[tuple[int, str], RouteReport] = OrderedDict()

    def __len__(self) -> int:
        return len(self._requests)

    def of(self, index: int) -> tuple[int, CacheDiagnostic | None]:
        """Request `index` (from 1)'s seq and diagnostic; None: its route is not in the catalog, or
        its body was never sendable."""
        from app.report.model import report_after  # with the wire bodies' modules, when first asked

        request = self._requests[index - 1]
        route = self._routes.get(request.route)
        if route is None:
            return request.seq, None
        earlier = self._requests[index - 2] if index > 1 else None
        previous = None
        if earlier is not None:
            key = (earlier.index, route.id)
            if key not in self._reports:
                self._reports[key] = report_after(earlier, route, None, None)
            previous = self._reports[key]
        report = report_after(request, route, earlier, previous)
        self._reports[(request.index, route.id)] = report
        while len(self._reports) > BODIES:
            self._reports.popitem(last=False)
        return request.seq, report.cache


def cache_breaks(
    requests: Iterable[ModelRequest], routes: Iterable[Route], progress: Callable[[int, int], None], total: int
) -> dict[int, tuple[int, CacheDiagnostic]]:
    """Each request whose cache broke, by seq: its index and diagnostic; in one pass (a worker
    thread, with requests of its own): the previous request's body is kept for the route that ran
    it, so a session on one route costs one report step per request."""
    from app.report.model import report_after

    by_id = {route.id: route for route in routes}
    found: dict[int, tuple[int, CacheDiagnostic]] = {}
    earlier: ModelRequest | None = None
    reports: dict[str, RouteReport] = {}
    for done, request in enumerate(requests, 1):
        route = by_id.get(request.route)
        if route is not None:
            if earlier is not None and route.id not in reports:
                reports[route.id] = report_after(earlier, route, None, None)
            report = report_after(request, route, earlier, reports.get(route.id))
            if report.cache is not None and is_break(report.cache):
                found[request.seq] = (request.index, report.cache)
            reports = {route.id: report}
        else:
            reports = {}
        earlier = request
        progress(done, total)
    return found

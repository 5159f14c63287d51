"""What a session costs on each route: every request's cache diagnostic summed per route (by the
one-pass scan, `app.report.cache_scan`), the estimated tokens calibrated against the usage the
route that ran recorded, and priced (docs/cost.md). One model for `toolscope cost`, the inspector, the status line and the exports.

Tokens per request and route: on the route that ran the request, the recorded usage (`input`, its
`cacheRead` part); elsewhere the diagnostic's estimate times the session's calibration factor (the
recorded input of the requests that ran, over their estimate). A request's output tokens are the
recorded ones on every route: the answer is the same whichever route is priced.

Money: uncached input at the input price, cached input at the cache-read price, output at the output
price; on an Anthropic-format route the uncached input is written to the cache, at the route's
5-minute or 1-hour write price (the estimate assumes a cache breakpoint at the end of each request,
as Claude Code sets), but for what the requests that ran there recorded they did not write (the
Anthropic wire reports its writes: `cacheWrite`), which is priced as input. A route with no known
price has tokens and no cost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import get_args

from app.llm.routes import Route, ToolUpdateMode
from app.report.cache import CacheCause, CacheDiagnostic
from app.report.cache_scan import scan_caches
from app.report.model import RequestReport, RouteReport, report_after
from app.report.prices import PriceBook, TokenCounts
from app.session.view import ModelRequest
from app.session.view_items import AssistantItem

MODES: tuple[ToolUpdateMode, ...] = get_args(ToolUpdateMode)


@dataclass(frozen=True, slots=True)
class Calibration:
    """How far the estimate was from what the route that ran recorded."""

    factor: float
    """Recorded input over estimated input, summed over the requests with a recorded usage (1.0
    when there are none)."""
    samples: int
    mean_error: float | None
    """The mean of |factor × estimate − recorded| / recorded over those requests (None: none)."""


@dataclass
class RouteTotals:
    """One route's sums over the session (tokens calibrated, see the module doc)."""

    route: Route
    requests: int = 0
    hits: int = 0
    breaks: Counter[CacheCause] = field(default_factory=Counter)
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    recorded_requests: int = 0
    """Requests whose tokens are the recorded usage (they ran on this route)."""
    recorded: tuple[int, int] = (0, 0)
    """Those requests' recorded (input, cached) tokens."""
    unwritten_tokens: int = 0
    """Of those requests' uncached input, what the provider recorded it did not write to its cache
    (the Anthropic wire reports its writes; where it does not, every uncached token is a write)."""
    estimated_recorded: tuple[int, int] = (0, 0)
    """The calibrated estimate of those requests' (input, cached) tokens, to show beside the record."""
    cost: Decimal | None = None

    @property
    def uncached_tokens(self) -> int:
        return self.input_tokens - self.cached_tokens

    @property
    def hit_share(self) -> float | None:
        """The share of input tokens served from cache."""
        return self.cached_tokens / self.input_tokens if self.input_tokens else None


@dataclass(frozen=True, slots=True)
class CostSums:
    """What a scan sums on each route, before prices: `totals` (tokens calibrated, no cost), the
    calibration, and how many requests were scanned."""

    totals: tuple[RouteTotals, ...]
    calibration: Calibration
    requests: int


@dataclass(frozen=True, slots=True)
class SessionCost:
    routes: tuple[RouteTotals, ...]
    calibration: Calibration
    by_mode: dict[str, dict[ToolUpdateMode, Decimal | None]]
    """Per route id, what the session would cost on each tool-update mode its dialect allows."""
    prices: PriceBook
    requests: int
    """How many requests the session made."""

    @property
    def cheapest(self) -> RouteTotals | None:
        priced = [totals for totals in self.routes if totals.cost is not None]
        return min(priced, key=lambda totals: totals.cost) if priced else None  # type: ignore[arg-type, return-value]


def session_cost(requests: Iterable[ModelRequest], routes: Sequence[Route], prices: PriceBook) -> SessionCost:
    """The session's cost on every route in `routes`, and on every other tool-update mode of each:
    one scan of the requests, read once in order, for all of them."""
    every = with_other_modes(routes)
    return priced_cost(routes, scanned_sums(requests, every, measured=len(routes)), prices)


def with_other_modes(routes: Sequence[Route]) -> list[Route]:
    """`routes`, then each of them on every other tool-update mode its dialect can send."""
    return [*routes, *(replace(route, tool_update=mode) for mode in MODES for route in routes if _allows(route, mode))]


def scanned_sums(requests: Iterable[ModelRequest], routes: Sequence[Route], *, measured: int) -> CostSums:
    """The sums of one scan of `requests` on every route, calibrated by the first `measured`."""
    tally = CostTally(routes, None, measured=measured)
    for request, diagnostics in scan_caches(requests, routes):
        tally.add(request, diagnostics)
    return tally.sums()


def priced_cost(routes: Sequence[Route], sums: CostSums, prices: PriceBook) -> SessionCost:
    """`sums` (of `with_other_modes(routes)`) priced: `routes`' totals, and each route's cost on
    every mode."""
    totals = _priced(sums.totals, prices)
    by_mode: dict[str, dict[ToolUpdateMode, Decimal | None]] = {
        route.id: {route.tool_update: priced.cost} for route, priced in zip(routes, totals, strict=False)
    }
    for priced in totals[len(routes) :]:
        by_mode[priced.route.id][priced.route.tool_update] = priced.cost
    return SessionCost(tuple(totals[: len(routes)]), sums.calibration, by_mode, prices, sums.requests)


def _allows(route: Route, mode: ToolUpdateMode) -> bool:
    """A mode other than the route's own that its dialect can send."""
    return mode != route.tool_update and (route.dialect != "openai-sdk" or mode == "none")


class CostTally:
    """The session totals summed one request at a time: an export that writes each report as it is
    built sums them in the same pass (`counted`), and has the totals when it is done."""

    def __init__(self, routes: Sequence[Route], prices: PriceBook | None, *, measured: int | None = None) -> None:
        """`measured`: how many of the first routes calibrate the estimate (default: all);
        `prices`: None for a tally read only for its `sums`."""
        self.prices = prices
        self._measured = len(routes) if measured is None else measured
        self._totals = [RouteTotals(route) for route in routes]
        self._estimated = [[0, 0] for _ in routes]
        """Per route, the summed (input, cached) estimates of the requests it did not run."""
        self._beside = [[0, 0] for _ in routes]
        """Per route, the same of the requests it ran and recorded."""
        self._pairs: list[tuple[int, int]] = []
        """(estimated input, recorded input) of each request on the route that ran it."""
        self.requests = 0
        """How many requests were added."""

    def counted(self, reports: Iterable[RequestReport]) -> Iterator[RequestReport]:
        """`reports` (of these routes), each added as it passes."""
        for report in reports:
            self.add(report.request, tuple(item.cache for item in report.routes))
            yield report

    def add(self, request: ModelRequest, diagnostics: tuple[CacheDiagnostic | None, ...]) -> None:
        """One request's diagnostic on each route, in the routes' order."""
        self.requests += 1
        usage = request.outcome.usage if isinstance(request.outcome, AssistantItem) else None
        for index, cache in enumerate(diagnostics):
            sums = self._totals[index]
            if cache is None:
                continue
            _count(sums, cache)
            if usage is not None:
                sums.output_tokens += usage.output
            if usage is not None and request.route == sums.route.id:
                sums.recorded_requests += 1
                sums.input_tokens += usage.input
                sums.cached_tokens += usage.cache_read
                if usage.cache_write is not None:
                    sums.unwritten_tokens += max(usage.input - usage.cache_read - usage.cache_write, 0)
                if index < self._measured:
                    self._pairs.append((cache.tokens.input, usage.input))
                self._beside[index][0] += cache.tokens.input
                self._beside[index][1] += cache.tokens.cached
            else:
                self._estimated[index][0] += cache.tokens.input
                self._estimated[index][1] += cache.tokens.cached

    def sums(self) -> CostSums:
        """The totals so far, calibrated, without prices (copies: more requests may be added)."""
        calibration = _calibration(self._pairs)
        factor = calibration.factor
        totals = []
        for running, (input_tokens, cached_tokens), (recorded_input, recorded_cached) in zip(
            self._totals, self._estimated, self._beside, strict=True
        ):
            sums = replace(running, breaks=Counter(running.breaks), recorded=(running.input_tokens, running.cached_tokens))
            sums.input_tokens += round(factor * input_tokens)
            sums.cached_tokens += round(factor * cached_tokens)
            sums.estimated_recorded = (round(factor * recorded_input), round(factor * recorded_cached))
            totals.append(sums)
        return CostSums(tuple(totals), calibration, self.requests)

    def summed(self) -> tuple[list[RouteTotals], Calibration]:
        """The totals so far, calibrated and priced."""
        assert self.prices is not None
        sums = self.sums()
        return _priced(sums.totals, self.prices), sums.calibration

    def session_cost(self) -> SessionCost:
        """The totals as a `SessionCost` without the other tool-update modes (each would be
        another pass over the session)."""
        assert self.prices is not None
        totals, calibration = self.summed()
        return SessionCost(tuple(totals), calibration, {}, self.prices, self.requests)


class RunningCost:
    """One route's totals over a session's requests, added one at a time as they are logged (the
    status line): the previous request's body on the route is kept, so each costs one report step,
    and the session's estimates are calibrated against this route's own records."""

    def __init__(self, route: Route, prices: PriceBook) -> None:
        self.route = route
        self._tally = CostTally([route], prices)
        self._earlier: ModelRequest | None = None
        self._previous: RouteReport | None = None
        self.requests = 0
        """How many requests were added."""

    def add(self, request: ModelRequest) -> None:
        report = report_after(request, self.route, self._earlier, self._previous)
        self._earlier, self._previous = request, report
        self.requests += 1
        self._tally.add(request, (report.cache,))

    def totals(self) -> RouteTotals:
        (totals,), _calibration = self._tally.summed()
        return totals


def _count(sums: RouteTotals, cache: CacheDiagnostic) -> None:
    sums.requests += 1
    if cache.hit:
        sums.hits += 1
    else:
        assert cache.cause is not None
        sums.breaks[cache.cause] += 1


def _calibration(pairs: list[tuple[int, int]]) -> Calibration:
    estimated = sum(estimate for estimate, _ in pairs)
    recorded = sum(record for _, record in pairs)
    if not pairs or not estimated or not recorded:
        return Calibration(1.0, len(pairs), None)
    factor = recorded / estimated
    errors = [abs(factor * estimate - record) / record for estimate, record in pairs if record]
    return Calibration(factor, len(pairs), sum(errors) / len(errors) if errors else None)


def _priced(totals: Iterable[RouteTotals], prices: PriceBook) -> list[RouteTotals]:
    return [replace(each, cost=prices.cost(each.route, _token_counts(each))) for each in totals]


def _token_counts(sums: RouteTotals) -> TokenCounts:
    """Uncached input on an Anthropic-format route is written to the cache, but what the provider
    recorded it did not write."""
    written = max(sums.uncached_tokens - sums.unwritten_tokens, 0) if sums.route.dialect == "anthropic-messages" else 0
    return TokenCounts(
        uncached_input=sums.uncached_tokens - written,
        cache_read=sums.cached_tokens,
        cache_write=written,
        output=sums.output_tokens,
    )


def request_cost(route: Route, cache: CacheDiagnostic, prices: PriceBook, factor: float = 1.0) -> Decimal | None:
    """What one request's input costs on the route by its cache diagnostic (the estimate times
    `factor`, a session's calibration): the cached part at the cache-read price, the rest as
    `_token_counts` bills it. None when the route has no price."""
    sums = RouteTotals(route, input_tokens=round(factor * cache.tokens.input), cached_tokens=round(factor * cache.tokens.cached))
    return prices.cost(route, _token_counts(sums))


def resent_cost(route: Route, cache: CacheDiagnostic, prices: PriceBook, factor: float = 1.0) -> Decimal | None:
    """What the part of one request sent uncached costs on the route: the price of a miss."""
    uncached = round(factor * cache.tokens.uncached)
    sums = RouteTotals(route, input_tokens=uncached)
    return prices.cost(route, _token_counts(sums))

"""A session's cost sums kept in its line index, so that `toolscope cost` on a session it has
seen prices them instead of scanning every request again (docs/cost.md).

The record is a section of the line index (`COSTS`), sealed with it: believed only when its seal
checks out, for the file exactly as it is (a file that grew or changed drops it), and only when its
key is this one — the chain of files, the routes with their other modes as they are configured now,
and a digest of the estimator's own source, so that a toolscope that estimates differently never
reads an older one's sums. Prices are not in it: they are applied to the sums on every run, so an
edited `[prices]` table counts at once. A record that does not check out is ignored and written
again; it never changes an answer.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from functools import cache
from importlib import import_module
from pathlib import Path
from typing import Any

from app.llm.routes import Route
from app.report.cache import CacheCause
from app.report.cost import Calibration, CostSums, RouteTotals, SessionCost, priced_cost, scanned_sums, with_other_modes
from app.report.prices import PriceBook
from app.session.line_index import COSTS
from app.session.session import Session

RECORD_VERSION = 1
_ESTIMATOR = (
    "app.report.cache",
    "app.report.cache_scan",
    "app.report.model",
    "app.report.cost",
    "app.report.cost_record",
    "app.llm.prefix",
    "app.llm.projection",
    "app.llm.dispatch",
    "app.llm.deepseek.body",
    "app.llm.anthropic.body",
    "app.llm.openai_sdk.body",
    "app.session.view",
    "app.session.view_items",
    "app.session.tool_history",
)
"""The modules whose source decides the sums: the digest of their text is part of the key."""


def recorded_cost(session: Session, routes: Sequence[Route], prices: PriceBook) -> SessionCost:
    """`session_cost` of every request of `session` on `routes`, the session validated first (or
    in the pass that folds it): from the record its line index keeps for this key, else scanned
    and recorded for the next run."""
    every = with_other_modes(routes)
    key = _key(session, every)
    sums = _read(session, key, every) if key is not None else None
    if sums is None:
        sums = scanned_sums(session.folded_requests(), every, measured=len(routes))
        if key is not None:
            session.chain.own.index.extra.set_raw(COSTS, _encoded(key, sums))
            session.save_index()
    else:
        session.load()  # (its own record of a validation of the file as it is: nothing to read again)
    return priced_cost(routes, sums, prices)


def _key(session: Session, routes: Sequence[Route]) -> dict[str, Any] | None:
    digest = _estimator_digest()
    if digest is None:
        return None
    return {
        "version": RECORD_VERSION,
        "estimator": digest,
        "events": len(session.chain),
        "chain": session.chain.key(),
        "routes": hashlib.sha256(repr(list(routes)).encode()).hexdigest(),
    }


@cache
def _estimator_digest() -> str | None:
    """The digest of the estimator modules' source; None when one cannot be read (no record then)."""
    digest = hashlib.sha256()
    for name in _ESTIMATOR:
        path = getattr(import_module(name), "__file__", None)
        if path is None:
            return None
        try:
            digest.update(Path(path).read_bytes())
        except OSError:
            return None
    return digest.hexdigest()


def _encoded(key: dict[str, Any], sums: CostSums) -> bytes:
    calibration = sums.calibration
    document = {
        "key": key,
        "requests": sums.requests,
        "calibration": [calibration.factor, calibration.samples, calibration.mean_error],
        "totals": [
            [
                totals.requests,
                totals.hits,
                {str(cause): count for cause, count in totals.breaks.items()},
                totals.input_tokens,
                totals.cached_tokens,
                totals.output_tokens,
                totals.recorded_requests,
                totals.unwritten_tokens,
                list(totals.recorded),
                list(totals.estimated_recorded),
            ]
            for totals in sums.totals
        ],
    }
    return json.dumps(document, separators=(",", ":")).encode()


def _read(session: Session, key: dict[str, Any], routes: Sequence[Route]) -> CostSums | None:
    """The sums the index keeps for `key`; None when it keeps none, or none that reads whole."""
    raw = session.chain.own.index.extra.raw(COSTS)
    if raw is None:
        return None
    try:
        document = json.loads(raw)
        if document["key"] != json.loads(json.dumps(key)):
            return None
        factor, samples, mean_error = document["calibration"]
        calibration = Calibration(_number(factor), _count(samples), None if mean_error is None else _number(mean_error))
        rows = document["totals"]
        if len(rows) != len(routes):
            return None
        totals = tuple(_totals(route, row) for route, row in zip(routes, rows, strict=True))
        return CostSums(totals, calibration, _count(document["requests"]))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None  # not a record this code wrote: worked out again


def _totals(route: Route, row: list[Any]) -> RouteTotals:
    requests, hits, breaks, input_tokens, cached_tokens, output_tokens, ran, unwritten, (record_input, record_cached), beside = row
    beside_input, beside_cached = beside
    return RouteTotals(
        route,
        requests=_count(requests),
        hits=_count(hits),
        breaks=Counter({CacheCause(cause): _count(count) for cause, count in breaks.items()}),
        input_tokens=_count(input_tokens),
        cached_tokens=_count(cached_tokens),
        output_tokens=_count(output_tokens),
        recorded_requests=_count(ran),
        unwritten_tokens=_count(unwritten),
        recorded=(_count(record_input), _count(record_cached)),
        estimated_recorded=(_count(beside_input), _count(beside_cached)),
    )


def _count(value: Any) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(value)
    return value


def _number(value: Any) -> float:
    if type(value) not in (int, float):
        raise ValueError(value)
    return float(value)

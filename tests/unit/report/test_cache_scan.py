"""The one-pass cache scan (`app.report.cache_scan`) against its reference, the report model: on
generated logs (tool changes, route switches, compactions, failed requests, waits past a TTL) every
request's diagnostic on every route is the same."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from app.llm.routes import load_catalog
from app.report import cache_scan
from app.report.cache_scan import scan_caches
from app.report.model import iter_reports, route_report
from app.session.session import Session
from benchmarks.sessions import write_large_session
from tests.support.histories import session_logs

ROUTES = [*load_catalog(), replace(load_catalog().get("offline/demo"), id="offline/short-ttl", cache_ttl=0.001)]


def reference(requests, routes):  # type: ignore[no-untyped-def]
    return [(report.request, tuple(item.cache for item in report.routes)) for report in iter_reports(requests, routes)]


@settings(max_examples=80, deadline=None)
@given(generated=session_logs(), modes=st.lists(st.sampled_from(["none", "addition-only", "in-history"]), min_size=1, max_size=3))
def test_the_scan_gives_every_diagnostic_the_report_model_gives(generated, modes) -> None:
    requests = generated.view().requests
    routes = [*ROUTES, *(replace(ROUTES[0], id=f"deepseek/{mode}", tool_update=mode) for mode in dict.fromkeys(modes))]
    assert list(scan_caches(requests, routes)) == reference(requests, routes)


def test_on_a_long_generated_session_too_where_most_requests_only_append(tmp_path: Path, monkeypatch) -> None:
    """`benchmarks/sessions.py`'s realistic log: compactions, route switches, retries."""
    path = tmp_path / "long.jsonl"
    write_large_session(path, 1_000, seed=random.Random(27).randrange(1000))
    requests = Session.open(path).view().requests
    expected = reference(requests, ROUTES)
    worked_out = []
    monkeypatch.setattr(cache_scan, "route_report", lambda *args, **kwargs: worked_out.append(1) or route_report(*args, **kwargs))
    assert list(scan_caches(requests, ROUTES)) == expected
    # The reference ran for the first request and each compaction (a tool change on a route that
    # keeps the previous messages is worked out from lengths).
    assert len(worked_out) < 0.05 * len(requests) * len(ROUTES)

"""The status line's estimated cost and cache-hit share on the current route (issue 27 item 4),
driven by the pilot as a user would: a turn on the offline route (no price; its simulated cache
recorded in the log), a switch to a priced route through the route picker, a resumed session."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from app.agent.runtime import catalog_from
from app.display import money
from app.report.cost import session_cost
from app.report.prices import PriceBook
from app.ui.screens.route_picker import RoutePickerScreen
from app.ui.widgets.status_line import StatusLine
from tests.functional.ui.chat_support import SIZE, Bench, cursor_blink_off, make_bench, run, send, settle, until
from tests.support.screen import screen_rows, text_in

pytestmark = pytest.mark.timeout(120)

PRICED = "deepseek/deepseek-flash"
PRICES = ['[prices."deepseek/deepseek-flash"]', "input = 0.28", "cache_read = 0.028", "output = 0.42", ""]
"""Fixed here, so the figures do not move with the bundled price table's dates."""


@pytest.fixture
def bench(monkeypatch) -> Iterator[Bench]:
    """A workspace path of the same length however the test runs (the system prompt names it, and
    the status line's figures count its tokens: see test_chat_snapshots.py)."""
    root = Path(tempfile.mkdtemp(dir="/tmp", prefix="toolscope-snapshot-"))
    try:
        bench = make_bench(root, monkeypatch)
        bench.config_lines += PRICES
        yield bench
    finally:
        shutil.rmtree(root, ignore_errors=True)


def status_text(app) -> str:  # type: ignore[no-untyped-def]
    return text_in(screen_rows(app), app.chat.query_one(StatusLine).region).strip()


def recorded_share(bench) -> int:  # type: ignore[no-untyped-def]
    """The offline route's cache-hit share by the usage its simulated cache recorded in the log."""
    usages = [request.outcome.usage for request in bench.only_session().view().requests]
    assert all(usage is not None for usage in usages)
    return round(100 * sum(usage.cache_read for usage in usages) / sum(usage.input for usage in usages))


async def switch_route(pilot, route_id: str) -> None:  # type: ignore[no-untyped-def]
    app = pilot.app
    await pilot.press("ctrl+r")
    await until(pilot, lambda: isinstance(app.screen, RoutePickerScreen))
    await pilot.press(*route_id, "enter")
    await until(pilot, lambda: app.screen is app.chat and app.route.id == route_id)
    await settle(pilot)


def test_after_a_turn_on_the_offline_route_the_status_line_says_no_price_and_its_cache_share(bench) -> None:
    async def scenario() -> str:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            before = status_text(app)
            await send(pilot, "use read_file on README.md")
            await settle(pilot)
            assert "no price" not in before and "%" not in before  # nothing to price yet
            return status_text(app)

    shown = run(scenario())
    assert f"in-history · no price · cache {recorded_share(bench)} % · seq 0" in shown


def test_a_route_switch_prices_the_session_on_the_new_route(bench) -> None:
    async def scenario() -> str:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "use read_file on README.md")
            await send(pilot, "hello")
            await switch_route(pilot, PRICED)
            return status_text(app)

    shown = run(scenario())
    session = bench.only_session()
    route = catalog_from(bench.config()).get(PRICED)
    (totals,) = session_cost(session.view().requests, [route], PriceBook.of(bench.config())).routes
    assert totals.cost is not None and totals.cost > Decimal(0) and totals.hit_share is not None
    assert f"≈ {money(totals.cost)} · cache {round(totals.hit_share * 100)} %" in shown
    assert "no price" not in shown


def test_a_resumed_session_shows_its_totals_once_they_are_worked_out(bench) -> None:
    async def first() -> None:
        async with bench.app().run_test(size=SIZE) as pilot:
            await send(pilot, "use read_file on README.md")

    run(first())
    (path,) = bench.sessions()

    async def resumed() -> str:
        app = bench.app(session=path)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.writer is not None and app.chat.conversation.blocks)
            await until(pilot, lambda: "%" in status_text(app))
            return status_text(app)

    assert f"no price · cache {recorded_share(bench)} %" in run(resumed())


def test_the_status_line_with_a_cost(bench, snap_compare) -> None:
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await send(pilot, "use read_file on README.md")
        await switch_route(pilot, PRICED)
        pilot.app.clear_notifications()  # the switch's toast covers the status line
        await cursor_blink_off(pilot)

    assert snap_compare(bench.app(), terminal_size=SIZE, run_before=run_before)


"""The inspector's cost line and each route's cost row (issue 27 item 4), on the worked example of
docs/inspect.md, driven by the pilot: what the screen shows is the report model's cache diagnostic
priced by `app.report.cost` (request 4 removes grep: the addition-only and none routes break their
prefix, the in-history route keeps it)."""

from __future__ import annotations

import pytest
from rich.cells import cell_len
from textual.widgets import Static

from app.display import token_count
from app.report.cost import request_cost, resent_cost
from app.report.model import inspect_requests
from app.report.prices import PriceBook
from app.report.wording import cost_words
from app.ui.widgets.inspector import RouteColumn
from tests.functional.ui.chat_support import run, until
from tests.functional.ui.test_inspector import ONE_PER_MODE, WIDE, bench, example, open_inspector  # noqa: F401 (fixtures)

pytestmark = pytest.mark.timeout(120)


def cost_line(screen) -> str:
    return str(screen.query_one("#inspector-cost", Static).render())


def on_request(bench, example, number: int, check, *, shown: list[str] | None = ONE_PER_MODE, size=WIDE) -> None:
    """The inspector on request `number` of the worked example (`shown`: the routes chosen, None:
    every one), then `await check(pilot, screen, report)`, `report` the request's on the catalog."""

    async def scenario() -> None:
        app = bench.app(session=example)
        async with app.run_test(size=size) as pilot:
            screen = await open_inspector(pilot, number, follow_latest=False, shown=shown)
            (report,) = inspect_requests(app.view().requests, list(app.catalog), only=number)
            await check(pilot, screen, report)

    run(scenario())


def cost_rows(screen) -> dict[str, str]:
    """Each route column shown: its cost row as on the screen."""
    return {
        column.route.id: str(column.query_one(".route-cost", Static).render())
        for column in screen.query(RouteColumn)
        if column.display
    }


def test_the_cost_line_says_what_each_route_re_sends_and_which_keep_their_prefix(bench, example) -> None:
    async def check(pilot, screen, report) -> None:
        routes = {route_report.route.id: route_report for route_report in report.routes}

        def resent(route_id: str) -> str:
            route_report = routes[route_id]
            cost = resent_cost(route_report.route, route_report.cache, PriceBook.of(None))
            assert cost is not None and cost > 0
            return f"{token_count(route_report.cache.tokens.uncached)} tokens {cost_words(cost)}"

        assert " ".join(cost_line(screen).split("\n")) == (
            "Request 4: tools changed (−grep) — "
            f"deepseek/deepseek-flash re-sends {resent('deepseek/deepseek-flash')}; "
            f"openai/gpt re-sends {resent('openai/gpt')}; "
            "anthropic/claude-sonnet keeps its prefix"
        )
        await pilot.press("n")
        assert cost_line(screen).startswith("Request 5: tools changed (+grep) — ")
        await pilot.press("n")
        assert cost_line(screen) == (
            "Request 6: no tool change — deepseek/deepseek-flash, anthropic/claude-sonnet, openai/gpt keep their prefix"
        )

    on_request(bench, example, 4, check)


def test_each_route_column_has_its_cache_row_with_tokens_and_cost(bench, example) -> None:
    async def check(pilot, screen, report) -> None:
        rows = cost_rows(screen)
        assert list(rows) == ONE_PER_MODE
        for route_report in report.routes:
            if route_report.route.id not in rows:
                continue
            cache = route_report.cache
            cost = request_cost(route_report.route, cache, PriceBook.of(None))
            tokens = f"{token_count(cache.tokens.cached)} cached, {token_count(cache.tokens.uncached)} uncached"
            assert rows[route_report.route.id].endswith(f" · {tokens} · {cost_words(cost)}")
        assert rows["anthropic/claude-sonnet"].startswith("Cache: served from cache · ")
        assert rows["anthropic/claude-sonnet"].endswith(" · ≈ $0.0003")
        assert rows["deepseek/deepseek-flash"].startswith("Cache: tools changed (−grep) at /tools/2 · ")
        assert rows["deepseek/deepseek-flash"].endswith(" · < $0.0001")  # below a hundredth of a cent
        assert rows["openai/gpt"].startswith("Cache: tools changed (−grep) at /tools/1 · ")
        # The body and the diff keep the row: it is the route's, not the summary's.
        await pilot.press("b")
        assert cost_rows(screen) == rows

    on_request(bench, example, 4, check)


def test_a_route_without_a_price_shows_its_tokens_and_says_so(bench, example) -> None:
    async def check(pilot, screen, report) -> None:
        row = cost_rows(screen)["offline/demo"]
        assert row.startswith("Cache: served from cache · ") and row.endswith(" uncached · no price")
        await pilot.press("p", "p", "p")  # request 1: every route writes its cache
        line = " ".join(cost_line(screen).split("\n"))
        assert line.startswith("Request 1: first request — openai/gpt sends ")
        assert line.endswith("; offline/demo sends 77 tokens uncached (no price)")

    on_request(bench, example, 4, check, shown=["offline/demo", "openai/gpt"])


def test_the_cost_line_is_cut_to_two_lines_at_80_columns(bench, example) -> None:
    async def check(pilot, screen, report) -> None:
        lines = cost_line(screen).split("\n")
        assert len(lines) == 2 and lines[0].startswith("Request 5: tools changed (+grep) — ")
        assert all(cell_len(line) <= 78 for line in lines) and lines[1].endswith("…")

    on_request(bench, example, 5, check, shown=None, size=(80, 30))


def test_the_chat_prices_the_inspector_with_its_config(bench, example) -> None:
    """`[prices]` in config.toml prices the offline route, which the bundled data does not."""
    bench.config_lines += ['[prices."offline/demo"]', "input = 1000", "cache_read = 100", "output = 1000", ""]

    async def scenario() -> None:
        app = bench.app(session=example)
        async with app.run_test(size=WIDE) as pilot:
            await until(pilot, lambda: app.view() is not None and app.registry is not None)
            app.action_inspect()  # the latest request, as Ctrl+G opens it
            await until(pilot, lambda: bool(app.screen.query("#inspector-cost")))
            await pilot.pause()
            (report,) = inspect_requests(app.view().requests, list(app.catalog), only=6)
            demo = next(item for item in report.routes if item.route.id == "offline/demo")
            cost = request_cost(demo.route, demo.cache, PriceBook.of(bench.config()))
            assert cost is not None and cost > 0
            await pilot.press("right")  # the last page: routes 4–6
            assert cost_rows(app.screen)["offline/demo"].endswith(f" uncached · {cost_words(cost)}")

    run(scenario())

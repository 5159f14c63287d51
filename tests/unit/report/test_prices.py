"""Prices per route (issue 27): the bundled genai-prices data for each built-in route, `[prices]` in
config.toml over it, and what a request's tokens cost."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import replace
from datetime import date
from decimal import Decimal
from importlib.metadata import version
from pathlib import Path

import pytest

from app import i18n
from app.config import ConfigError, parse_config
from app.llm.routes import load_catalog
from app.report.cost import RouteTotals, _token_counts
from app.report.prices import ModelPrice, PriceBook, TokenCounts

D = Decimal
CATALOG = load_catalog()
FLASH = CATALOG.get("deepseek/deepseek-flash")
PRO = CATALOG.get("deepseek/deepseek-pro")
SONNET = CATALOG.get("anthropic/claude-sonnet")
ANTHROPIC_DEEPSEEK = CATALOG.get("anthropic/deepseek")
GPT = CATALOG.get("openai/gpt")
OFFLINE = CATALOG.get("offline/demo")
DATA_DATE = date(2026, 11, 9)
BUNDLED = f"genai-prices {version('genai-prices')}, data of 2026-11-09"


@pytest.fixture(autouse=True)
def english():
    i18n.set_language("en")
    yield
    i18n.set_language("en")


def _book(text: str = "") -> PriceBook:
    return PriceBook.of(parse_config(text, Path("config.toml")))


def _prices(price: ModelPrice | None) -> tuple[Decimal | None, ...] | None:
    if price is None:
        return None
    return (price.input, price.cache_read, price.cache_write_5m, price.cache_write_1h, price.output)


# --- the bundled data, route by route -------------------------------------------------------------


@pytest.mark.parametrize(
    ("route", "expected"),
    [
        # DeepSeek bills no cache write (a miss is input) and has no 5-minute or 1-hour writes.
        (FLASH, (D("0.15"), D("0.003"), None, None, D("0.6"))),
        (PRO, (D("0.66"), D("0.022"), None, None, D("1.98"))),
        (SONNET, (D("3"), D("0.3"), D("3.75"), D("6"), D("15"))),
        # The Anthropic-format endpoint at api.deepseek.com is DeepSeek's, priced as DeepSeek.
        (ANTHROPIC_DEEPSEEK, (D("0.15"), D("0.003"), None, None, D("0.6"))),
        (GPT, (D("1.25"), D("0.125"), None, None, D("10"))),
    ],
    ids=lambda value: getattr(value, "id", ""),
)
def test_each_builtin_route_is_priced_from_the_bundled_data(route, expected):
    price = PriceBook.of(None).price(route)
    assert _prices(price) == expected
    assert price.source == BUNDLED


def test_the_offline_route_has_no_price():
    assert PriceBook.of(None).price(OFFLINE) is None
    assert PriceBook.of(None).cost(OFFLINE, TokenCounts(uncached_input=1000, output=10)) is None


def test_a_model_the_data_lacks_has_no_price_and_no_guess():
    book = PriceBook.of(None)
    assert book.price(replace(FLASH, model="deepseek-v9-imaginary")) is None
    assert book.cost(replace(FLASH, model="deepseek-v9-imaginary"), TokenCounts(output=1)) is None


def test_a_server_the_data_does_not_know_has_no_price_even_for_a_known_model_name():
    # A local server or proxy is not the provider's price list: no guessing from the model name.
    local = replace(SONNET, id="local/claude", base_url="http://localhost:8080")
    assert PriceBook.of(None).price(local) is None


def test_another_hosted_api_the_data_knows_is_priced_by_its_url():
    openrouter = replace(
        GPT, id="or/gpt", base_url="https://openrouter.ai/api/v1", model="openai/gpt-5"
    )
    price = PriceBook.of(None).price(openrouter)
    assert price is not None and price.source == BUNDLED


def test_the_data_date_is_known_for_the_installed_genai_prices():
    # Fails on an upgrade until the new data's date is read and recorded in app/report/prices.py.
    assert PriceBook.of(None).data_date == DATA_DATE


# --- [prices] in config.toml ----------------------------------------------------------------------


def test_a_full_table_by_model_name_overrides_the_bundled_price():
    book = _book(
        '[prices."deepseek-v4-flash"]\ninput = 0.27\ncache_read = 0.07\ncache_write = 0.27\n'
        "cache_write_1h = 0.54\noutput = 1.10\n"
    )
    for route in (FLASH, ANTHROPIC_DEEPSEEK):  # every route of that model
        price = book.price(route)
        assert _prices(price) == (D("0.27"), D("0.07"), D("0.27"), D("0.54"), D("1.10"))
        assert price.source == f"config.toml [prices] over {BUNDLED}"
    assert _prices(book.price(PRO)) == (D("0.66"), D("0.022"), None, None, D("1.98"))


def test_a_partial_table_overrides_only_the_keys_it_gives():
    price = _book('[prices."claude-sonnet-4-6"]\noutput = 12\n').price(SONNET)
    assert _prices(price) == (D("3"), D("0.3"), D("3.75"), D("6"), D("12"))


def test_a_route_id_table_wins_over_the_model_table():
    book = _book(
        '[prices."deepseek-v4-flash"]\ninput = 1\n[prices."anthropic/deepseek"]\ninput = 2\n'
    )
    assert book.price(FLASH).input == D("1")
    assert book.price(ANTHROPIC_DEEPSEEK).input == D("2")
    assert book.price(ANTHROPIC_DEEPSEEK).output == D("0.6")  # the model table is not merged in


def test_a_table_adds_a_model_the_data_lacks():
    text = textwrap.dedent(
        """
        [[routes]]
        id = "local/llama"
        dialect = "deepseek-chat"
        model = "llama-local"
        base_url = "http://localhost:8080"

        [prices."local/llama"]
        input = 0.1
        output = 0.2
        """
    )
    config = parse_config(text, Path("/home/u/toolscope.toml"))
    route = load_catalog(config.routes).get("local/llama")
    price = PriceBook.of(config).price(route)
    assert _prices(price) == (D("0.1"), None, None, None, D("0.2"))
    assert price.source == "toolscope.toml [prices]"
    # Also the offline model, which has no price of its own.
    assert _prices(_book('[prices."offline/demo"]\ninput = 0\noutput = 0\n').price(OFFLINE)) == (
        D("0"),
        None,
        None,
        None,
        D("0"),
    )


def test_a_table_for_a_model_the_data_lacks_needs_input_and_output():
    text = '[prices."offline/demo"]\ninput = 0.1\n'
    with pytest.raises(ConfigError) as caught:
        _book(text)
    assert str(caught.value) == (
        "config.toml: [prices.offline/demo] needs 'input' and 'output': "
        "the bundled prices have none for route offline/demo"
    )


# --- cost -----------------------------------------------------------------------------------------


def test_cost_on_a_deepseek_route():
    # 1,000,000 uncached x 0.15 + 2,000,000 read x 0.003 + 500,000 output x 0.6, per million; the
    # cache writes of a provider without a write price are billed as input: 100,000 x 0.15.
    tokens = TokenCounts(uncached_input=1_000_000, cache_read=2_000_000, cache_write=100_000, output=500_000)
    assert PriceBook.of(None).cost(FLASH, tokens) == D("0.15") + D("0.006") + D("0.015") + D("0.3")


def test_cost_on_anthropic_with_five_minute_and_one_hour_writes():
    tokens = TokenCounts(uncached_input=10_000, cache_read=200_000, cache_write=40_000, output=2_000)
    book = PriceBook.of(None)
    # 10k x $3 = 0.03; 200k x $0.30 = 0.06; 40k x $3.75 = 0.15; 2k x $15 = 0.03
    assert book.cost(SONNET, tokens) == D("0.27")
    one_hour = load_catalog([{"id": "anthropic/claude-sonnet", "cache_write": "1h"}]).get(
        "anthropic/claude-sonnet"
    )
    # the writes at $6: 40k x 6 = 0.24
    assert book.cost(one_hour, tokens) == D("0.36")


def test_cost_of_nothing_is_zero_and_exact():
    assert PriceBook.of(None).cost(GPT, TokenCounts()) == D("0")
    assert PriceBook.of(None).cost(GPT, TokenCounts(output=1)) == D("0.00001")


def test_a_one_hour_route_without_a_one_hour_price_pays_input_for_writes():
    book = _book('[prices."my-claude"]\ninput = 2\noutput = 8\ncache_write = 2.5\n')
    route = replace(SONNET, id="my/claude", model="my-claude", base_url="http://localhost:1")
    tokens = TokenCounts(cache_write=1_000_000)
    assert book.cost(route, tokens) == D("2.5")
    assert book.cost(replace(route, cache_write="1h"), tokens) == D("2")


# --- never the network -----------------------------------------------------------------------------


def test_prices_are_found_with_the_network_forbidden():
    script = textwrap.dedent(
        """
        import socket, threading

        def refuse(*args, **kwargs):
            raise OSError("network forbidden in this test")

        socket.socket.connect = refuse
        socket.socket.connect_ex = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse

        from app.llm.routes import load_catalog
        from app.report.prices import PriceBook, TokenCounts

        book = PriceBook.of(None)
        for route in load_catalog():
            price = book.price(route)
            print(route.id, None if price is None else price.output)
        print("threads", sorted(thread.name for thread in threading.enumerate()))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "deepseek/deepseek-flash 0.6",
        "deepseek/deepseek-pro 1.98",
        "anthropic/claude-sonnet 15",
        "anthropic/deepseek 0.6",
        "openai/gpt 10",
        "offline/demo None",
        "threads ['MainThread']",  # no genai_prices:update thread was started
    ]


def test_importing_the_prices_loads_neither_the_data_nor_an_interface():
    """The chat imports the report layer before its first frame: genai-prices (its data, httpx2,
    pydantic) comes with the first lookup, and Textual and Rich never."""
    script = "import json, sys, app.report.prices; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    roots = {name.partition(".")[0] for name in json.loads(result.stdout)}
    assert roots & {"genai_prices", "httpx2", "pydantic", "textual", "rich"} == set()


def test_the_source_is_worded_in_the_language_of_the_moment():
    """The bundled data is read once per model; its source's words are not (the inspector prices in
    Chinese, `toolscope cost` later in English in the same process)."""
    before = i18n.current_language()
    i18n.set_language("zh_CN")
    try:
        chinese = PriceBook.of(None).price(GPT).source
    finally:
        i18n.set_language(before)
    assert chinese != BUNDLED and "2026-11-09" in chinese
    assert PriceBook.of(None).price(GPT).source == BUNDLED


def test_an_anthropic_routes_recorded_unwritten_input_is_priced_as_input_and_the_rest_as_writes():
    """Of 100 uncached input tokens, 40 ran on the route and recorded they were not written to the
    cache (no `cache_control`): those are input, the other 60 (estimated) writes."""
    route = load_catalog().get("anthropic/claude-sonnet")
    book = PriceBook.of(None)
    totals = RouteTotals(route, input_tokens=130, cached_tokens=30, unwritten_tokens=40)
    assert _token_counts(totals) == TokenCounts(uncached_input=40, cache_read=30, cache_write=60)
    price = book.price(route)
    assert price is not None
    expected = (40 * price.input + 30 * price.cache_read + 60 * price.cache_write_5m) / 1_000_000
    assert book.cost(route, _token_counts(totals)) == expected
    # A chat route writes nothing: every uncached token is input.
    chat = load_catalog().get("deepseek/deepseek-flash")
    assert _token_counts(RouteTotals(chat, input_tokens=130, cached_tokens=30)) == TokenCounts(uncached_input=100, cache_read=30)

"""What a route's tokens cost (issue 27; docs/cost.md#prices): the bundled genai-prices data, with
`[prices]` tables from config.toml over it.

genai-prices ships its price table in the wheel; only its `UpdatePrices` downloads, and nothing here
calls it, so a lookup works offline. It is imported on the first lookup, not with this module: the
chat imports the report layer before its first frame. A model the data lacks has no price (None),
never a guess; the caller shows its tokens without a cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import cache
from typing import TYPE_CHECKING, Any

from app.i18n import _

if TYPE_CHECKING:
    from app.config import Config, PriceTable
    from app.llm.routes import Route

_PER = Decimal(1_000_000)

_DATA_DATES = {"0.2.3": date(2026, 11, 9)}
"""The date of each genai-prices release's data, read from the data: the newest price change in it
that was already in effect when it was released (0.2.3, November 2026; its later dates, 2026-12-01
and 2027-01-01, are announced changes). The package records no date of its own."""

_BUNDLED_KEYS = {
    "input": "input_mtok",
    "cache_read": "cache_read_mtok",
    "cache_write_5m": "cache_write_mtok",
    "cache_write_1h": "cache_write_1h_mtok",
    "output": "output_mtok",
}
"""Our field → genai-prices' price key (USD per million tokens)."""

_TABLE_KEYS = {"cache_write": "cache_write_5m"}
"""A `[prices]` key → our field, where the names differ."""


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens. A cache price is None where the source has none: the provider then
    bills those tokens as ordinary input (DeepSeek and OpenAI have no cache-write surcharge)."""

    input: Decimal
    cache_read: Decimal | None
    cache_write_5m: Decimal | None
    cache_write_1h: Decimal | None
    output: Decimal
    source: str
    """Where the price comes from, in words the views show."""


@dataclass(frozen=True)
class TokenCounts:
    """One request's tokens by how they are billed."""

    uncached_input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0


class PriceBook:
    """The prices of routes, built once from the config (`PriceBook.of`)."""

    def __init__(self, tables: Mapping[str, PriceTable], config_name: str) -> None:
        self._tables = tables
        self._config_name = config_name
        self._prices: dict[Route, ModelPrice | None] = {}

    @classmethod
    def of(cls, config: Config | None) -> PriceBook:
        """The book for `config` (None: the bundled data alone).

        Raises `ConfigError` for a `[prices]` table without `input` or `output` that applies to a
        route of the catalog the bundled data has no price for: nothing to complete it from.
        """
        if config is None:
            return cls({}, "config.toml")
        book = cls(config.prices, config.source.name if config.source is not None else "config.toml")
        incomplete = {
            key for key, table in config.prices.items() if table.input is None or table.output is None
        }
        if incomplete:
            from app.llm.routes import load_catalog

            for route in load_catalog(config.routes):
                key = book._table_key(route)
                if key in incomplete and book.price(route) is None:
                    from app.config import ConfigError

                    raise ConfigError(
                        _(
                            "{file}: [prices.{key}] needs 'input' and 'output': "
                            "the bundled prices have none for route {route}"
                        ).format(file=config.source or "config.toml", key=key, route=route.id)
                    )
        return book

    @property
    def data_date(self) -> date | None:
        """The bundled data's date, None for a genai-prices release whose date is not recorded."""
        return _DATA_DATES.get(_genai_prices_version())

    def price(self, route: Route) -> ModelPrice | None:
        """The route's price, or None when neither the data nor config.toml gives one."""
        if route not in self._prices:
            self._prices[route] = self._lookup(route)
        return self._prices[route]

    def cost(self, route: Route, tokens: TokenCounts) -> Decimal | None:
        """USD for `tokens` on `route` (cache writes at its `cache_write` duration), None unpriced."""
        price = self.price(route)
        if price is None:
            return None
        write = price.cache_write_1h if route.cache_write == "1h" else price.cache_write_5m
        total = (
            tokens.uncached_input * price.input
            + tokens.cache_read * _or_input(price.cache_read, price)
            + tokens.cache_write * _or_input(write, price)
            + tokens.output * price.output
        )
        return total / _PER

    def _table_key(self, route: Route) -> str | None:
        for key in (route.id, route.model):  # a route id wins over its model's name
            if key in self._tables:
                return key
        return None

    def _lookup(self, route: Route) -> ModelPrice | None:
        bundled = _bundled_price(route.dialect, route.base_url, route.model)
        key = self._table_key(route)
        if key is None:
            return bundled
        given = {
            _TABLE_KEYS.get(item.name, item.name): Decimal(str(value))
            for item in fields(self._tables[key])
            if (value := getattr(self._tables[key], item.name)) is not None
        }
        base: dict[str, Any] = (
            {name: getattr(bundled, name) for name in _BUNDLED_KEYS} if bundled is not None else {}
        )
        merged = {name: None for name in _BUNDLED_KEYS} | base | given
        if merged["input"] is None or merged["output"] is None:
            return None
        config = _("{file} [prices]").format(file=self._config_name)
        source = config if bundled is None else _("{config} over {bundled}").format(
            config=config, bundled=bundled.source
        )
        return ModelPrice(**merged, source=source)


def _or_input(price: Decimal | None, model: ModelPrice) -> Decimal:
    return model.input if price is None else price


def _genai_prices_version() -> str:
    from importlib.metadata import version

    return version("genai-prices")


def _bundled_price(dialect: str, base_url: str, model: str) -> ModelPrice | None:
    """The bundled data's price for `model` at the provider whose API `base_url` is, else None;
    its source worded now (the language may have changed since the data was read)."""
    values = _bundled_values(dialect, base_url, model)
    if values is None:
        return None
    version = _genai_prices_version()
    data_date = _DATA_DATES.get(version)
    source = (
        _("genai-prices {version}, data of {date}").format(version=version, date=data_date.isoformat())
        if data_date is not None
        else _("genai-prices {version}").format(version=version)
    )
    return ModelPrice(**values, source=source)


@cache
def _bundled_values(dialect: str, base_url: str, model: str) -> dict[str, Decimal | None] | None:
    """The bundled prices of `model` by our field names, read once.

    The provider comes from the URL alone (api.deepseek.com, api.anthropic.com, api.openai.com and
    the other hosted APIs the data knows): a local server or a proxy is not that provider's price
    list. A price that changes with the time of day (DeepSeek's peak hours) is taken at its
    standard rate; a tiered one at its base rate.
    """
    if dialect == "offline":
        return None
    try:
        _provider, info = _snapshot().find_provider_model(model, None, None, base_url)
    except LookupError:
        return None
    prices = _standard_prices(info, datetime.now(UTC))
    values = {name: _base(getattr(prices, key)) for name, key in _BUNDLED_KEYS.items()}
    if values["input"] is None or values["output"] is None:
        return None
    return values


@cache
def _snapshot() -> Any:
    """The bundled data, always: never a snapshot an updater may have installed in the process."""
    from genai_prices.data import providers
    from genai_prices.data_snapshot import DataSnapshot

    return DataSnapshot(providers=providers, from_auto_update=False)


def _standard_prices(info: Any, now: datetime) -> Any:
    """The model's prices in force on `now`'s date, leaving out daily windows (peak hours)."""
    from genai_prices.types import StartDateConstraint

    if not isinstance(info.prices, list):
        return info.prices
    chosen = info.prices[0].prices
    for conditional in info.prices:
        constraint = conditional.constraint
        if constraint is None or (isinstance(constraint, StartDateConstraint) and constraint.active(now)):
            chosen = conditional.prices
    return chosen


def _base(value: Any) -> Decimal | None:
    """A flat price as it is, a tiered one at its base rate (below its first tier)."""
    from genai_prices.types import TieredPrices

    return value.base if isinstance(value, TieredPrices) else value

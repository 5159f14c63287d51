"""The route catalog (docs/architecture.md §8): which dialect, model and endpoint a route uses, and what it can
do with tool changes inside the history.

The built-in entries are listed here; `config.toml` `[[routes]]` tables override their keys or add
routes (`load_catalog`). Validation is strict because a typo in a capability key would silently
change what every request declares: an unknown key or a bad value is a `RouteConfigError` that
names the route and the key.
"""

from __future__ import annotations

import difflib
import os
import re
from urllib.parse import urlsplit
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, fields
from typing import Any, Literal, get_args

from app.i18n import N_, _
from app.llm.errors import DEFAULT_RETRYABLE, FAILURE_CODES

Dialect = Literal["deepseek-chat", "anthropic-messages", "openai-sdk", "offline"]
ToolUpdateMode = Literal["none", "addition-only", "in-history"]
KeyState = Literal["set", "missing", "not-needed"]
SystemPromptMode = Literal["top", "in-history"]
ReasoningHistory = Literal["reasoning_content", "reasoning", "none"]
"""Where a chat-completions history carries past reasoning back: DeepSeek's thinking-mode tool loops
require `reasoning_content`; OpenRouter and vLLM read `reasoning`; Groq refuses both (400)."""
CacheWrite = Literal["5m", "1h"]
"""Which Anthropic cache write a route pays for: 5-minute (1.25x input) or 1-hour (2x input)."""

DEFAULT_TOOL_UPDATE_BETA = "mid-conversation-tool-changes-2026-07-01"
DEFAULT_BETA_HEADER = "anthropic-beta"

_MINUTE, _HOUR = 60.0, 3600.0
_NEVER = 100 * 365 * 24 * _HOUR
"""The offline model's simulated cache never expires; a century is longer than any session."""


def default_cache_ttl(dialect: Dialect, base_url: str, cache_write: CacheWrite) -> float:
    """Seconds a provider keeps a prompt prefix after its last use, from its documentation
    (docs/decisions.md, "Issue 27: prices and cache settings", lists each source)."""
    host = urlsplit(base_url).hostname or ""
    if dialect == "offline":
        return _NEVER
    if host == "api.deepseek.com":  # one disk cache behind both DeepSeek endpoints: hours to days
        return 3 * _HOUR
    if dialect == "anthropic-messages":
        return _HOUR if cache_write == "1h" else 5 * _MINUTE
    if host == "api.openai.com":  # extended retention, the default for organizations without ZDR
        return 24 * _HOUR
    return 5 * _MINUTE  # another server's in-memory cache: the short end of OpenAI's 5-10 minutes


def default_cache_control(dialect: Dialect, base_url: str) -> bool:
    """Anthropic's own API caches only what a request asks it to; another Anthropic-format server
    may not know the field (DeepSeek's caches every request on its own)."""
    return dialect == "anthropic-messages" and urlsplit(base_url).hostname == "api.anthropic.com"


def _openai_sdk_rule() -> str:
    return _('openai-sdk routes can only use tool_update = "none"')


@dataclass(frozen=True, kw_only=True)
class Route:
    """One catalog entry. `label` is the English display name; show it with `display_label`.

    A plain dataclass, not a pydantic model: the chat builds the catalog before its first frame,
    which must not wait for pydantic. `[[routes]]` tables are checked key by key by `load_catalog`.
    """

    id: str
    dialect: Dialect
    model: str
    base_url: str
    api_key_env: str | None = None
    tool_update: ToolUpdateMode = "none"
    system_prompt: SystemPromptMode = "top"
    tool_update_beta: str = DEFAULT_TOOL_UPDATE_BETA
    beta_header: str = DEFAULT_BETA_HEADER
    context_window: int = 128_000
    max_output_tokens: int = 8_192
    label: str = ""
    # The retry policy (docs/architecture.md §9) per route, how long a silent stream may stall and how long
    # one request may take in all.
    max_retries: int = 5
    retry_base_delay: float = 0.5
    retry_max_delay: float = 10.0
    retryable: tuple[str, ...] = tuple(sorted(DEFAULT_RETRYABLE))
    idle_timeout: float = 120.0
    request_timeout: float = 600.0  # all of one request, however lively
    reasoning_history: ReasoningHistory = "reasoning_content"
    # How long the provider keeps a prompt prefix after its last use (the cost diagnostic's "cache
    # expired"); None asks for the provider's documented default, which `__post_init__` fills in.
    cache_ttl: float | None = None
    cache_write: CacheWrite = "5m"  # which write price an Anthropic-format route pays
    # Whether an Anthropic-format route asks for prompt caching (a top-level `cache_control` with
    # `cache_write`'s lifetime); None asks for the default by host, which `__post_init__` fills in.
    cache_control: bool | None = None


    def __post_init__(self) -> None:
        # The library-backed route cannot put tool changes into the history (seed 000: `pi-ai`).
        if self.dialect == "openai-sdk" and self.tool_update != "none":
            raise ValueError(_openai_sdk_rule())
        if self.cache_ttl is None:
            ttl = default_cache_ttl(self.dialect, self.base_url, self.cache_write)
            object.__setattr__(self, "cache_ttl", ttl)
        if self.cache_control is None:
            object.__setattr__(self, "cache_control", default_cache_control(self.dialect, self.base_url))

    @property
    def sends_tool_updates(self) -> bool:
        """Whether requests on this route may carry update blocks and `defer_loading` at all.

        Checks the dialect too, so a route that got past the check (a bug) still never sends
        updates over the openai-sdk client.
        """
        return self.tool_update != "none" and self.dialect != "openai-sdk"

    @property
    def system_in_history(self) -> bool:
        """Later instructions travel as text blocks in the history (the top text stays the first).

        Only on routes that send updates: a `none` route has no blocks, so its current text goes on
        top.
        """
        return self.system_prompt == "in-history" and self.sends_tool_updates

    @property
    def display_label(self) -> str:
        """The label in the current language (built-in labels are in the catalogs), or the id."""
        return _(self.label) if self.label else self.id

    def key_state(self) -> KeyState:
        """Whether the key this route needs is in the environment (never the key itself)."""
        if self.api_key_env is None:
            return "not-needed"
        return "set" if os.environ.get(self.api_key_env, "").strip() else "missing"


BUILTIN_ROUTES: tuple[Route, ...] = (
    Route(
        id="deepseek/deepseek-flash",
        label=N_("DeepSeek V4 Flash"),
        dialect="deepseek-chat",
        model="deepseek-v4-flash",
        base_url="https://api.deepseek.com",
        api_key_env="DEEPSEEK_API_KEY",
        tool_update="addition-only",
        system_prompt="top",
        context_window=1_000_000,
        max_output_tokens=384_000,
    ),
    Route(
        id="deepseek/deepseek-pro",
        label=N_("DeepSeek V4 Pro"),
        dialect="deepseek-chat",
        model="deepseek-v4-pro",
        base_url="https://api.deepseek.com",
        api_key_env="DEEPSEEK_API_KEY",
        tool_update="addition-only",
        system_prompt="top",
        context_window=1_000_000,
        max_output_tokens=384_000,
    ),
    Route(
        id="anthropic/claude-sonnet",
        label=N_("Claude Sonnet"),
        dialect="anthropic-messages",
        model="claude-sonnet-4-6",
        base_url="https://api.anthropic.com",
        api_key_env="ANTHROPIC_API_KEY",
        tool_update="in-history",
        system_prompt="in-history",
        context_window=200_000,
        max_output_tokens=64_000,
    ),
    Route(
        id="anthropic/deepseek",
        label=N_("DeepSeek V4 Flash (Anthropic API)"),
        dialect="anthropic-messages",
        model="deepseek-v4-flash",
        base_url="https://api.deepseek.com/anthropic",
        api_key_env="DEEPSEEK_API_KEY",
        tool_update="in-history",
        system_prompt="in-history",
        context_window=1_000_000,
        max_output_tokens=384_000,
    ),
    Route(
        id="openai/gpt",
        label=N_("OpenAI GPT"),
        dialect="openai-sdk",
        model="gpt-5",
        base_url="https://api.openai.com/v1",
        api_key_env="OPENAI_API_KEY",
        tool_update="none",
        system_prompt="top",
        context_window=400_000,
        max_output_tokens=128_000,
    ),
    Route(
        id="offline/demo",
        label=N_("Offline demo model"),
        dialect="offline",
        model="toolscope-demo",
        # Never dialled: the offline transport answers in-process. `.invalid` cannot resolve.
        base_url="http://offline.invalid",
        api_key_env=None,
        tool_update="in-history",
        system_prompt="in-history",
        context_window=32_768,
        max_output_tokens=4_096,
    ),
)


class RouteConfigError(Exception):
    """A `[[routes]]` table that cannot be used, or an unknown route id (the CLI exits with 2)."""

    def __init__(
        self, message: str, *, route_id: str | None = None, key: str | None = None
    ) -> None:
        super().__init__(message)
        self.route_id = route_id
        self.key = key


class UnknownRouteError(RouteConfigError):
    """A route id the catalog does not have."""


class RouteCatalog:
    """The routes in catalog order (built-ins first, then added ones), looked up by id."""

    def __init__(self, routes: Iterable[Route]) -> None:
        self._routes: dict[str, Route] = {}
        for route in routes:
            if route.id in self._routes:
                raise ValueError(f"duplicate route id {route.id!r}")
            self._routes[route.id] = route

    def get(self, route_id: str) -> Route:
        route = self._routes.get(route_id)
        if route is None:
            raise UnknownRouteError(
                _("unknown route '{route}' (known routes: {known})").format(
                    route=route_id, known=", ".join(self._routes)
                ),
                route_id=route_id,
            )
        return route

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(self._routes)

    def __iter__(self) -> Iterator[Route]:
        return iter(self._routes.values())

    def __len__(self) -> int:
        return len(self._routes)

    def __contains__(self, route_id: object) -> bool:
        return route_id in self._routes


# --- [[routes]] tables ----------------------------------------------------------------------------

ROUTE_KEYS: tuple[str, ...] = tuple(field.name for field in fields(Route))
NEW_ROUTE_KEYS = ("dialect", "model", "base_url")
"""What a table adding a route must give; the other keys have defaults (the label is the id)."""
_ROUTE_DEFAULTS = {field.name: field.default for field in fields(Route) if field.default is not MISSING}

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def load_catalog(overrides: Sequence[Mapping[str, Any]] = ()) -> RouteCatalog:
    """The built-in catalog with config `[[routes]]` tables applied in order.

    A table whose `id` names a built-in replaces the keys it gives; any other id adds a route after
    the built-ins. Raises `RouteConfigError` for the first problem found.
    """
    routes = {route.id: route for route in BUILTIN_ROUTES}
    configured: set[str] = set()
    for number, table in enumerate(overrides, start=1):
        route_id = _table_id(number, table)
        if route_id in configured:
            raise _table_error(route_id, None, _("defined more than once"))
        configured.add(route_id)
        values = _checked_values(route_id, table)
        built_in = routes.get(route_id)
        if built_in is None:
            missing = [key for key in NEW_ROUTE_KEYS if key not in values]
            if missing:
                raise _table_error(
                    route_id,
                    missing[0],
                    _("a new route needs {keys}; missing '{key}'").format(
                        keys=", ".join(NEW_ROUTE_KEYS), key=missing[0]
                    ),
                )
            merged = {**_ROUTE_DEFAULTS, "label": route_id, **values}
        else:
            # A built-in's TTL and caching are its provider's defaults, worked out again from the
            # keys the table changes (`cache_write = "1h"` makes an hour) unless the table names them.
            merged = {**asdict(built_in), "cache_ttl": None, "cache_control": None, **values}
        _check_combination(route_id, merged, values)
        routes[route_id] = Route(**merged)
    return RouteCatalog(routes.values())


def _table_id(number: int, table: Mapping[str, Any]) -> str:
    if "id" not in table:
        raise RouteConfigError(
            _("[[routes]] table {number}: missing key 'id'").format(number=number), key="id"
        )
    route_id = table["id"]
    if not isinstance(route_id, str) or not route_id.strip():
        raise RouteConfigError(
            _("[[routes]] table {number}: 'id' must be a non-empty string").format(number=number),
            key="id",
        )
    return route_id


def _table_error(route_id: str, key: str | None, problem: str) -> RouteConfigError:
    return RouteConfigError(
        _('[[routes]] id="{route}": {problem}').format(route=route_id, problem=problem),
        route_id=route_id,
        key=key,
    )


def _checked_values(route_id: str, table: Mapping[str, Any]) -> dict[str, Any]:
    """The table's values, each checked, in a form `Route` accepts (`api_key_env = ""` → None)."""
    for key in table:
        if key not in ROUTE_KEYS:
            raise _table_error(route_id, key, _unknown_key(key))
    values: dict[str, Any] = {}
    for key in ROUTE_KEYS:
        if key in table:
            problem = _CHECKS[key](key, table[key])
            if problem is not None:
                raise _table_error(route_id, key, problem)
            values[key] = table[key]
    if values.get("api_key_env") == "":
        values["api_key_env"] = None
    if "retryable" in values:
        values["retryable"] = tuple(values["retryable"])
    return values


def _unknown_key(key: str) -> str:
    close = difflib.get_close_matches(key, ROUTE_KEYS, n=1)
    if close:
        return _("unknown key '{key}' (did you mean '{suggestion}'?)").format(
            key=key, suggestion=close[0]
        )
    return _("unknown key '{key}'").format(key=key)


def _check_combination(route_id: str, merged: Mapping[str, Any], values: Mapping[str, Any]) -> None:
    if merged["dialect"] == "openai-sdk" and merged["tool_update"] != "none":
        raise _table_error(route_id, "tool_update", _openai_sdk_rule())
    for key in ("cache_write", "cache_control"):
        if key in values and merged["dialect"] != "anthropic-messages":
            raise _table_error(
                route_id, key, _("'{key}' is only for anthropic-messages routes").format(key=key)
            )
    if merged["max_output_tokens"] > merged["context_window"]:
        raise _table_error(
            route_id,
            "max_output_tokens",
            _("'max_output_tokens' must not exceed 'context_window'"),
        )


# Each check returns None for a good value, or the problem naming `key`. Values are never echoed
# back: a misplaced API key must not end up in an error message.

ValueCheck = Callable[[str, Any], str | None]


def _one_of(choices: tuple[str, ...]) -> ValueCheck:
    def check(key: str, value: Any) -> str | None:
        if isinstance(value, str) and value in choices:
            return None
        return _("'{key}' must be one of {choices}").format(key=key, choices=", ".join(choices))

    return check


def _non_empty_string(key: str, value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return None
    return _("'{key}' must be a non-empty string").format(key=key)


def _http_url(key: str, value: Any) -> str | None:
    if isinstance(value, str) and re.fullmatch(r"https?://\S+", value):
        return None
    return _("'{key}' must be an http:// or https:// URL").format(key=key)


def _env_name(key: str, value: Any) -> str | None:
    if isinstance(value, str) and (value == "" or _ENV_NAME.fullmatch(value)):
        return None
    return _("'{key}' must be the name of an environment variable (\"\" for none)").format(key=key)


def _header_value(key: str, value: Any) -> str | None:
    if isinstance(value, str) and "\n" not in value and "\r" not in value:
        return None
    return _("'{key}' must be a single-line string (\"\" sends no beta header)").format(key=key)


def _header_name(key: str, value: Any) -> str | None:
    if isinstance(value, str) and (value == "" or _HEADER_NAME.fullmatch(value)):
        return None
    return _("'{key}' must be an HTTP header name (\"\" sends no beta header)").format(key=key)


def _positive_number(key: str, value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return None
    return _("'{key}' must be a positive number of seconds").format(key=key)


def _count(key: str, value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return None
    return _("'{key}' must be a whole number, 0 or more").format(key=key)


def _failure_codes(key: str, value: Any) -> str | None:
    if isinstance(value, list) and all(code in FAILURE_CODES for code in value):
        return None
    return _("'{key}' must be a list of failure codes from {codes}").format(
        key=key, codes=", ".join(sorted(FAILURE_CODES))
    )


def _boolean(key: str, value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    return _("'{key}' must be true or false").format(key=key)


def _positive_int(key: str, value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return None
    return _("'{key}' must be a positive integer").format(key=key)


_CHECKS: dict[str, ValueCheck] = {
    "id": _non_empty_string,
    "dialect": _one_of(get_args(Dialect)),
    "model": _non_empty_string,
    "base_url": _http_url,
    "api_key_env": _env_name,
    "tool_update": _one_of(get_args(ToolUpdateMode)),
    "system_prompt": _one_of(get_args(SystemPromptMode)),
    "tool_update_beta": _header_value,
    "beta_header": _header_name,
    "context_window": _positive_int,
    "max_output_tokens": _positive_int,
    "label": _non_empty_string,
    "max_retries": _count,
    "retry_base_delay": _positive_number,
    "retry_max_delay": _positive_number,
    "retryable": _failure_codes,
    "idle_timeout": _positive_number,
    "request_timeout": _positive_number,
    "reasoning_history": _one_of(get_args(ReasoningHistory)),
    "cache_ttl": _positive_number,
    "cache_write": _one_of(get_args(CacheWrite)),
    "cache_control": _boolean,
}

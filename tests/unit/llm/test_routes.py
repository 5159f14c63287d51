"""The route catalog (docs/architecture.md §8): built-in entries, `[[routes]]` overrides and additions, and the
error each bad table gets."""

from __future__ import annotations

import gettext
from dataclasses import replace

import pytest

import app.i18n
from app.llm.routes import (
    BUILTIN_ROUTES,
    DEFAULT_BETA_HEADER,
    DEFAULT_TOOL_UPDATE_BETA,
    Route,
    RouteConfigError,
    UnknownRouteError,
    load_catalog,
)

NEW_ROUTE = {
    "id": "local/llama",
    "dialect": "deepseek-chat",
    "model": "llama",
    "base_url": "http://localhost:8080",
}


def test_builtin_routes_in_catalog_order():
    catalog = load_catalog()
    assert catalog.ids == (
        "deepseek/deepseek-flash",
        "deepseek/deepseek-pro",
        "anthropic/claude-sonnet",
        "anthropic/deepseek",
        "openai/gpt",
        "offline/demo",
    )
    assert tuple(catalog) == BUILTIN_ROUTES
    assert len(catalog) == 6 and "offline/demo" in catalog and "nope" not in catalog


@pytest.mark.parametrize(
    ("route_id", "dialect", "base_url", "key", "tool_update", "system_prompt"),
    [
        (
            "deepseek/deepseek-flash",
            "deepseek-chat",
            "https://api.deepseek.com",
            "DEEPSEEK_API_KEY",
            "addition-only",
            "top",
        ),
        (
            "deepseek/deepseek-pro",
            "deepseek-chat",
            "https://api.deepseek.com",
            "DEEPSEEK_API_KEY",
            "addition-only",
            "top",
        ),
        (
            "anthropic/claude-sonnet",
            "anthropic-messages",
            "https://api.anthropic.com",
            "ANTHROPIC_API_KEY",
            "in-history",
            "in-history",
        ),
        (
            "anthropic/deepseek",
            "anthropic-messages",
            "https://api.deepseek.com/anthropic",
            "DEEPSEEK_API_KEY",
            "in-history",
            "in-history",
        ),
        ("openai/gpt", "openai-sdk", "https://api.openai.com/v1", "OPENAI_API_KEY", "none", "top"),
        ("offline/demo", "offline", "http://offline.invalid", None, "in-history", "in-history"),
    ],
)
def test_builtin_route(route_id, dialect, base_url, key, tool_update, system_prompt):
    route = load_catalog().get(route_id)
    assert (route.dialect, route.base_url, route.api_key_env) == (dialect, base_url, key)
    assert (route.tool_update, route.system_prompt) == (tool_update, system_prompt)
    assert (route.beta_header, route.tool_update_beta) == (
        DEFAULT_BETA_HEADER,
        DEFAULT_TOOL_UPDATE_BETA,
    )
    assert 0 < route.max_output_tokens <= route.context_window
    assert route.model and route.label


def test_key_state_says_whether_the_key_is_in_the_environment(monkeypatch):
    catalog = load_catalog()
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_API_KEY", "  ")
    assert catalog.get("deepseek/deepseek-flash").key_state() == "set"
    assert catalog.get("openai/gpt").key_state() == "missing"  # blank counts as missing
    monkeypatch.delenv("DEEPSEEK_API_KEY")
    assert catalog.get("deepseek/deepseek-flash").key_state() == "missing"
    assert catalog.get("offline/demo").key_state() == "not-needed"


def test_unknown_route_lists_the_known_ones():
    with pytest.raises(UnknownRouteError) as caught:
        load_catalog().get("anthropic/claude")
    message = str(caught.value)
    assert "'anthropic/claude'" in message
    assert all(route.id in message for route in BUILTIN_ROUTES)
    assert (
        isinstance(caught.value, RouteConfigError) and caught.value.route_id == "anthropic/claude"
    )


def test_a_table_naming_a_builtin_overrides_only_its_keys():
    catalog = load_catalog(
        [{"id": "deepseek/deepseek-flash", "tool_update": "in-history", "label": "Flash"}]
    )
    route = catalog.get("deepseek/deepseek-flash")
    builtin = BUILTIN_ROUTES[0]
    assert (route.tool_update, route.label) == ("in-history", "Flash")
    assert (
        replace(route, tool_update=builtin.tool_update, label=builtin.label)
        == builtin
    )
    assert catalog.ids == load_catalog().ids


def test_a_table_with_a_new_id_adds_a_route_after_the_builtins():
    catalog = load_catalog(
        [NEW_ROUTE, {**NEW_ROUTE, "id": "local/qwen", "tool_update": "addition-only"}]
    )
    assert catalog.ids[-2:] == ("local/llama", "local/qwen")
    llama = catalog.get("local/llama")
    assert (llama.label, llama.display_label, llama.api_key_env) == (
        "local/llama",
        "local/llama",
        None,
    )
    assert (llama.tool_update, llama.system_prompt) == ("none", "top")
    assert catalog.get("local/qwen").tool_update == "addition-only"


def test_an_empty_api_key_env_means_no_key():
    route = load_catalog([{"id": "anthropic/deepseek", "api_key_env": ""}]).get(
        "anthropic/deepseek"
    )
    assert route.api_key_env is None


def test_an_empty_beta_header_is_allowed():
    route = load_catalog([{"id": "offline/demo", "beta_header": ""}]).get("offline/demo")
    assert route.beta_header == ""


@pytest.mark.parametrize(
    ("table", "key", "message"),
    [
        (
            {"id": "x", "tool_updte": "none"},
            "tool_updte",
            """[[routes]] id="x": unknown key 'tool_updte' (did you mean 'tool_update'?)""",
        ),
        ({"id": "x", "colour": "red"}, "colour", """[[routes]] id="x": unknown key 'colour'"""),
        (
            {"id": "deepseek/deepseek-flash", "tool_update": "always"},
            "tool_update",
            (
                """[[routes]] id="deepseek/deepseek-flash": """
                """'tool_update' must be one of none, addition-only, in-history"""
            ),
        ),
        (
            {"id": "offline/demo", "system_prompt": "bottom"},
            "system_prompt",
            """[[routes]] id="offline/demo": 'system_prompt' must be one of top, in-history""",
        ),
        (
            {**NEW_ROUTE, "dialect": "grpc"},
            "dialect",
            (
                """[[routes]] id="local/llama": """
                "'dialect' must be one of deepseek-chat, anthropic-messages, openai-sdk, offline"
            ),
        ),
        (
            {"id": "openai/gpt", "tool_update": "addition-only"},
            "tool_update",
            (
                """[[routes]] id="openai/gpt": """
                """openai-sdk routes can only use tool_update = "none\""""
            ),
        ),
        (
            {**NEW_ROUTE, "dialect": "openai-sdk", "tool_update": "in-history"},
            "tool_update",
            (
                """[[routes]] id="local/llama": """
                """openai-sdk routes can only use tool_update = "none\""""
            ),
        ),
        (
            {"id": "offline/demo", "dialect": "openai-sdk"},
            "tool_update",
            (
                """[[routes]] id="offline/demo": """
                """openai-sdk routes can only use tool_update = "none\""""
            ),
        ),
        (
            {"id": "local/llama", "model": "llama"},
            "dialect",
            (
                """[[routes]] id="local/llama": """
                """a new route needs dialect, model, base_url; missing 'dialect'"""
            ),
        ),
        (
            {**NEW_ROUTE, "base_url": "localhost:8080"},
            "base_url",
            """[[routes]] id="local/llama": 'base_url' must be an http:// or https:// URL""",
        ),
        (
            {"id": "openai/gpt", "model": ""},
            "model",
            """[[routes]] id="openai/gpt": 'model' must be a non-empty string""",
        ),
        (
            {"id": "openai/gpt", "context_window": True},
            "context_window",
            """[[routes]] id="openai/gpt": 'context_window' must be a positive integer""",
        ),
        (
            {"id": "openai/gpt", "max_output_tokens": 0},
            "max_output_tokens",
            """[[routes]] id="openai/gpt": 'max_output_tokens' must be a positive integer""",
        ),
        (
            {"id": "openai/gpt", "context_window": 100_000},
            "max_output_tokens",
            (
                """[[routes]] id="openai/gpt": """
                """'max_output_tokens' must not exceed 'context_window'"""
            ),
        ),
        (
            {"id": "offline/demo", "beta_header": "anthropic beta"},
            "beta_header",
            (
                """[[routes]] id="offline/demo": """
                """'beta_header' must be an HTTP header name ("" sends no beta header)"""
            ),
        ),
        (
            {"id": "offline/demo", "tool_update_beta": "a\nb"},
            "tool_update_beta",
            (
                """[[routes]] id="offline/demo": """
                """'tool_update_beta' must be a single-line string ("" sends no beta header)"""
            ),
        ),
        (
            {"id": "openai/gpt", "cache_ttl": 0},
            "cache_ttl",
            """[[routes]] id="openai/gpt": 'cache_ttl' must be a positive number of seconds""",
        ),
        (
            {"id": "openai/gpt", "cache_ttl": "5m"},
            "cache_ttl",
            """[[routes]] id="openai/gpt": 'cache_ttl' must be a positive number of seconds""",
        ),
        (
            {"id": "anthropic/claude-sonnet", "cache_write": "24h"},
            "cache_write",
            """[[routes]] id="anthropic/claude-sonnet": 'cache_write' must be one of 5m, 1h""",
        ),
        (
            {"id": "deepseek/deepseek-flash", "cache_write": "5m"},
            "cache_write",
            (
                """[[routes]] id="deepseek/deepseek-flash": """
                """'cache_write' is only for anthropic-messages routes"""
            ),
        ),
        (
            {**NEW_ROUTE, "dialect": "openai-sdk", "cache_write": "1h"},
            "cache_write",
            """[[routes]] id="local/llama": 'cache_write' is only for anthropic-messages routes""",
        ),
        (
            {"id": "anthropic/claude-sonnet", "cache_control": "yes"},
            "cache_control",
            """[[routes]] id="anthropic/claude-sonnet": 'cache_control' must be true or false""",
        ),
        (
            {"id": "deepseek/deepseek-flash", "cache_control": True},
            "cache_control",
            (
                """[[routes]] id="deepseek/deepseek-flash": """
                """'cache_control' is only for anthropic-messages routes"""
            ),
        ),
        ({"model": "m"}, "id", "[[routes]] table 1: missing key 'id'"),
        ({"id": 7}, "id", "[[routes]] table 1: 'id' must be a non-empty string"),
    ],
)
def test_bad_tables_name_the_route_and_the_key(table, key, message):
    with pytest.raises(RouteConfigError) as caught:
        load_catalog([table])
    assert str(caught.value) == message
    assert caught.value.key == key


def test_a_route_defined_twice_is_refused():
    with pytest.raises(RouteConfigError, match=r'id="local/llama": defined more than once'):
        load_catalog([NEW_ROUTE, {"id": "local/llama", "label": "again"}])


def test_a_secret_in_the_wrong_key_is_not_echoed():
    with pytest.raises(RouteConfigError) as caught:
        load_catalog([{"id": "deepseek/deepseek-pro", "api_key_env": "sk-live-0123456789"}])
    assert "sk-live" not in str(caught.value)
    assert "'api_key_env' must be the name of an environment variable" in str(caught.value)


def test_the_openai_sdk_rule_holds_for_routes_built_in_code():
    with pytest.raises(ValueError, match="openai-sdk routes can only use"):
        Route(
            id="o", dialect="openai-sdk", model="m", base_url="https://x", tool_update="in-history"
        )


def test_capabilities_a_route_actually_has():
    catalog = load_catalog()
    assert [r.id for r in catalog if r.sends_tool_updates] == [
        "deepseek/deepseek-flash",
        "deepseek/deepseek-pro",
        "anthropic/claude-sonnet",
        "anthropic/deepseek",
        "offline/demo",
    ]
    demo = catalog.get("offline/demo")
    assert demo.system_in_history
    assert not replace(demo, tool_update="none").system_in_history


class _Marking(gettext.NullTranslations):
    """A stand-in catalog that marks every string it translates."""

    def gettext(self, message: str) -> str:
        return f"<{message}>"


def test_messages_and_labels_are_translated_when_shown(monkeypatch):
    demo = load_catalog().get("offline/demo")
    monkeypatch.setattr(app.i18n, "_translations", _Marking())
    assert demo.display_label == "<Offline demo model>"
    with pytest.raises(RouteConfigError) as caught:
        load_catalog([{"id": "offline/demo", "colour": "red"}])
    assert str(caught.value) == """<[[routes]] id="offline/demo": <unknown key 'colour'>>"""


# --- per-route cache settings (issue 27) ---------------------------------------------------------

_MINUTE, _HOUR = 60.0, 3600.0


@pytest.mark.parametrize(
    ("route_id", "ttl"),
    [
        ("deepseek/deepseek-flash", 3 * _HOUR),  # DeepSeek's disk cache: "hours to days"
        ("deepseek/deepseek-pro", 3 * _HOUR),
        ("anthropic/claude-sonnet", 5 * _MINUTE),  # Anthropic's default 5-minute cache
        ("anthropic/deepseek", 3 * _HOUR),  # DeepSeek's cache behind its Anthropic endpoint
        ("openai/gpt", 24 * _HOUR),  # OpenAI's 24h retention, the default without ZDR
    ],
)
def test_each_builtin_route_has_its_providers_cache_ttl(route_id, ttl):
    route = load_catalog().get(route_id)
    assert route.cache_ttl == ttl
    assert route.cache_write == "5m"


def test_the_offline_cache_never_expires_within_any_session():
    assert load_catalog().get("offline/demo").cache_ttl >= 100 * 365 * 24 * _HOUR


def test_one_hour_writes_make_the_anthropic_ttl_an_hour():
    catalog = load_catalog(
        [
            {"id": "anthropic/claude-sonnet", "cache_write": "1h"},
            {"id": "anthropic/deepseek", "cache_write": "1h"},
        ]
    )
    sonnet = catalog.get("anthropic/claude-sonnet")
    assert (sonnet.cache_write, sonnet.cache_ttl) == ("1h", _HOUR)
    # DeepSeek keeps its own disk cache whatever the write duration asked for.
    assert catalog.get("anthropic/deepseek").cache_ttl == 3 * _HOUR


def test_a_route_names_its_own_cache_ttl():
    catalog = load_catalog(
        [
            {"id": "openai/gpt", "cache_ttl": 300},
            {"id": "anthropic/claude-sonnet", "cache_write": "1h", "cache_ttl": 1800.5},
            {**NEW_ROUTE, "cache_ttl": 42},
        ]
    )
    assert catalog.get("openai/gpt").cache_ttl == 300
    assert catalog.get("anthropic/claude-sonnet").cache_ttl == 1800.5
    assert catalog.get("local/llama").cache_ttl == 42


def test_an_added_route_gets_a_cache_ttl_from_its_dialect_and_host():
    catalog = load_catalog(
        [
            NEW_ROUTE,  # a local server's in-memory prefix cache: the short end
            {**NEW_ROUTE, "id": "local/claude", "dialect": "anthropic-messages"},
            {
                **NEW_ROUTE,
                "id": "local/claude-1h",
                "dialect": "anthropic-messages",
                "cache_write": "1h",
            },
            {**NEW_ROUTE, "id": "ds/v4", "base_url": "https://api.deepseek.com/v1"},
        ]
    )
    assert catalog.get("local/llama").cache_ttl == 5 * _MINUTE
    assert catalog.get("local/claude").cache_ttl == 5 * _MINUTE
    assert catalog.get("local/claude-1h").cache_ttl == _HOUR
    assert catalog.get("ds/v4").cache_ttl == 3 * _HOUR


def test_only_anthropics_own_api_is_asked_to_cache_unless_a_route_says_otherwise():
    """Anthropic caches only what a request asks for; another Anthropic-format server may not know
    the field. A table's `cache_control` decides, and a built-in moved to another host asks again."""
    assert [route.id for route in load_catalog() if route.cache_control] == ["anthropic/claude-sonnet"]
    catalog = load_catalog(
        [
            {"id": "anthropic/claude-sonnet", "cache_control": False},
            {"id": "anthropic/deepseek", "cache_control": True},
            {**NEW_ROUTE, "id": "local/claude", "dialect": "anthropic-messages"},
            {**NEW_ROUTE, "id": "proxy/claude", "dialect": "anthropic-messages", "cache_control": True},
        ]
    )
    assert [route.id for route in catalog if route.cache_control] == ["anthropic/deepseek", "proxy/claude"]
    moved = load_catalog([{"id": "anthropic/claude-sonnet", "base_url": "http://127.0.0.1:8080"}])
    assert not moved.get("anthropic/claude-sonnet").cache_control

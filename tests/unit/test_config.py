"""config.toml: what it accepts, and errors that name the file and the key a user has to fix."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app import i18n
from app.config import Config, ConfigError, load_config, parse_config
from app.paths import config_file

FULL = """
[defaults]
route = "offline/demo"
lang = "zh_CN"
theme = "textual-dark"

[plugins]
enabled = ["clock", "notes"]

[mcp.servers.git]
command = "uvx"
args = ["mcp-server-git", "--repository", "."]
env = { GIT_PAGER = "cat" }
restart = true

[mcp.servers.time]
command = "mcp-time"

[[routes]]
id = "deepseek/deepseek-flash"
tool_update = "none"

[[routes]]
id = "local/llama"
dialect = "openai-sdk"
"""


def _error(text: str, name: str = "config.toml") -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, Path(name))
    return str(caught.value)


@pytest.fixture
def english() -> Iterator[None]:
    i18n.set_language("en")
    yield
    i18n.set_language("en")


def test_no_file_means_defaults() -> None:
    config = load_config(None)
    assert config == Config()
    assert config.defaults.route is None and config.defaults.lang is None
    assert config.plugins.enabled == [] and config.mcp.servers == {} and config.routes == []
    assert config.source is None


def test_every_section_is_read(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(FULL, encoding="utf-8")
    config = load_config(path)
    assert config.source == path
    assert config.defaults.route == "offline/demo"
    assert config.defaults.lang == "zh_CN"
    assert config.defaults.theme == "textual-dark"
    assert config.plugins.enabled == ["clock", "notes"]
    git = config.mcp.servers["git"]
    assert (git.command, git.args, git.env, git.restart) == (
        "uvx",
        ["mcp-server-git", "--repository", "."],
        {"GIT_PAGER": "cat"},
        True,
    )
    time = config.mcp.servers["time"]
    assert (time.args, time.env, time.restart) == ([], {}, False)
    # Route tables are passed through untouched; the route catalog validates them.
    assert config.routes == [
        {"id": "deepseek/deepseek-flash", "tool_update": "none"},
        {"id": "local/llama", "dialect": "openai-sdk"},
    ]


def test_unknown_key_names_file_table_and_key(english: None) -> None:
    assert _error('[defaults]\nrout = "x"\n') == "config.toml: [defaults] unknown key 'rout'"


def test_unknown_key_in_a_named_server_table(english: None) -> None:
    message = _error('[mcp.servers.git]\ncommand = "git"\ncmd = "git"\n', "/home/u/.config/x.toml")
    assert message == "/home/u/.config/x.toml: [mcp.servers.git] unknown key 'cmd'"


def test_unknown_top_level_table(english: None) -> None:
    assert _error("[plugin]\nenabled = []\n") == "config.toml: unknown key 'plugin'"


def test_unknown_keys_are_reported_before_other_problems(english: None) -> None:
    message = _error('[defaults]\nlang = 3\nrout = "x"\n')
    assert message == "config.toml: [defaults] unknown key 'rout' (and 1 more problem)"


def test_missing_required_key(english: None) -> None:
    assert _error("[mcp.servers.git]\nargs = []\n") == "config.toml: [mcp.servers.git] missing key 'command'"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[defaults]\nroute = 1\n', "[defaults] route: expected a string"),
        ('[plugins]\nenabled = "clock"\n', "[plugins] enabled: expected an array"),
        ("[plugins]\nenabled = [1]\n", "[plugins] enabled[0]: expected a string"),
        ('[mcp.servers.git]\ncommand = "git"\nrestart = "yes"\n', "[mcp.servers.git] restart: expected true or false"),
        ('[mcp.servers.git]\ncommand = "git"\nenv = { A = 1 }\n', "[mcp.servers.git.env] A: expected a string"),
        ('mcp = "on"\n', "mcp: expected a table"),
        ("routes = [1]\n", "routes[0]: expected a table"),
    ],
)
def test_wrong_types_are_refused_not_coerced(text: str, expected: str, english: None) -> None:
    assert _error(text) == f"config.toml: {expected}"


def test_unsupported_language_is_a_config_error(english: None) -> None:
    assert _error('[defaults]\nlang = "fr"\n') == (
        "config.toml: [defaults] lang: unsupported language 'fr' (available: en, zh_CN)"
    )


def test_invalid_toml(english: None) -> None:
    assert _error("[defaults\n").startswith("config.toml: invalid TOML: ")


def test_named_file_must_exist(tmp_path: Path, english: None) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match="nope.toml: config file not found"):
        load_config(missing)


def test_errors_follow_the_language(english: None) -> None:
    i18n.set_language("zh_CN")
    assert _error('[defaults]\nrout = "x"\n') == "config.toml: [defaults] 未知的键 'rout'"


def test_config_file_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSCOPE_HOME", str(tmp_path))
    monkeypatch.delenv("TOOLSCOPE_CONFIG", raising=False)
    assert config_file() is None  # no default file: defaults, not an error
    default = tmp_path / "config.toml"
    default.write_text("", encoding="utf-8")
    assert config_file() == default
    monkeypatch.setenv("TOOLSCOPE_CONFIG", str(tmp_path / "env.toml"))
    assert config_file() == tmp_path / "env.toml"
    assert config_file("given.toml") == Path("given.toml")


def test_compaction_settings_are_read_and_checked(english: None) -> None:
    config = parse_config("[compaction]\nauto = false\nshare = 0.5\n", Path("config.toml"))
    assert (config.compaction.auto, config.compaction.share) == (False, 0.5)
    assert Config().compaction.share == 0.8
    assert "[compaction]" in _error("[compaction]\nshare = 1.5\n")
    assert "unknown key 'sharing'" in _error("[compaction]\nsharing = 0.5\n")


def test_tools_settings_are_read_and_checked(english: None) -> None:
    config = parse_config('[tools]\nextra_roots = ["~/notes"]\ncommand_timeout = 30\n', Path("config.toml"))
    assert (config.tools.extra_roots, config.tools.command_timeout) == (["~/notes"], 30)
    assert "[tools]" in _error("[tools]\ncommand_timeout = 0\n")
    assert "[tools]" in _error('[tools]\nextra_roots = "~/notes"\n')

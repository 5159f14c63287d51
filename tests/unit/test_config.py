"""config.toml: what it accepts, and errors that name the file and the key a user has to fix."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app import i18n
from app.config import (
    Config,
    ConfigError,
    load_config,
    parse_config,
    save_plugin_switch,
    save_server_switch,
)
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


def test_a_server_needs_a_command_or_a_url(english: None) -> None:
    assert _error("[mcp.servers.git]\nargs = []\n") == (
        "config.toml: [mcp.servers.git] needs 'command' (a server it starts) or 'url' (a server it connects to)"
    )


def test_a_remote_server_has_a_url_headers_and_the_name_of_its_token_variable() -> None:
    text = (
        '[mcp.servers.lab]\nurl = "https://mcp.example.com/mcp"\nheaders = { X-Team = "tools" }\n'
        'bearer_token_env = "LAB_TOKEN"\nrestart = true\n'
    )
    lab = parse_config(text, Path("c.toml")).mcp.servers["lab"]
    assert (lab.url, lab.headers, lab.bearer_token_env, lab.command, lab.restart) == (
        "https://mcp.example.com/mcp",
        {"X-Team": "tools"},
        "LAB_TOKEN",
        None,
        True,
    )


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('command = "uvx"\nurl = "http://x/mcp"\n', "has both 'command' and 'url'; keep one"),
        ('command = "uvx"\nbearer_token_env = "T"\n', "'bearer_token_env' is only for a server with 'url'"),
        ('url = "http://x/mcp"\nargs = ["a"]\n', "'args' is only for a server with 'command'"),
    ],
)
def test_a_server_table_mixing_the_transports_is_refused(table: str, expected: str, english: None) -> None:
    assert _error(f"[mcp.servers.lab]\n{table}") == f"config.toml: [mcp.servers.lab] {expected}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[defaults]\nroute = 1\n', "[defaults] route: expected a string"),
        ('[plugins]\nenabled = "clock"\n', "[plugins] enabled: expected an array"),
        ("[plugins]\nenabled = [1]\n", "[plugins] enabled[0]: expected a string"),
        ('[mcp.servers.git]\ncommand = "git"\nrestart = "yes"\n', "[mcp.servers.git] restart: expected true or false"),
        ('[mcp.servers.git]\ncommand = "git"\nenv = { A = 1 }\n', "[mcp.servers.git.env] A: expected a string"),
        ('[mcp.servers.lab]\nurl = "http://x/mcp"\nheaders = { A = 1 }\n', "[mcp.servers.lab.headers] A: expected a string"),
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


def test_remember_switches_and_server_enabled_are_read_and_checked(english: None) -> None:
    assert Config().tools.remember_switches == "config"
    config = parse_config(
        '[tools]\nremember_switches = "session"\n[mcp.servers.git]\ncommand = "uvx"\nenabled = false\n',
        Path("config.toml"),
    )
    assert config.tools.remember_switches == "session"
    assert config.mcp.servers["git"].enabled is False
    assert parse_config('[mcp.servers.git]\ncommand = "uvx"\n', Path("c.toml")).mcp.servers["git"].enabled
    assert _error('[tools]\nremember_switches = "always"\n') == (
        'config.toml: [tools] remember_switches: must be one of: "session", "config"'
    )
    assert "expected true or false" in _error('[mcp.servers.git]\ncommand = "uvx"\nenabled = "no"\n')


# --- saving a switch -----------------------------------------------------------------------------

USERS_FILE = """\
# toolscope, as I like it
mcp.servers.git = { command = "uvx", args = ["mcp-server-git"] }

[defaults]
route = "offline/demo"   # no key needed

[plugins]
enabled = [
    "clock",  # first
]

[mcp.servers.lab]
command = "lab"
enabled = false  # only when I ask
"""


def test_a_saved_switch_changes_one_value_and_keeps_the_rest_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(USERS_FILE)
    path.chmod(0o640)
    save_plugin_switch(path, "calculator", True)
    save_server_switch(path, "git", False)
    save_server_switch(path, "lab", True)
    text = path.read_text()
    assert text == USERS_FILE.replace('    "clock",  # first\n', '    "clock",  # first\n    "calculator",\n').replace(
        '"mcp-server-git"] }', '"mcp-server-git"], enabled = false}'
    ).replace("enabled = false  # only", "enabled = true  # only")
    config = load_config(path)
    assert config.plugins.enabled == ["clock", "calculator"]
    assert (config.mcp.servers["git"].enabled, config.mcp.servers["lab"].enabled) == (False, True)
    assert path.stat().st_mode & 0o777 == 0o640

    save_plugin_switch(path, "clock", False)
    save_server_switch(path, "git", True)  # says `enabled` already: set, not removed
    config = load_config(path)
    assert config.plugins.enabled == ["calculator"] and config.mcp.servers["git"].enabled
    assert "# toolscope, as I like it" in path.read_text() and "# no key needed" in path.read_text()
    assert [entry.name for entry in tmp_path.iterdir()] == ["config.toml"]  # no temporary left


def test_a_server_switched_on_that_never_said_enabled_leaves_the_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[mcp.servers.git]\ncommand = "uvx"\n')
    save_server_switch(path, "git", True)
    assert path.read_text() == '[mcp.servers.git]\ncommand = "uvx"\n'


def test_a_missing_file_is_created_private(tmp_path: Path) -> None:
    path = tmp_path / "home" / "config.toml"
    save_plugin_switch(path, "clock", True)
    assert path.read_text() == '[plugins]\nenabled = ["clock"]\n'
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_symlinked_config_stays_a_symlink_and_its_target_is_written(tmp_path: Path) -> None:
    target = tmp_path / "dotfiles" / "toolscope.toml"
    target.parent.mkdir()
    target.write_text("[plugins]\nenabled = []\n")
    link = tmp_path / "config.toml"
    link.symlink_to(target)
    save_plugin_switch(link, "clock", True)
    assert link.is_symlink() and load_config(target).plugins.enabled == ["clock"]


@pytest.mark.parametrize(
    ("text", "save", "reason"),
    [
        ("[plugins]\nenabled = []\nunknown = 1\n", lambda path: save_plugin_switch(path, "clock", True), "unknown key"),
        ("[plugins\n", lambda path: save_plugin_switch(path, "clock", True), "cannot save the switch"),
        ("[defaults]\n", lambda path: save_server_switch(path, "git", False), "[mcp.servers.git] is not in the file"),
    ],
)
def test_a_switch_that_cannot_be_saved_leaves_the_file_as_it_was(
    tmp_path: Path, text: str, save, reason: str, english: None
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        save(path)
    assert reason in str(caught.value) and str(path) in str(caught.value)
    assert path.read_text() == text
    assert [entry.name for entry in tmp_path.iterdir()] == ["config.toml"]


def test_a_config_path_that_is_a_directory_is_a_config_error(tmp_path: Path, english: None) -> None:
    with pytest.raises(ConfigError, match="cannot save the switch"):
        save_plugin_switch(tmp_path, "clock", True)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["clock", "calculator", "notes"]), st.booleans()), max_size=12))
def test_any_series_of_switches_leaves_a_config_that_reads_as_the_last_switches(switches) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "config.toml"
        path.write_text(USERS_FILE)
        expected = ["clock"]
        for name, on in switches:
            save_plugin_switch(path, name, on)
            if on and name not in expected:
                expected.append(name)
            if not on and name in expected:
                expected.remove(name)
        config = load_config(path)
        assert config.plugins.enabled == expected
        assert config.mcp.servers["git"].args == ["mcp-server-git"] and not config.mcp.servers["lab"].enabled
        assert path.read_text().startswith(USERS_FILE[: USERS_FILE.index("[plugins]")])


# --- [prices] (issue 27) ---------------------------------------------------------------------------


def test_prices_are_read_per_model_or_route() -> None:
    config = parse_config(
        '[prices."deepseek-v4-flash"]\ninput = 0.27\ncache_read = 0.07\noutput = 1\n'
        '[prices."local/llama"]\ninput = 0\noutput = 0\ncache_write = 0.5\ncache_write_1h = 1.0\n',
        Path("config.toml"),
    )
    flash = config.prices["deepseek-v4-flash"]
    assert (flash.input, flash.cache_read, flash.cache_write, flash.cache_write_1h, flash.output) == (
        0.27,
        0.07,
        None,
        None,
        1,
    )
    local = config.prices["local/llama"]
    assert (local.input, local.cache_write, local.cache_write_1h, local.output) == (0, 0.5, 1.0, 0)
    assert Config().prices == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[prices."gpt-5"]\ninptu = 1\n', "[prices.gpt-5] unknown key 'inptu'"),
        ('[prices."gpt-5"]\ninput = "1.25"\n', "[prices.gpt-5] input: expected a number"),
        ('[prices."gpt-5"]\noutput = true\n', "[prices.gpt-5] output: expected a number"),
        ('[prices."gpt-5"]\ncache_read = -0.1\n', "[prices.gpt-5] cache_read: must be a finite number, 0 or more"),
        ('[prices."gpt-5"]\ncache_write_1h = nan\n', "[prices.gpt-5] cache_write_1h: must be a finite number, 0 or more"),
        ('[prices."gpt-5"]\ninput = inf\n', "[prices.gpt-5] input: must be a finite number, 0 or more"),
        ('[prices]\n"gpt-5" = 1.25\n', "[prices] gpt-5: expected a table"),
        ('prices = 3\n', "prices: expected a table"),
    ],
)
def test_bad_prices_name_the_file_the_table_and_the_key(text: str, expected: str, english: None) -> None:
    assert _error(text) == f"config.toml: {expected}"

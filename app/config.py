"""`config.toml`: strict sections, and errors that name the file and the key path.

Sections: `[defaults]`, `[plugins]`, `[tools]`, `[compaction]`, `[mcp.servers.NAME]`,
`[prices.MODEL]` and `[[routes]]`. A route table is kept as a plain dict here; the route catalog validates it against
the built-in entries it overrides.
A key this build does not know is an error, so a typo is reported instead of silently ignored.

Plain frozen dataclasses read by `_read_section` from their fields' types, not pydantic models:
`toolscope chat` reads the config before its first frame, which must not wait for pydantic. Values
are never coerced (`route = 1` is an error, not "1").

The tools screen saves a source's switch here (`save_plugin_switch`, `save_server_switch`) when
`[tools] remember_switches = "config"`: one key is changed in place, the rest of the file is kept
as the user wrote it (comments, order, spacing), and the result is written only if it reads back.
"""

from __future__ import annotations

import math
import os
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from app.i18n import SUPPORTED, _, ngettext, normalize_language


class ConfigError(Exception):
    """A config file that cannot be used; the message is one localized line naming the file."""


def _supported_language(value: str) -> str | None:
    if normalize_language(value) is None:
        return _("unsupported language '{lang}' (available: {available})").format(
            lang=value, available=", ".join(SUPPORTED)
        )
    return None


@dataclass(frozen=True)
class Defaults:
    route: str | None = None
    lang: str | None = field(default=None, metadata={"check": _supported_language})
    theme: str | None = None


@dataclass(frozen=True)
class Plugins:
    enabled: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class McpServer:
    """A server run as `command` (stdio) or reached at `url` (Streamable HTTP): one of the two."""

    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    bearer_token_env: str | None = None
    """The environment variable holding the bearer token (the token itself is never in the file)."""
    restart: bool = False
    enabled: bool = True
    """Started with the chat; false leaves it off until it is switched on in the tools screen."""


@dataclass(frozen=True)
class Mcp:
    servers: dict[str, McpServer] = field(default_factory=dict)


def _positive(value: float) -> str | None:
    return None if value > 0 else _("must be greater than 0")


def _share(value: float) -> str | None:
    return None if 0 < value <= 1 else _("must be greater than 0 and at most 1")


REMEMBER_FOR_SESSION = "session"
REMEMBER_IN_CONFIG = "config"


def _remember(value: str) -> str | None:
    choices = (REMEMBER_FOR_SESSION, REMEMBER_IN_CONFIG)
    if value in choices:
        return None
    return _("must be one of: {choices}").format(choices=", ".join(f'"{choice}"' for choice in choices))


@dataclass(frozen=True)
class Tools:
    extra_roots: list[str] = field(default_factory=list)
    """Directories the file tools may use besides the working directory (`~` is expanded)."""
    command_timeout: float = field(default=120.0, metadata={"check": _positive})
    """Seconds `run_command` waits by default before it kills the command."""
    remember_switches: str = field(default=REMEMBER_IN_CONFIG, metadata={"check": _remember})
    """Whether a source switched in the tools screen is saved to this file ("config") or stays
    switched for the running chat only ("session")."""


@dataclass(frozen=True)
class Compaction:
    auto: bool = True
    share: float = field(default=0.8, metadata={"check": _share})
    """Compact before the next request once a reply's input uses this share of the context window."""


def _price(value: float) -> str | None:
    return None if math.isfinite(value) and value >= 0 else _("must be a finite number, 0 or more")


@dataclass(frozen=True)
class PriceTable:
    """USD per million tokens for one model name or route id (docs/cost.md#prices); a key left out
    keeps the bundled price (`app.report.prices`)."""

    input: float | None = field(default=None, metadata={"check": _price})
    cache_read: float | None = field(default=None, metadata={"check": _price})
    cache_write: float | None = field(default=None, metadata={"check": _price})
    """The 5-minute cache write (Anthropic); providers without a write price bill writes as input."""
    cache_write_1h: float | None = field(default=None, metadata={"check": _price})
    output: float | None = field(default=None, metadata={"check": _price})


@dataclass(frozen=True)
class Config:
    defaults: Defaults = field(default_factory=Defaults)
    plugins: Plugins = field(default_factory=Plugins)
    tools: Tools = field(default_factory=Tools)
    compaction: Compaction = field(default_factory=Compaction)
    mcp: Mcp = field(default_factory=Mcp)
    prices: dict[str, PriceTable] = field(default_factory=dict)
    # Route overrides, validated by the route catalog (it knows which keys each entry takes).
    routes: list[dict[str, Any]] = field(default_factory=list)
    source: Path | None = field(default=None, compare=False, metadata={"read": False})
    """The file this config was read from, for messages that point the user at it."""


def load_config(path: Path | None) -> Config:
    """Read `path`, which must exist; None (no config file anywhere) means the defaults.

    `app.paths.config_file` gives None for a missing default file, so only a file the user named
    (`--config`, `TOOLSCOPE_CONFIG`) can be missing here.
    """
    if path is None:
        return Config()
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(_("{file}: config file not found").format(file=path)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(
            _("{file}: cannot read config file: {reason}").format(file=path, reason=_reason(error))
        ) from None
    return parse_config(text, path)


def parse_config(text: str, path: Path) -> Config:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(
            _("{file}: invalid TOML: {reason}").format(file=path, reason=error)
        ) from None
    problems: list[Problem] = []
    values = _read_section(Config, raw, (), problems)
    if problems:
        raise ConfigError(_describe(problems, raw, path))
    return Config(**values, source=path)


def _reason(error: Exception) -> str:
    return getattr(error, "strerror", None) or str(error)


# --- reading -----------------------------------------------------------------------------------

Location = tuple[str | int, ...]


@dataclass(frozen=True)
class Problem:
    """One thing wrong in the file: where (keys and list positions) and what (`kind`, and the
    reason for a value a check refused)."""

    location: Location
    kind: str
    reason: str = ""


def _read_section(section: type, raw: dict[str, Any], location: Location, problems: list[Problem]) -> dict[str, Any]:
    """The keyword arguments of `section` from its TOML table; problems are appended, not raised."""
    values: dict[str, Any] = {}
    known = {item.name: item for item in fields(section) if item.metadata.get("read", True)}
    for key in raw:
        if key not in known:
            problems.append(Problem((*location, key), "unknown"))
    if (check_table := _TABLE_CHECKS.get(section)) is not None:
        problems.extend(check_table(raw, location))
    for name, item in known.items():
        if name not in raw:
            if item.default is MISSING and item.default_factory is MISSING:
                problems.append(Problem((*location, name), "missing"))
            continue
        value = _read_value(item.type, raw[name], (*location, name), problems)
        check: Callable[[Any], str | None] | None = item.metadata.get("check")
        reason = check(value) if check is not None and value is not None else None
        if reason is not None:
            problems.append(Problem((*location, name), "refused", reason))
        values[name] = value
    return values


_STDIO_KEYS = ("args", "env")
_HTTP_KEYS = ("headers", "bearer_token_env")


def _one_transport(raw: dict[str, Any], location: Location) -> list[Problem]:
    """`command` or `url`, not both, and only the keys of the one given."""
    if "command" in raw and "url" in raw:
        return [Problem((*location, "url"), "both-transports")]
    if "command" not in raw and "url" not in raw:
        return [Problem((*location, "command"), "no-transport")]
    keys, other = (_HTTP_KEYS, "url") if "command" in raw else (_STDIO_KEYS, "command")
    return [Problem((*location, key), "wrong-transport", other) for key in keys if key in raw]


_TABLE_CHECKS: dict[type, Callable[[dict[str, Any], Location], list[Problem]]] = {McpServer: _one_transport}
"""Checks of a table as a whole, for keys that only make sense together."""

_SECTIONS: dict[str, type] = {
    section.__name__: section
    for section in (Defaults, Plugins, McpServer, Mcp, Tools, Compaction, PriceTable)
}
"""The sections a field can name, by name (its annotation is a string here)."""


def _read_value(annotation: str, value: Any, location: Location, problems: list[Problem]) -> Any:
    """`value` if it has the type `annotation` names (the few this file uses), else a problem."""
    optional = annotation.endswith(" | None")
    kind = annotation.removesuffix(" | None")
    if value is None and optional:  # never from TOML, which has no null
        return None
    if kind == "Any":
        return value
    if kind in _SECTIONS:
        if not isinstance(value, dict):
            problems.append(Problem(location, "table"))
            return None
        found = len(problems)
        values = _read_section(_SECTIONS[kind], value, location, problems)
        return _SECTIONS[kind](**values) if len(problems) == found else None
    if kind == "str":
        return _expect(isinstance(value, str), value, location, "string", problems)
    if kind == "bool":
        return _expect(isinstance(value, bool), value, location, "bool", problems)
    if kind == "float":
        is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
        return _expect(is_number, value, location, "number", problems)
    if kind.startswith("list["):
        if not isinstance(value, list):
            problems.append(Problem(location, "array"))
            return None
        item = kind.removeprefix("list[").removesuffix("]")
        return [_read_value(item, entry, (*location, index), problems) for index, entry in enumerate(value)]
    if kind.startswith("dict[str, "):
        if not isinstance(value, dict):
            problems.append(Problem(location, "table"))
            return None
        item = kind.removeprefix("dict[str, ").removesuffix("]")
        return {key: _read_value(item, entry, (*location, key), problems) for key, entry in value.items()}
    raise TypeError(f"config field type {annotation!r} has no reader")  # a bug here, not in the file


def _expect(ok: bool, value: Any, location: Location, kind: str, problems: list[Problem]) -> Any:
    if not ok:
        problems.append(Problem(location, kind))
        return None
    return value


# --- messages ----------------------------------------------------------------------------------


def _describe(problems: list[Problem], raw: dict[str, Any], path: Path) -> str:
    """`config.toml: [defaults] unknown key 'rout'` for the first problem, and how many more."""
    # Unknown keys first: a typo is the likeliest cause of the other problems in its table.
    problems = sorted(problems, key=lambda problem: problem.kind != "unknown")
    first = _problem(problems[0], raw)
    line = _("{file}: {problem}").format(file=path, problem=first)
    if len(problems) > 1:
        more = len(problems) - 1
        line += " " + ngettext("(and {n} more problem)", "(and {n} more problems)", more).format(n=more)
    return line


def _problem(problem: Problem, raw: dict[str, Any]) -> str:
    table, key = _split_location(problem.location, raw)
    where = f"[{table}] " if table else ""
    if problem.kind == "unknown":
        return where + _("unknown key '{key}'").format(key=key)
    if problem.kind == "missing":
        return where + _("missing key '{key}'").format(key=key)
    if problem.kind == "no-transport":
        return where + _("needs 'command' (a server it starts) or 'url' (a server it connects to)")
    if problem.kind == "both-transports":
        return where + _("has both 'command' and 'url'; keep one")
    if problem.kind == "wrong-transport":
        return where + _("'{key}' is only for a server with '{other}'").format(key=key, other=problem.reason)
    return where + _("{key}: {reason}").format(key=key, reason=_expected(problem))


def _split_location(location: Location, raw: dict[str, Any]) -> tuple[str, str]:
    """Split a problem's location into the TOML table path and the key inside it.

    The leading segments that name tables in the file form the table path (`mcp.servers.git`);
    the rest is the key, with list positions as `[i]` (`args[0]`). A `[[routes]]` entry is
    addressed as `routes[i]`.
    """
    node: Any = raw
    table: list[str] = []
    rest = list(location)
    while rest and isinstance(rest[0], str) and isinstance(node, dict):
        value = node.get(rest[0])
        if not isinstance(value, dict) or len(rest) == 1:
            break
        table.append(rest.pop(0))
        node = value
    key = ""
    for segment in rest:
        key += f"[{segment}]" if isinstance(segment, int) else (f".{segment}" if key else segment)
    return ".".join(table), key


def _expected(problem: Problem) -> str:
    if problem.kind == "refused":
        return problem.reason
    messages = {
        "string": _("expected a string"),
        "bool": _("expected true or false"),
        "number": _("expected a number"),
        "array": _("expected an array"),
        "table": _("expected a table"),
    }
    return messages[problem.kind]


# --- saving a switch ---------------------------------------------------------------------------


def save_plugin_switch(path: Path, name: str, on: bool) -> None:
    """Add `name` to `[plugins] enabled` (at its end) or remove it from there."""

    def edit(document: Any) -> None:
        enabled = document.setdefault("plugins", {}).setdefault("enabled", [])
        present = [index for index, entry in enumerate(enabled) if entry == name]
        if on and not present:
            enabled.append(name)
        elif not on:
            for index in reversed(present):
                del enabled[index]

    _rewrite(path, edit)


def save_server_switch(path: Path, name: str, on: bool) -> None:
    """Set `enabled` in `[mcp.servers.NAME]`; a server switched on whose table never said
    `enabled` is left as it is (on is the default)."""

    def edit(document: Any) -> None:
        server = document.get("mcp", {}).get("servers", {}).get(name)
        if server is None:
            raise _cannot_save(path, _("[mcp.servers.{name}] is not in the file").format(name=name))
        if "enabled" in server or not on:
            server["enabled"] = on

    _rewrite(path, edit)


def _rewrite(path: Path, edit: Callable[[Any], None]) -> None:
    """Apply `edit` to the TOML document at `path` (created, mode 0600, when missing) and replace
    the file with the result, atomically, keeping its mode; a symlink is followed, not replaced.

    The result must read as a valid config, so a save never leaves a file toolscope refuses.
    Raises `ConfigError` with the reason; the file is then as it was.
    """
    import tomlkit  # only when a switch is saved

    target = path.resolve()
    try:
        text = target.read_bytes().decode("utf-8")
        mode = target.stat().st_mode & 0o777
    except FileNotFoundError:
        text, mode = "", 0o600
    except (OSError, UnicodeDecodeError) as error:
        raise _cannot_save(path, _reason(error)) from None
    try:
        document = tomlkit.parse(text)
        edit(document)
    except tomlkit.exceptions.TOMLKitError as error:
        raise _cannot_save(path, str(error)) from None
    except (TypeError, AttributeError) as error:  # a table is something else now (`plugins = 3`)
        raise _cannot_save(path, str(error)) from None
    result = tomlkit.dumps(document)
    parse_config(result, path)
    try:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(result.encode("utf-8"))
                os.fchmod(file.fileno(), mode)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as error:
        raise _cannot_save(path, _reason(error)) from None


def _cannot_save(path: Path, reason: str) -> ConfigError:
    return ConfigError(_("{file}: cannot save the switch: {reason}").format(file=path, reason=reason))

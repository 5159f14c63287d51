"""`config.toml`: strict models, and errors that name the file and the key path.

Sections: `[defaults]`, `[plugins]`, `[mcp.servers.NAME]` and `[[routes]]`. A route table is kept
as a plain dict here; the route catalog validates it against the built-in entries it overrides.
A key this build does not know is an error, so a typo is reported instead of silently ignored.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from app.i18n import SUPPORTED, _, ngettext, normalize_language


class ConfigError(Exception):
    """A config file that cannot be used; the message is one localized line naming the file."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Defaults(_Section):
    route: str | None = None
    lang: str | None = None
    theme: str | None = None

    @field_validator("lang")
    @classmethod
    def _supported_language(cls, value: str | None) -> str | None:
        if value is not None and normalize_language(value) is None:
            raise ValueError(
                _("unsupported language '{lang}' (available: {available})").format(
                    lang=value, available=", ".join(SUPPORTED)
                )
            )
        return value


class Plugins(_Section):
    enabled: list[str] = Field(default_factory=list)


class McpServer(_Section):
    command: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    restart: bool = False


class Mcp(_Section):
    servers: dict[str, McpServer] = Field(default_factory=dict)


class Tools(_Section):
    extra_roots: list[str] = Field(default_factory=list)
    """Directories the file tools may use besides the working directory (`~` is expanded)."""
    command_timeout: float = Field(default=120.0, gt=0)
    """Seconds `run_command` waits by default before it kills the command."""


class Compaction(_Section):
    auto: bool = True
    share: float = Field(default=0.8, gt=0, le=1)
    """Compact before the next request once a reply's input uses this share of the context window."""


class Config(_Section):
    defaults: Defaults = Field(default_factory=Defaults)
    plugins: Plugins = Field(default_factory=Plugins)
    tools: Tools = Field(default_factory=Tools)
    compaction: Compaction = Field(default_factory=Compaction)
    mcp: Mcp = Field(default_factory=Mcp)
    # Route overrides, validated by the route catalog (it knows which keys each entry takes).
    routes: list[dict[str, Any]] = Field(default_factory=list)
    _source: Path | None = PrivateAttr(default=None)

    @property
    def source(self) -> Path | None:
        """The file this config was read from, for messages that point the user at it."""
        return self._source


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
    try:
        config = Config.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(_describe(error, raw, path)) from None
    config._source = path
    return config


def _reason(error: Exception) -> str:
    return getattr(error, "strerror", None) or str(error)


def _describe(error: ValidationError, raw: dict[str, Any], path: Path) -> str:
    """`config.toml: [defaults] unknown key 'rout'` for the first problem, and how many more."""
    # Unknown keys first: a typo is the likeliest cause of the other problems in its table.
    problems = sorted(error.errors(), key=lambda problem: problem["type"] != "extra_forbidden")
    first = _problem(problems[0], raw)
    line = _("{file}: {problem}").format(file=path, problem=first)
    if len(problems) > 1:
        more = len(problems) - 1
        line += " " + ngettext("(and {n} more problem)", "(and {n} more problems)", more).format(n=more)
    return line


def _problem(problem: dict[str, Any], raw: dict[str, Any]) -> str:
    table, key = _split_location(problem["loc"], raw)
    where = f"[{table}] " if table else ""
    kind = problem["type"]
    if kind == "extra_forbidden":
        return where + _("unknown key '{key}'").format(key=key)
    if kind == "missing":
        return where + _("missing key '{key}'").format(key=key)
    return where + _("{key}: {reason}").format(key=key, reason=_expected(problem))


def _split_location(location: tuple[Any, ...], raw: dict[str, Any]) -> tuple[str, str]:
    """Split pydantic's location into the TOML table path and the key inside it.

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


def _expected(problem: dict[str, Any]) -> str:
    kind = problem["type"]
    if kind == "value_error":
        return str(problem["ctx"]["error"])
    messages = {
        "string_type": _("expected a string"),
        "bool_type": _("expected true or false"),
        "list_type": _("expected an array"),
        "dict_type": _("expected a table"),
        "model_type": _("expected a table"),
    }
    return messages.get(kind, problem["msg"])

"""The tools each MCP server listed when it was last seen, kept across sessions, so the tools screen
can show what a server switched off or not yet started would bring (marked as last seen).

The file (`<data home>/mcp-tools.json`, mode 0600) is a cache, and so untrusted input: another
program, an older toolscope, a crash or a hand may have written it. An entry is used only when it
checks out — the format, the server's identity (a digest of its transport and target, so a server
whose command, arguments, directory or URL changed shows nothing old, and no argument or header is
stored), every tool named with the server's prefix, and the entry's seal under this account's key
(`app.session.seal`, as for every cache), so a damaged, foreign or crafted entry is refused.
Anything else is ignored, and the next listing writes the file again without it. Without a key
nothing is read or kept. A last-seen list is never
declared to a model: only a running server's tools are.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.paths import data_home, ensure_private_dir
from app.session.events import ToolDefinition
from app.session.seal import seal
from app.untrusted_json import loads

logger = logging.getLogger(__name__)

FILE_NAME = "mcp-tools.json"
FORMAT = 1
MAX_FILE_BYTES = 16 * 1024 * 1024
"""A larger file is not ours: ignored unread."""

_SEEN_AT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\Z")
_ENTRY_KEYS = {"identity", "seen_at", "tools", "digest"}
_TOOL_KEYS = {"name", "description", "parameters"}


@dataclass(frozen=True)
class SeenTools:
    """A server's tools as it last listed them, and when (UTC)."""

    tools: tuple[ToolDefinition, ...]
    seen_at: datetime


def server_identity(*parts: object) -> str:
    """A digest naming a server by what reaches it (transport, command and arguments or URL, and
    directory): the same server gives the same digest, and none of it can be read back."""
    text = json.dumps([str(part) if not isinstance(part, list | tuple) else list(map(str, part)) for part in parts])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def default_path() -> Path:
    return data_home() / FILE_NAME


class SeenToolsStore:
    """Reads the file once, on first use; `remember()` writes it whole (call it off the event
    loop: it fsyncs). Two toolscopes writing at once: the last one's file wins, whole."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[str, dict[str, Any]] | None = None

    def last_seen(self, server: str, identity: str, prefix: str) -> SeenTools | None:
        entry = self._loaded().get(server)
        if entry is None:
            return None
        return _checked(entry, identity, prefix)

    def remember(self, server: str, identity: str, tools: Sequence[ToolDefinition], seen_at: datetime) -> None:
        """Record `tools` as the server's last listing. Failing to write is logged, not raised:
        the cache only saves a listing."""
        entry = _entry(identity, tools, seen_at)
        if entry is None:
            return
        entries = self._loaded()
        entries[server] = entry
        try:
            self._write(entries)
        except OSError:
            logger.warning("could not write %s", self.path, exc_info=True)

    def _loaded(self) -> dict[str, dict[str, Any]]:
        if self._entries is None:
            self._entries = self._read()
        return self._entries

    def _read(self) -> dict[str, dict[str, Any]]:
        """The file's well-formed entries (each still checked at use); {} for anything else."""
        try:
            # O_NONBLOCK: a FIFO put in the file's place must not hang the open.
            descriptor = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return {}
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_FILE_BYTES:
            os.close(descriptor)
            logger.info("ignoring %s: not a regular file of at most %d bytes", self.path, MAX_FILE_BYTES)
            return {}
        with os.fdopen(descriptor, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
        try:
            document = loads(data, object_pairs_hook=_no_duplicate_keys)
        except ValueError:
            logger.info("ignoring %s: not JSON written by toolscope", self.path)
            return {}
        if not (
            isinstance(document, dict)
            and document.keys() == {"format", "servers"}
            and _is_int(document["format"], FORMAT)
            and isinstance(document["servers"], dict)
        ):
            logger.info("ignoring %s: not in format %d", self.path, FORMAT)
            return {}
        return {
            name: entry
            for name, entry in document["servers"].items()
            if isinstance(entry, dict) and entry.keys() == _ENTRY_KEYS
        }

    def _write(self, entries: dict[str, dict[str, Any]]) -> None:
        ensure_private_dir(self.path.parent)
        text = json.dumps({"format": FORMAT, "servers": entries}, ensure_ascii=False, indent=1)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(text.encode("utf-8"))
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise


def _entry(identity: str, tools: Sequence[ToolDefinition], seen_at: datetime) -> dict[str, Any] | None:
    content = {
        "identity": identity,
        "seen_at": seen_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tools": [{"name": tool.name, "description": tool.description, "parameters": tool.parameters} for tool in tools],
    }
    digest = _digest(content)
    return None if digest is None else content | {"digest": digest}


def _digest(content: dict[str, Any]) -> str | None:
    """The account's seal of the entry's content in one canonical spelling (None without a key)."""
    canonical = json.dumps(content, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    tag = seal(canonical.encode("utf-8"))
    return None if tag is None else tag.hex()


def _checked(entry: dict[str, Any], identity: str, prefix: str) -> SeenTools | None:
    """The entry's tools when every part checks out, else None."""
    content = {key: entry[key] for key in ("identity", "seen_at", "tools")}
    digest = entry["digest"]
    expected = _digest(content) if entry["identity"] == identity and isinstance(digest, str) else None
    if expected is None or not hmac.compare_digest(digest.encode("utf-8"), expected.encode("ascii")):
        return None
    seen_at, tools = entry["seen_at"], entry["tools"]
    if not (isinstance(seen_at, str) and _SEEN_AT.match(seen_at) and isinstance(tools, list)):
        return None
    definitions: list[ToolDefinition] = []
    for tool in tools:
        if not (
            isinstance(tool, dict)
            and tool.keys() == _TOOL_KEYS
            and isinstance(tool["name"], str)
            and tool["name"].startswith(prefix)
            and len(tool["name"]) > len(prefix)
            and isinstance(tool["description"], str)
            and isinstance(tool["parameters"], dict)
        ):
            return None
        definitions.append(ToolDefinition(name=tool["name"], description=tool["description"], parameters=tool["parameters"]))
    if len({tool.name for tool in definitions}) != len(definitions):
        return None
    try:
        when = datetime.strptime(seen_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None
    return SeenTools(tuple(definitions), when)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Two spellings of one key are two answers: the file does not check out."""
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("a key appears twice")
    return result


def _is_int(value: Any, expected: int) -> bool:
    return type(value) is int and value == expected

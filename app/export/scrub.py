"""Untrusted text made safe to put in an export (docs/architecture.md §13): the API key never, and nothing that
acts instead of showing itself.

Session files hold model, tool and MCP-server text. Before any format escapes it, every string
loses its escape sequences, control characters and bidi controls (`printable`, newlines and tabs
kept), and then every run of an API key of the catalog's routes found in the environment is
replaced with `[redacted]` (`app.redaction`): stripping comes first so a key split by an escape
sequence is still found. A value too short or too common to be a secret (`is_secret`: `k`,
`EMPTY`, `ollama`) is not looked for, so it changes nothing. The JSON export is data and keeps
every character: only the keys go, and the characters that act are written as escapes
(`json_text`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from app.redaction import is_secret, redact
from app.llm.routes import Route
from app.terminal import json_text, printable, printable_line


class Scrubber:
    def __init__(self, secrets: Iterable[str]) -> None:
        self._secrets = tuple(dict.fromkeys(secret for secret in secrets if is_secret(secret)))

    @classmethod
    def for_routes(cls, routes: Iterable[Route]) -> Scrubber:
        """Every key the routes would send, as set in the environment now (stripped, as the
        adapters send it)."""
        return cls(os.environ.get(route.api_key_env, "").strip() for route in routes if route.api_key_env)

    def text(self, text: str) -> str:
        return self.redact(printable(text))

    def line(self, text: str) -> str:
        """`text` on one line (line breaks shown as `↵`), for a name or a cell."""
        return self.redact(printable_line(text))

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = redact(text, secret)
        return text

    def json(self, value: Any) -> str:
        """`value` as JSON text holding exactly its data but the keys (object keys redacted too)."""
        return json_text(self._redacted(value), indent=2) + "\n"

    def _redacted(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {self.redact(key): self._redacted(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._redacted(item) for item in value]
        return value

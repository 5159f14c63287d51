"""Untrusted text made safe to put in an export (DESIGN §11): the API key never, and nothing that
acts instead of showing itself.

Session files hold model, tool and MCP-server text. Before any format escapes it, every string
loses its escape sequences and control characters (`printable`, newlines and tabs kept) and its
bidirectional overrides and isolates (they reorder what a reader sees), and then every API key of
the catalog's routes found in the environment is replaced with `[redacted]`: stripping comes
first so a key split by an escape sequence is still found.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from app.llm.routes import Route
from app.terminal import printable

REDACTED = "[redacted]"

_BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


class Scrubber:
    def __init__(self, secrets: Iterable[str]) -> None:
        # Longest first, so a key containing another key is replaced whole.
        self._secrets = sorted({secret for secret in secrets if secret}, key=len, reverse=True)

    @classmethod
    def for_routes(cls, routes: Iterable[Route]) -> Scrubber:
        """Every key the routes would send, as set in the environment now."""
        return cls(os.environ.get(route.api_key_env, "") for route in routes if route.api_key_env)

    def text(self, text: str) -> str:
        text = _BIDI_CONTROLS.sub("", printable(text))
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text

    def value(self, value: Any) -> Any:
        """A JSON value with every string (keys of objects too) scrubbed."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(key): self.value(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(item) for item in value]
        return value

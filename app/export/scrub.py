"""Untrusted text made safe to put in an export (DESIGN §11): the API key never, and nothing that
acts instead of showing itself.

Session files hold model, tool and MCP-server text. Before any format escapes it, every string
loses its escape sequences and control characters (`printable`, newlines and tabs kept) and its
bidirectional overrides and isolates (they reorder what a reader sees), and then every API key of
the catalog's routes found in the environment is replaced with `[redacted]`: stripping comes
first so a key split by an escape sequence is still found. The JSON export is data and keeps every
character: only the keys go, and the characters that act are written as escapes.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from typing import Any

from app.llm.routes import Route
from app.terminal import printable

REDACTED = "[redacted]"

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_BIDI_CONTROLS = re.compile(f"[{_BIDI}]")
_ACTIVE = re.compile(f"[\x7f-\x9f{_BIDI}]")


class Scrubber:
    def __init__(self, secrets: Iterable[str]) -> None:
        # Longest first, so a key containing another key is replaced whole.
        self._secrets = sorted({secret for secret in secrets if secret}, key=len, reverse=True)

    @classmethod
    def for_routes(cls, routes: Iterable[Route]) -> Scrubber:
        """Every key the routes would send, as set in the environment now."""
        return cls(os.environ.get(route.api_key_env, "") for route in routes if route.api_key_env)

    def text(self, text: str) -> str:
        return self.redact(_BIDI_CONTROLS.sub("", printable(text)))

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text

    def json(self, value: Any) -> str:
        """`value` as JSON text holding exactly its data but the keys: every string (object keys
        too) redacted, and the characters a terminal or a viewer would act on (C1 controls, bidi
        controls) written as `\\uXXXX` escapes, as JSON already writes C0 controls."""
        text = json.dumps(self._redacted(value), ensure_ascii=False, indent=2)
        return _ACTIVE.sub(lambda match: f"\\u{ord(match.group()):04x}", text) + "\n"

    def _redacted(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {self.redact(key): self._redacted(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._redacted(item) for item in value]
        return value

"""Finding a secret in text: any run of 12 or more consecutive characters of it, also when the run is
split by whitespace, invisible characters or JSON escapes (a gateway wrapping a long line, a key
quoted inside tool arguments), replaced with `[redacted]`.

What counts as a secret is decided here alone (`is_secret`), for the API key in the adapters and
the exports and for an MCP server's bearer token alike: local servers take any key, and a
placeholder such as `k` or `EMPTY` redacted from every string would rewrite tool names and
answers. Such a value changes nothing. The streaming redactor that uses these pieces is
`app.llm.redact.KeyRedactor`.
"""

from __future__ import annotations

import re
from functools import lru_cache

FRAGMENT = 12
"""The shortest run of the key that counts as the key."""

MIN_SECRET_LENGTH = 16
"""The shortest value taken for a secret: the keys providers issue have 32 characters or more and
a gateway's own keys 25 (LiteLLM's), while what people give a local server that takes any key
(`x`, `EMPTY`, `ollama`, `lm-studio`, `token-abc123`) is shorter."""

MIN_SECRET_VARIETY = 6
"""The fewest different characters a secret has: fewer is a template or a filler (`sk-0000…`),
and a random key of 16 or more characters has fewer about never (docs/decisions.md)."""

REDACTED = "[redacted]"

_SEPARATOR_CLASS = "\\s\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
"""Characters a key may be split by without its text changing: whitespace, controls and
invisible formatting characters."""
_JSON_ESCAPE = r"\\(?:[nrtbf]|u[0-9a-fA-F]{4})"
"""A JSON string escape (`\\n`, `\\u00a0`): tool arguments stream as JSON text, so a key split by a
newline there reads `…\\n…`."""
SEPARATORS = re.compile(f"{_JSON_ESCAPE}|[{_SEPARATOR_CLASS}]")
_VISIBLE = re.compile(f"(?:{_JSON_ESCAPE}|[{_SEPARATOR_CLASS}])*+([^{_SEPARATOR_CLASS}])")
"""Each visible character (group 1), past the separators before it; possessive, so the backslash
of an escape is never taken for a visible character."""


def is_secret(value: str) -> bool:
    """Whether `value` is kept out of every output, or is too short or too common to be a secret
    and so changes nothing: under `MIN_SECRET_LENGTH` characters, fewer than `MIN_SECRET_VARIETY`
    different ones, or typed words (no digit, and letters of one case: `sk-no-key-required`,
    `YOUR_API_KEY`, `xxxxxxxxxxxxxxxxxxxx`). A random key mixes digits and letters, or cases."""
    return (
        len(value) >= MIN_SECRET_LENGTH
        and len(set(value)) >= MIN_SECRET_VARIETY
        and (any(char.isdigit() for char in value) or value.lower() != value != value.upper())
    )


def redact(text: str, key: str) -> str:
    """`text` with every run of the key (see the module docstring) replaced by `[redacted]`;
    `text` itself when the key is no secret."""
    runs = key_runs(key)
    return replaced(text, key_spans(text, SEPARATORS.sub("", text), runs)) if runs else text


class KeyRuns:
    """Where the runs of one key start in a text without separators."""

    __slots__ = ("_blocks", "_starts")

    def __init__(self, key: str) -> None:
        runs = sorted({key[i : i + FRAGMENT] for i in range(len(key) - FRAGMENT + 1)})
        self._starts = re.compile("(?=(?:" + "|".join(map(re.escape, runs)) + "))")
        """Matches, without consuming, wherever a run starts."""
        block = FRAGMENT // 2
        self._blocks = tuple(key[i : i + block] for i in range(0, len(key) - block + 1, block))
        """The key's pieces of 6 at offsets 0, 6, 12…: every run of 12 holds one of them whole.
        Text without any has no run, and a substring search tells that much faster
        than `_starts`, which tries every run at every character."""

    def starts_in(self, visible: str) -> list[int]:
        for block in self._blocks:
            if block in visible:
                return [match.start() for match in self._starts.finditer(visible)]
        return []


@lru_cache(maxsize=4)
def key_runs(key: str) -> KeyRuns | None:
    """How to find the key's runs; None when the key is no secret."""
    return KeyRuns(key) if is_secret(key) else None


def key_spans(text: str, visible: str, runs: KeyRuns) -> list[tuple[int, int]]:
    """Where runs of the key (`runs`) are in `text` (`visible`: `text` without separators):
    merged, sorted `(start, end)` ranges."""
    starts = runs.starts_in(visible)
    if not starts:
        return []
    # Back from positions in `visible` to positions in `text`.
    positions = visible_positions(text)
    merged: list[tuple[int, int]] = []
    for first in starts:
        start, end = positions[first], positions[first + FRAGMENT - 1] + 1
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def replaced(text: str, found: list[tuple[int, int]]) -> str:
    """`text` with each of the `found` spans (from `key_spans`) replaced by `[redacted]`."""
    if not found:
        return text
    parts, last = [], 0
    for start, end in found:
        parts += [text[last:start], REDACTED]
        last = end
    parts.append(text[last:])
    return "".join(parts)


def visible_positions(text: str) -> list[int]:
    """Where each character of `text` without separators stands in `text`."""
    return [match.start(1) for match in _VISIBLE.finditer(text)]

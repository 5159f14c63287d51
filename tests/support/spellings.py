"""Other writers' spellings of the same session lines: what toolscope's own writer never produces.

`respell(line, rng)` writes a line's JSON value again the way another program might: whitespace
wherever JSON allows it (spaces, tabs, carriage returns; never a line feed, which ends a line),
characters written as `\\uXXXX` escapes (surrogate pairs past the BMP), `\\/` and the short escapes,
the keys of every object of the format in another order (`type` anywhere among them) and an
optional CRLF line end. The keys of free-form JSON — a tool's `parameters`, a header's `config` —
keep their order: it is data, sent to providers byte for byte, not spelling.
"""

from __future__ import annotations

import json
import random
from typing import Any

FREE_FORM = frozenset({"parameters", "config"})
WHITESPACE = ("", "", "", " ", "  ", "\t", "\r", " \t\r ")
SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def respell(line: bytes, rng: random.Random, *, escape_rate: float = 0.2, crlf: bool | None = None) -> bytes:
    """`line` (one JSON object, no newline) spelt another way; the same JSON value. Its newline is
    up to the caller; with `crlf` (drawn when None) a carriage return ends it."""
    value = json.loads(line)
    text = _ws(rng) + _value(value, rng, escape_rate, free=False) + _ws(rng)
    if crlf if crlf is not None else rng.random() < 0.3:
        text += "\r"
    return text.encode()


def respell_file(data: bytes, rng: random.Random, **options: Any) -> bytes:
    """Every line of a session file (header included) respelt."""
    return b"".join(respell(line, rng, **options) + b"\n" for line in data.splitlines())


def _ws(rng: random.Random) -> str:
    return rng.choice(WHITESPACE)


def _value(value: Any, rng: random.Random, escape_rate: float, *, free: bool) -> str:
    if isinstance(value, dict):
        items = list(value.items())
        if not free:
            rng.shuffle(items)
        parts = [
            _ws(rng) + _string(key, rng, escape_rate) + _ws(rng) + ":" + _ws(rng)
            + _value(item, rng, escape_rate, free=free or key in FREE_FORM) + _ws(rng)
            for key, item in items
        ]
        return "{" + (",".join(parts) if parts else _ws(rng)) + "}"
    if isinstance(value, list):
        parts = [_ws(rng) + _value(item, rng, escape_rate, free=free) + _ws(rng) for item in value]
        return "[" + (",".join(parts) if parts else _ws(rng)) + "]"
    if isinstance(value, str):
        return _string(value, rng, escape_rate)
    return json.dumps(value)


def _string(text: str, rng: random.Random, escape_rate: float) -> str:
    out = ['"']
    for char in text:
        code = ord(char)
        if char in SHORT_ESCAPES and rng.random() < 0.7:
            out.append(SHORT_ESCAPES[char])
        elif char in SHORT_ESCAPES or code < 0x20 or rng.random() < escape_rate:
            out.append(_unicode_escape(code))
        elif char == "/" and rng.random() < 0.5:
            out.append("\\/")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _unicode_escape(code: int) -> str:
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04X}"

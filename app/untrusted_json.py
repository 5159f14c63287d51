"""JSON from outside the program (session files, tool arguments, provider error bodies), parsed
with a bound on nesting.

`json.loads` recurses once per level, so about a thousand nested brackets raise `RecursionError`,
which no caller expects; and a value nested that deep breaks whatever walks it later (serialising a
request body, validating it). `loads` refuses anything nested deeper than `MAX_DEPTH` with a
`JSONNestingError`, a `JSONDecodeError` and so a `ValueError`: every caller already handles those.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 200
"""The deepest nesting accepted: pydantic's parser, which validates every session line, stops
at about the same depth, so nothing deeper can be a valid event anyway."""

# A JSON string, skipped whole. An unterminated one runs to the end of the text: a match that can
# fail would be retried from every later quote, which is quadratic on a run of escaped quotes. (Its
# brackets need not count: `json.loads` stops at such a string and nests no deeper.)
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STRING_OR_BRACKET = re.compile(_STRING.pattern + r"|[\[\]{}]", re.DOTALL)


class JSONNestingError(json.JSONDecodeError):
    """Arrays and objects nested deeper than `MAX_DEPTH`; `pos` is the first bracket too many."""


def loads(data: str | bytes) -> Any:
    """`json.loads` for text from outside: raises ValueError (never RecursionError) when it cannot
    be read. Bytes are UTF-8."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    if _may_nest_too_deep(text):
        position = _too_deep_at(text)
        if position is not None:
            raise JSONNestingError(f"nesting deeper than {MAX_DEPTH} levels", text, position)
    return json.loads(text)


def _may_nest_too_deep(text: str) -> bool:
    """A quick upper bound on the nesting, with string operations only (no per-character Python).

    Outside strings, each pass of removing innermost `[]` pairs takes one level off the deepest
    branch; what no pass removes is unbalanced and may add to the depth.
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False  # too few brackets to nest that deep: the common case costs two counts
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text)).replace("{", "[").replace("}", "]")
    for passes in range(MAX_DEPTH + 1):
        if not brackets:
            return False
        inner = brackets.replace("[]", "")
        if inner == brackets:
            return passes + brackets.count("[") > MAX_DEPTH
        brackets = inner
    return True


def _too_deep_at(text: str) -> int | None:
    """Where the nesting first exceeds `MAX_DEPTH`, or None; brackets inside strings do not count."""
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        bracket = text[match.start()]
        if bracket in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return match.start()
        elif bracket in "]}":
            depth -= 1
    return None

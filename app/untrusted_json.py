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
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 200
"""The deepest nesting accepted: pydantic's parser, which validates every session line, stops
at about the same depth, so nothing deeper can be a valid event anyway."""

# A JSON string, skipped whole, or one bracket. An unterminated string runs to the end of the text:
# a match that can fail would be retried from every later quote, which is quadratic on a run of
# escaped quotes. (Its brackets need not count: `json.loads` stops at such a string.)
_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)


class JSONNestingError(json.JSONDecodeError):
    """Arrays and objects nested deeper than `MAX_DEPTH`; `pos` is the first bracket too many."""


def loads(data: str | bytes, *, object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None) -> Any:
    """`json.loads` for text from outside: raises ValueError when it cannot be read, never
    RecursionError for its nesting. Bytes are UTF-8.

    The depth is checked on the parsed value, not on the text: a long text (a pasted file inside a
    string, say) costs no more than `json.loads` itself. `object_pairs_hook` is `json.loads`'s
    (it must return a dict).
    """
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    try:
        value = json.loads(text, object_pairs_hook=object_pairs_hook)
    except RecursionError:
        position = _too_deep_at(text)
        if position is None:
            raise  # the stack was nearly used up before parsing began: not the text's doing
        raise _nesting_error(text, position) from None
    # Too few brackets to nest that deep is the common case: two counts, no walk.
    if text.count("[") + text.count("{") > MAX_DEPTH and _deeper_than_max(value):
        raise _nesting_error(text, _too_deep_at(text) or 0)
    return value


def _nesting_error(text: str, position: int) -> JSONNestingError:
    return JSONNestingError(f"nesting deeper than {MAX_DEPTH} levels", text, position)


def _deeper_than_max(value: Any) -> bool:
    """Whether `value` nests lists and dicts deeper than `MAX_DEPTH`, walked level by level."""
    level = [value]
    for _depth in range(MAX_DEPTH):  # afterwards `level` holds what MAX_DEPTH containers enclose
        level = [
            child
            for node in level
            if isinstance(node, (list, dict))
            for child in (node.values() if isinstance(node, dict) else node)
        ]
        if not level:
            return False
    return any(isinstance(node, (list, dict)) for node in level)


def _too_deep_at(text: str) -> int | None:
    """Where the nesting first exceeds `MAX_DEPTH`, or None. Brackets in strings do not count."""
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

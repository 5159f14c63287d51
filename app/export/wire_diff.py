"""Each route's wire-body diff against its previous request, for an export of a whole session.

`RouteReport.body_diff` pretty-prints both bodies whole (`json.dumps(indent=2)`) and diffs every
line: a request's body holds its whole message window, so a long session cost the square of its
length, and a large text was printed into every route's diff. Here each route keeps the last body
it printed, one list of lines per message; the next body reuses the lines of every message equal
to the one at the same place, prints only the others, and is diffed from the last message but one
the two share. The lines are exactly `json.dumps(body, indent=2, ensure_ascii=False)`'s, but that
every string of `LARGE_TEXT` characters or more that `shorten` names is printed as the token it
gives; the diff is unified, with 3 lines of context (`_unified`).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Mapping
from typing import Any

from app.export.references import LARGE_TEXT
from app.report.model import RouteReport

Shorten = Callable[[str], "str | None"]
"""The token to print instead of a large string, or None to print it as it is."""

_SLOT = "\0messages\0"  # stands for the messages in the outline of a body (a key's value)
_CONTEXT = 3


class _Printed:
    """A body's lines: `head` up to the line opening its messages, each message's lines (indented,
    without the comma that follows all but the last), then `tail`; a body with no messages is all
    `head`. `outline` is the body but its messages, `reused` how many leading messages' lines were
    taken from the body printed before it."""

    __slots__ = ("body", "outline", "messages", "head", "printed", "tail", "reused")

    def __init__(
        self, body: Any, outline: Any, messages: list[Any], head: list[str], printed: list[list[str]], tail: list[str],
        reused: int = 0,
    ) -> None:
        self.body = body
        self.outline = outline
        self.messages = messages
        self.head = head
        self.printed = printed
        self.tail = tail
        self.reused = reused

    def lines_from(self, message: int) -> list[str]:
        """The lines from message number `message` on (from the top when it is -1)."""
        lines = list(self.head) if message < 0 else []
        last = len(self.printed) - 1
        for number in range(max(message, 0), last + 1):
            printed = self.printed[number]
            lines += printed if number == last else [*printed[:-1], printed[-1] + ","]
        return lines + self.tail

    def line_count(self, messages: int) -> int:
        """Lines before message number `messages`."""
        return len(self.head) + sum(map(len, self.printed[:messages]))


class BodyDiffs:
    """The body diff of each route of an export's requests, taken in order."""

    def __init__(self) -> None:
        self._last: dict[str, _Printed] = {}

    def diff(self, report: RouteReport, shorten: Shorten) -> list[str]:
        """`report.body_diff()`'s lines, large strings shortened; empty when there is no previous
        body on the route or no body now."""
        if report.wire is None or report.previous_body is None:
            return []
        last = self._last.get(report.route.id)
        before = last if last is not None and last.body is report.previous_body else _print(report.previous_body, None, shorten)
        after = _print(report.wire.body, before, shorten)
        self._last[report.route.id] = after
        shared = after.reused if after.head == before.head else 0
        # From two messages before the first that differs: the last shared one's comma may differ,
        # and the one before it gives that line its context.
        start = shared - 2 if shared >= 2 else -1
        offset = before.line_count(start) if start >= 0 else 0
        return _unified(before.lines_from(start), after.lines_from(start), offset)


def _print(body: Any, reuse: _Printed | None, shorten: Shorten) -> _Printed:
    """`body`'s lines, the leading messages equal to `reuse`'s (and the rest of the body, when it
    is equal) taken from it."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list) or not messages:
        return _Printed(body, body, [], _pretty(_shortened(body, shorten)), [], [])
    outline = {key: _SLOT if key == "messages" else value for key, value in body.items()}
    reused = _equal_prefix(reuse.messages, messages) if reuse is not None else 0
    printed = reuse.printed[:reused] if reuse is not None else []
    printed += [["    " + line for line in _pretty(_shortened(message, shorten))] for message in messages[reused:]]
    if reuse is not None and reuse.outline == outline:
        return _Printed(body, outline, messages, reuse.head, printed, reuse.tail, reused)
    lines = _pretty(_shortened(outline, shorten))
    slot = json.dumps(_SLOT)
    (at,) = [number for number, line in enumerate(lines) if line in (f'  "messages": {slot}', f'  "messages": {slot},')]
    comma = "," if lines[at].endswith(",") else ""
    return _Printed(body, outline, messages, [*lines[:at], '  "messages": ['], printed, ["  ]" + comma, *lines[at + 1 :]], reused)


def _equal_prefix(old: list[Any], new: list[Any]) -> int:
    """How many leading elements the lists share: slices compared in C, bisected."""
    size = min(len(old), len(new))
    if old[:size] == new[:size]:
        return size
    low, high = 0, size  # old[:low] == new[:low], old[:high] != new[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if old[low:middle] == new[low:middle]:
            low = middle
        else:
            high = middle
    return low


def _pretty(value: Any) -> list[str]:
    return json.dumps(value, ensure_ascii=False, indent=2).splitlines()


def _shortened(value: Any, shorten: Shorten) -> Any:
    """`value` with each large string `shorten` names replaced by its token (copied only where one
    is)."""
    if isinstance(value, str):
        return (shorten(value) or value) if len(value) >= LARGE_TEXT else value
    if isinstance(value, Mapping):
        items = {key: _shortened(item, shorten) for key, item in value.items()}
        return value if all(items[key] is item for key, item in value.items()) else items
    if isinstance(value, (list, tuple)):
        items = [_shortened(item, shorten) for item in value]
        return value if all(new is old for new, old in zip(items, value)) else items
    return value


def _unified(before: list[str], after: list[str], offset: int) -> list[str]:
    """A unified diff as `difflib.unified_diff(…, "previous", "this", lineterm="")` writes it, of two
    texts whose first `offset` lines are the same, given their lines from there on. The lines the
    two still share at the start are matched first, then the rest by `difflib`, as `difflib` does
    over whole bodies when that shared start is their longest match (the usual case: a long
    conversation and a short tail of tools)."""
    size = min(len(before), len(after))
    start = 0
    while start < size and before[start] == after[start]:
        start += 1
    rest = difflib.SequenceMatcher(None, before[start:], after[start:])
    codes = [("equal", 0, start, 0, start)] if start else []
    codes += [(tag, i1 + start, i2 + start, j1 + start, j2 + start) for tag, i1, i2, j1, j2 in rest.get_opcodes()]
    groups = list(_Matched(codes).get_grouped_opcodes(_CONTEXT))
    if not groups:
        return []
    lines = ["--- previous", "+++ this"]
    for group in groups:
        first, last = group[0], group[-1]
        old = _range(offset + first[1], offset + last[2])
        new = _range(offset + first[3], offset + last[4])
        lines.append(f"@@ -{old} +{new} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [" " + line for line in before[i1:i2]]
                continue
            lines += ["-" + line for line in before[i1:i2]]
            lines += ["+" + line for line in after[j1:j2]]
    return lines


class _Matched(difflib.SequenceMatcher):
    """A matcher whose opcodes are given: `get_grouped_opcodes` groups them into hunks."""

    def __init__(self, codes: list[tuple[str, int, int, int, int]]) -> None:
        super().__init__(None, (), ())
        self._codes = codes

    def get_opcodes(self) -> list[tuple[str, int, int, int, int]]:
        return self._codes


def _range(start: int, stop: int) -> str:
    """A unified diff's range, as `difflib` writes it."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if not length else start + 1},{length}"

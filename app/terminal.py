r"""The one path from untrusted text to a terminal (docs/architecture.md §13): shown literally, never as commands.

A reply, a tool result, an MCP server's message or a session file from someone else may contain
escape sequences (a colour change is harmless, a cursor move or an OSC title/clipboard write is
not), other control characters, or bidirectional overrides that make the text read differently
from what it is. Every line the headless commands print goes through here:
- `printable` removes every escape sequence, control character (C0 but newline and tab, DEL, C1)
  and bidi control, so what is printed is exactly the visible text; `printable_line` also shows a
  line break as `↵`, for text that must stay on its one line (a note, an error, a table cell).
- `write_line`, `print_error` and `print_warning` print one such line, coloured on a colour terminal.
- `json_text` is `json.dumps` for output: non-ASCII text stays readable, but C1 controls, DEL,
  bidi controls and line separators are written as `\uXXXX` escapes.
The Textual UI escapes Rich markup separately; this is for plain terminal output.
"""

from __future__ import annotations

import json
import os
import re
import sys
from functools import cache
from typing import Any, TextIO

# Compiled with the first text shown, not at import: the chat's first frame shows none, and
# compiling them is a large part of the chat's own modules' import.
@cache
def _escapes() -> re.Pattern[str]:
    return re.compile(
        r"""
        \x1b\[[0-?]*[ -/]*[@-~]               # CSI: cursor moves, colours, erases
        | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?  # OSC: titles, hyperlinks, clipboard writes
        | \x1b[PX^_][^\x1b]*(?:\x1b\\)?       # DCS, SOS, PM, APC strings
        | \x1b[@-Z\\-_]                       # other two-character escapes
        | [\x00-\x08\x0b-\x1f\x7f-\x9f]       # every other control character (C0 but \t \n, DEL, C1)
        | [\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]  # bidi marks, embeddings, overrides, isolates
        """,
        re.VERBOSE,
    )


@cache
def _line_separators() -> re.Pattern[str]:
    return re.compile("[\u2028\u2029]")


@cache
def _json_unsafe() -> re.Pattern[str]:
    """What `json.dumps(ensure_ascii=False)` leaves raw that a terminal may act on or reorder."""
    return re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


RED = "31"
BOLD = "1"
DIM = "2"


def printable(text: str) -> str:
    """`text` without escape sequences, control characters or bidi controls (newlines and tabs
    kept; a Unicode line or paragraph separator becomes a newline)."""
    return _line_separators().sub("\n", _escapes().sub("", text))


def printable_line(text: str) -> str:
    """`printable(text)` on one line: each line break shown as `↵`, so no text can start a line of
    its own (a model faking a `toolscope: error:` line, say)."""
    return printable(text).replace("\n", "↵")


def first_line(text: str, cells: int) -> str:
    """The first line of `text`, printable, in at most `cells` terminal cells (a wide character,
    CJK say, takes two); `…` ends it when anything was left out, the lines after it included."""
    from rich.cells import cell_len

    head, newline, _rest = text.strip().partition("\n")
    bound = 4 * cells  # enough characters for `cells` cells once escape sequences are removed
    line = printable_line(head[:bound])
    if not newline and len(head) <= bound and cell_len(line) <= cells:
        return line
    kept, used = [], 0
    for char in line:
        used += cell_len(char)
        if used > cells - 1:
            break
        kept.append(char)
    return "".join(kept) + "…"


def json_text(value: Any, **options: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, **options)` with what a terminal would act on or
    reorder escaped; still valid JSON meaning the same (those characters only occur in strings)."""
    text = json.dumps(value, ensure_ascii=False, **options)
    return _json_unsafe().sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def colour_enabled(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set or TERM is dumb."""
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def paint(text: str, sgr: str, colour: bool) -> str:
    """`text` (already printable) in the SGR style `sgr` when `colour` is on."""
    return f"\x1b[{sgr}m{text}\x1b[0m" if colour else text


def write_line(stream: TextIO, text: str, *, sgr: str | None = None) -> None:
    """`text` as one printable line on `stream`, in style `sgr` on a colour terminal."""
    line = printable_line(text)
    stream.write((paint(line, sgr, colour_enabled(stream)) if sgr else line) + "\n")
    stream.flush()


def print_error(message: str) -> None:
    """`toolscope: error: MESSAGE` on stderr, the message shown literally on one line."""
    from app.i18n import _

    write_line(sys.stderr, _("toolscope: error: {message}").format(message=message), sgr=RED)


def print_warning(message: str) -> None:
    """`toolscope: warning: MESSAGE` on stderr, the message shown literally on one line."""
    from app.i18n import _

    write_line(sys.stderr, _("toolscope: warning: {message}").format(message=message))


@cache
def _unfinished() -> re.Pattern[str]:
    """An escape sequence that runs to the end of the text without its final character."""
    return re.compile(r"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*|[PX^_][^\x1b]*)?\Z")


class PrintableStream:
    """`printable` for text arriving in pieces: an escape sequence split across two deltas is
    held back until it is complete, so no half of it leaks out as visible text."""

    _LONGEST_HELD = 256

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, text: str) -> str:
        text, self._pending = self._pending + text, ""
        start = text.rfind("\x1b")
        if start != -1 and len(text) - start <= self._LONGEST_HELD and _unfinished().match(text, start):
            text, self._pending = text[:start], text[start:]
        return printable(text)

    def reset(self) -> None:
        """The text ended: a sequence still unfinished is dropped, it was never text."""
        self._pending = ""

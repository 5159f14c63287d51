"""Text from models, tools and MCP servers shown on a terminal: literally, never as commands.

A reply or a tool result may contain escape sequences (a colour change is harmless, a cursor move
or an OSC title/clipboard write is not) or other control characters. `printable` removes every
escape sequence and control character except newline and tab, so what is printed is exactly the
visible text. The Textual UI escapes Rich markup separately; this is for plain terminal output.
"""

from __future__ import annotations

import re

_ESCAPES = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]               # CSI: cursor moves, colours, erases
    | \x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?  # OSC: titles, hyperlinks, clipboard writes
    | \x1b[PX^_][^\x1b]*(?:\x1b\\)?       # DCS, SOS, PM, APC strings
    | \x1b[@-Z\\-_]                       # other two-character escapes
    | [\x00-\x08\x0b-\x1f\x7f-\x9f]       # every other control character (C0 but \t \n, DEL, C1)
    """,
    re.VERBOSE,
)


def printable(text: str) -> str:
    """`text` without escape sequences or control characters (newlines and tabs kept)."""
    return _ESCAPES.sub("", text)


_UNFINISHED = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*|[PX^_][^\x1b]*)?\Z")
"""An escape sequence that runs to the end of the text without its final character."""


class PrintableStream:
    """`printable` for text arriving in pieces: an escape sequence split across two deltas is
    held back until it is complete, so no half of it leaks out as visible text."""

    _LONGEST_HELD = 256

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, text: str) -> str:
        text, self._pending = self._pending + text, ""
        start = text.rfind("\x1b")
        if start != -1 and len(text) - start <= self._LONGEST_HELD and _UNFINISHED.match(text, start):
            text, self._pending = text[:start], text[start:]
        return printable(text)

    def reset(self) -> None:
        """The text ended: a sequence still unfinished is dropped, it was never text."""
        self._pending = ""

"""Untrusted text (model replies, tool output, MCP names, session files) made safe to show.

The terminal rules are `app.terminal.printable` (escape sequences and control characters go);
Textual adds Rich markup, which `Content` never interprets, so `[bold]` appears as typed.
"""

from __future__ import annotations

from textual.content import Content

from app.terminal import printable


def literal(text: str) -> Content:
    """`text` exactly as typed: no markup, no escape sequences."""
    return Content(printable(text))


def line_count(text: str) -> int:
    """The lines of `text` as `clip_lines` cuts them: at "\n", a final one starting no line."""
    return text.count("\n") + (not text.endswith("\n"))


def clip_lines(text: str, lines: int) -> tuple[str, bool]:
    """The first `lines` lines of `text`, and whether anything was cut."""
    parts = text.split("\n", lines)
    if len(parts) <= lines:
        return text, False
    return "\n".join(parts[:lines]), True

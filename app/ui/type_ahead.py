"""Keys typed while the chat starts, kept for the composer.

Until Textual puts the terminal in raw mode, it is in the mode the shell left: the terminal turns
Enter into a newline (ICRNL), which the composer reads as Ctrl+J (a new line, not send), and echoes
what is typed over the screen. So the chat holds the terminal from its first moment, before the
slow imports: what was queued by then was typed earlier, its newlines are Enter; what comes later
arrives as Textual will read it. The composer replays what was held once it is mounted, and the
terminal gets its mode back when the chat ends.

Standard library only: this runs before anything heavy is imported.
"""

from __future__ import annotations

import copy
import os
import termios

_held: TypeAhead | None = None


class TypeAhead:
    def __init__(self, fd: int, saved: list[object], typed: str) -> None:
        self.fd = fd
        self.saved = saved
        self.typed = typed

    def release(self) -> None:
        """Give the terminal back the mode it had before the chat."""
        try:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)
        except termios.error:
            pass


def hold_terminal(fd: int = 0) -> TypeAhead | None:
    """Read keys as Textual will from now on; keep what was typed before (None off a terminal)."""
    global _held
    if not os.isatty(fd):
        return None
    try:
        saved = termios.tcgetattr(fd)
        held = copy.deepcopy(saved)
        held[0] &= ~(termios.ICRNL | termios.INLCR | termios.IGNCR)
        held[3] &= ~(termios.ICANON | termios.ECHO)
        held[6][termios.VMIN] = 0  # reads return at once with what is queued
        held[6][termios.VTIME] = 0
        termios.tcsetattr(fd, termios.TCSANOW, held)
    except termios.error:
        return None
    queued = bytearray()
    while chunk := os.read(fd, 4096):
        queued += chunk
    if saved[0] & termios.ICRNL:
        queued = queued.replace(b"\n", b"\r")
    _held = TypeAhead(fd, saved, queued.decode(errors="replace"))
    return _held


def take_typed() -> str:
    """What was typed before the terminal was held, once (then nothing)."""
    if _held is None:
        return ""
    typed, _held.typed = _held.typed, ""
    return typed

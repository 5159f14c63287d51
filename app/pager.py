"""Long text reports on a terminal go through the user's pager, the way `git` does it.

The pager is `$TOOLSCOPE_PAGER`, else `$PAGER`, else `less`; an empty value or `cat` means none.
`less` gets `LESS=FRX` unless the user set `LESS` (quit when the text fits on one screen, keep
colours, leave the text on the screen). Off a terminal the text is written as it is.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TextIO

DEFAULT_PAGER = "less"


def pager_command() -> str | None:
    """The shell command of the pager to use, or None for no pager."""
    for variable in ("TOOLSCOPE_PAGER", "PAGER"):
        value = os.environ.get(variable)
        if value is not None:
            break
    else:
        value = DEFAULT_PAGER
    value = value.strip()
    return None if value in ("", "cat") else value


def show(text: str, *, out: TextIO | None = None, paged: bool = True) -> None:
    """Write `text` to `out` (stdout), through the pager when `paged` and `out` is a terminal."""
    out = out if out is not None else sys.stdout
    command = pager_command() if paged and out.isatty() else None
    if command is None or not _through_pager(command, text, out):
        out.write(text)
        out.flush()


def _through_pager(command: str, text: str, out: TextIO) -> bool:
    """False when the pager cannot be started (the caller prints the text itself)."""
    environment = dict(os.environ)
    environment.setdefault("LESS", "FRX")
    environment.setdefault("LV", "-c")
    out.flush()
    try:
        pager = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, stdout=out, env=environment)
    except OSError:
        return False
    assert pager.stdin is not None
    try:
        pager.stdin.write(text.encode(getattr(out, "encoding", None) or "utf-8", errors="replace"))
        pager.stdin.close()
    except BrokenPipeError:
        pass  # the user quit the pager before reading everything
    while True:
        try:
            pager.wait()
            return True
        except KeyboardInterrupt:
            continue  # Ctrl+C belongs to the pager (less stops a search with it), as in git

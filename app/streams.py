"""stdout and stderr that a reader may close: `toolscope run … | head -1` must still finish the turn.

Python ignores SIGPIPE, so a write to a pipe whose reader has gone raises BrokenPipeError wherever
it happens, in the middle of a turn or in the interpreter's last flush. `guard_standard_streams`
wraps both streams once, at start-up: the first failed write sends the descriptor to /dev/null
(so nothing is printed about it at exit) and every later write is dropped, while the command
itself carries on and logs everything.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO


class ClosedPipeGuard:
    """A text stream that goes quiet, instead of raising, once its reader has closed the pipe."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                self._stream.write(text)
            except BrokenPipeError:
                self._silence()
        return len(text)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._silence()

    def _silence(self) -> None:
        self.reader_gone = True
        # What is still buffered would fail again at exit; let it go to /dev/null instead.
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_standard_streams() -> None:
    """Wrap `sys.stdout` and `sys.stderr` (once) so that a closed reader never stops a command."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, ClosedPipeGuard):
            setattr(sys, name, ClosedPipeGuard(stream))

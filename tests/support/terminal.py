"""Reading what a subprocess wrote to a pseudo-terminal (`pty.openpty`), as a user would see it."""

from __future__ import annotations

import os
import select

READ_LIMIT = 60.0
"""Seconds to wait for more output before giving up (a bound, not a timing assertion)."""


def drain(controller: int) -> bytes:
    """Everything written to the terminal until its last writer closed it; closes `controller`."""
    shown = b""
    try:
        while select.select([controller], [], [], READ_LIMIT)[0]:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the terminal's last writer is gone
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(controller)
    return shown

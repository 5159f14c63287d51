"""Loaded only by the crash test's `toolscope run` subprocesses (their PYTHONPATH names this
folder): with `TOOLSCOPE_E2E_KILL_AFTER_LINE=k`, the process SIGKILLs itself right after the k-th
line it writes to a session log. That is a kill exactly between two events, which a kill from
outside hits only by luck: the gap between two appends is well under a millisecond."""

import os
import signal

_limit = int(os.environ.get("TOOLSCOPE_E2E_KILL_AFTER_LINE") or 0)

if _limit:
    _write = os.write
    _lines = 0

    def _write_then_maybe_die(fd, data):  # type: ignore[no-untyped-def]
        global _lines
        written = _write(fd, data)
        if isinstance(data, bytes) and os.readlink(f"/proc/self/fd/{fd}").endswith(".jsonl"):
            _lines += data.count(b"\n")
            if _lines >= _limit:
                os.kill(os.getpid(), signal.SIGKILL)
        return written

    os.write = _write_then_maybe_die

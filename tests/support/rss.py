"""Peak memory of a real subprocess, measured by a wrapper process of its own so that nothing
else the test suite has run counts (`RUSAGE_CHILDREN` is the most any waited-for child used)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

_WRAPPER = textwrap.dedent(
    """
    import resource, subprocess, sys
    result = subprocess.run(sys.argv[1:], capture_output=True)
    sys.stderr.buffer.write(result.stderr)
    print(result.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
    """
)


def peak_rss(command: list[str], *, env: dict[str, str], cwd: Path | None = None) -> tuple[int, int]:
    """(exit code, peak RSS in bytes) of `command`, run to completion in a fresh process."""
    result = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *command], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )
    returncode, rss = result.stdout.split()
    return int(returncode), int(rss)

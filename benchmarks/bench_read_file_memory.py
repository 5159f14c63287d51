"""Peak memory of `read_file` on a file that is one enormous line (issue 8, item 12: a 1 GiB line
cost 2.4 GB of RSS).

Runs the real `toolscope run` on the offline model, each in a fresh subprocess whose peak RSS is
read with `resource.getrusage(RUSAGE_CHILDREN)`:
- baseline: `use read_file on small.txt` (a few bytes): the floor of the command itself;
- `use read_file on huge.txt`: the first line of a 1 GiB file without a newline (a sparse file:
  16 KiB of text, then a hole, so it costs no disk);
- the same with `offset` 2: the whole GiB is read to find that there is no second line.
Figures: each peak minus the baseline, and that as a fraction of the file. Goal: the extra memory
stays under 64 MiB (the output limit is 64 KiB; the old code held the line several times over).

    .venv/bin/python benchmarks/bench_read_file_memory.py [--mib N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SCRIPT = Path(sys.executable).parent / "toolscope"
EXTRA_GOAL = 64 * 1024 * 1024
PEAK_RSS_OF_CHILD = textwrap.dedent(
    """
    import resource, subprocess, sys
    result = subprocess.run(sys.argv[1:], capture_output=True)
    print(result.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
    """
)


def peak_rss(workspace: Path, env: dict[str, str], prompt: str) -> tuple[int, float]:
    """(peak RSS in bytes, wall seconds) of one `toolscope run PROMPT`."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", PEAK_RSS_OF_CHILD, str(SCRIPT), "run", prompt],
        cwd=workspace, env=env, capture_output=True, text=True, check=True,
    )
    elapsed = time.perf_counter() - started
    returncode, rss = result.stdout.split()
    if returncode != "0":
        raise SystemExit(f"toolscope run {prompt!r} exited {returncode}")
    return int(rss), elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="size of the one-line file in MiB")
    options = parser.parse_args()
    size = options.mib * 1024 * 1024
    with tempfile.TemporaryDirectory() as root:
        workspace = Path(root) / "work"
        workspace.mkdir()
        (workspace / "small.txt").write_text("small\n")
        with (workspace / "huge.txt").open("wb") as handle:
            handle.write(b"x" * 16384)
            handle.truncate(size)
        env = {k: v for k, v in os.environ.items() if k not in ("TOOLSCOPE_CONFIG", "DEEPSEEK_API_KEY")}
        env.update(TOOLSCOPE_HOME=str(Path(root) / "home"), TOOLSCOPE_OFFLINE_DELAY="0")
        runs = {
            "baseline (small.txt)": peak_rss(workspace, env, "use read_file on small.txt"),
            "first line of huge.txt": peak_rss(workspace, env, "use read_file on huge.txt"),
            "offset 2 of huge.txt": peak_rss(
                workspace, env, 'use read_file with {"path": "huge.txt", "offset": 2}'
            ),
        }
    floor = runs["baseline (small.txt)"][0]
    print(f"read_file on a {options.mib} MiB one-line file through `toolscope run` (offline model)")
    met = True
    for name, (rss, elapsed) in runs.items():
        extra = rss - floor
        print(f"  {name:24s} peak RSS {rss / 2**20:7.1f} MiB = {rss / floor:.2f} × baseline "
              f"(+{extra / 2**20:6.1f} MiB, {extra / size:.4f} of the file)  {elapsed:5.2f} s wall")
        met = met and extra <= EXTRA_GOAL
    print(f"goal: every run within {EXTRA_GOAL // 2**20} MiB of the baseline: {'met' if met else 'NOT met'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())

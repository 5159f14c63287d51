"""How long `toolscope --version` takes next to a bare interpreter start (goal: ≤ 0.15 s).

Runs the installed console script, `python -m app --version` and `python -c pass` in interleaved
rounds (so a busy moment of the machine hits all three alike), then prints each median wall time,
its ratio to the bare start, and whether the goal holds. Exits 1 when it does not.

    .venv/bin/python benchmarks/bench_version.py [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

GOAL_SECONDS = 0.15
SCRIPT = Path(sys.executable).parent / "toolscope"
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "toolscope --version": [str(SCRIPT), "--version"],
    "python -m app --version": [sys.executable, "-m", "app", "--version"],
}


def wall_time(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40, help="runs of each command (default 40)")
    rounds = parser.parse_args().rounds
    if not SCRIPT.exists():
        print(f"{SCRIPT} is missing: install the project first (pip install -e .)", file=sys.stderr)
        return 2

    for command in COMMANDS.values():  # warm the page cache and the bytecode caches
        wall_time(command)
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    names = list(COMMANDS)
    for round_number in range(rounds):
        # Rotate the order each round so no command always runs first or last.
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(wall_time(COMMANDS[name]))

    baseline = statistics.median(samples["python -c pass"])
    print(f"{rounds} interleaved rounds, median wall time:")
    for name, times in samples.items():
        median = statistics.median(times)
        print(f"  {name:<26} {median * 1000:7.1f} ms   ×{median / baseline:4.2f} of python -c pass")
    version = statistics.median(samples["toolscope --version"])
    holds = version <= GOAL_SECONDS
    verdict = "holds" if holds else "FAILS"
    print(f"goal toolscope --version ≤ {GOAL_SECONDS * 1000:.0f} ms: {verdict} ({version * 1000:.1f} ms)")
    return 0 if holds else 1


if __name__ == "__main__":
    sys.exit(main())

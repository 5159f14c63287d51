"""`toolscope cost` on a long session against one linear pass of `json.loads`.
`python benchmarks/bench_cost.py [--events N | --big FILE]`

The session is `benchmarks/sessions.py`'s realistic log (`--events`, default 1,000,000; or
`--big FILE`, linked into a temporary sessions dir, never written). In the same run:

- baseline: a bare `json.loads` of every line of the file (the floor: one linear pass);
- `toolscope cost SESSION` on the catalog's six routes, in a fresh process (its peak RSS its own,
  `ru_maxrss` through a small parent), twice: the first run builds the line index, the second reads
  it.

Goals (issue 27): first run ≤ 2 × the baseline; peak RSS ≤ 300 MB; the second run ≤ 0.5 × the
first.

For context, the parts of a first run that are not the scan, each alone on a copy of the file (its
own line index) in a fresh process: msgspec's decode of every line, strict validation
(`Session.load`: the index, every line decoded and checked against the invariants) and the fold
(`Session.folded_requests`: every line decoded again and folded into requests).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.sessions import write_large_session  # noqa: E402

TOOLSCOPE = Path(sys.executable).parent / "toolscope"
TIME_GOAL = 2.0
RSS_GOAL_MB = 300.0
INDEX_GOAL = 0.5
_WRAPPER = textwrap.dedent(
    """
    import resource, subprocess, sys, time
    start = time.perf_counter()
    result = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    sys.stderr.buffer.write(result.stderr)
    print(result.returncode, elapsed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
    """
)


def json_loads_pass(path: Path) -> float:
    start = time.perf_counter()
    with path.open("rb") as lines:
        for line in lines:
            json.loads(line)
    return time.perf_counter() - start


_PARTS = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from app.session import structs
    from app.session.session import Session
    path = Path(sys.argv[1])
    start = time.perf_counter()
    with path.open("rb") as lines:
        next(lines)
        for line in lines:
            structs.decode_valid(line.rstrip(b"\\n"))
    decoded = time.perf_counter() - start
    start = time.perf_counter()
    session = Session.open(path)
    session.load()
    validated = time.perf_counter() - start
    start = time.perf_counter()
    for _request in session.folded_requests():
        pass
    print(decoded, validated, time.perf_counter() - start)
    """
)


def first_run_parts(home: Path, path: Path) -> tuple[float, float, float]:
    """(decode, validation, fold) seconds, on a link to `path` in a directory of its own."""
    parts = home / "parts"
    parts.mkdir()
    os.link(path, parts / path.name)
    env = {**os.environ, "TOOLSCOPE_HOME": str(home)}
    result = subprocess.run(
        [sys.executable, "-c", _PARTS, str(parts / path.name)], env=env, capture_output=True, text=True, check=True
    )
    decoded, validated, folded = map(float, result.stdout.split())
    return decoded, validated, folded


def cost_run(home: Path, session: str) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of `toolscope cost SESSION`, in a fresh process."""
    env = {**os.environ, "TOOLSCOPE_HOME": str(home)}
    env.pop("TOOLSCOPE_CONFIG", None)
    result = subprocess.run(
        [sys.executable, "-c", _WRAPPER, str(TOOLSCOPE), "cost", session], env=env, capture_output=True, text=True
    )
    code, seconds, rss = result.stdout.split()
    if code != "0":
        raise SystemExit(f"toolscope cost failed ({code}): {result.stderr}")
    return float(seconds), int(rss) / 2**20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--events", type=int, default=1_000_000)
    group.add_argument("--big", type=Path, help="an existing session file (linked, never written)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cost-") as directory:
        home = Path(directory)
        sessions = home / "sessions"
        sessions.mkdir()
        if args.big is not None:
            path = sessions / args.big.name
            os.link(args.big, path)
        else:
            path = sessions / "bench-cost.jsonl"
            write_large_session(path, args.events)
        lines = sum(1 for _ in path.open("rb"))
        megabytes = path.stat().st_size / 2**20
        baseline = json_loads_pass(path)
        first, first_rss = cost_run(home, path.stem)
        second, second_rss = cost_run(home, path.stem)
        decoded, validated, folded = first_run_parts(home, path)
        load = os.getloadavg()[0]
    ratio, indexed = first / baseline, second / first
    rss = max(first_rss, second_rss)
    print(f"session: {lines:,} lines, {megabytes:.0f} MB; load {load:.2f}")
    print(f"  json.loads of every line   {baseline:8.2f} s")
    print(f"  toolscope cost (first)     {first:8.2f} s  {ratio:6.2f}×  (goal ≤ {TIME_GOAL}×)")
    print(f"  toolscope cost (index)     {second:8.2f} s  {indexed:6.2f}× the first  (goal ≤ {INDEX_GOAL}×)")
    print(f"  peak RSS                   {rss:8.0f} MB (goal ≤ {RSS_GOAL_MB:.0f} MB)")
    print("parts of a first run, each alone:")
    print(f"  msgspec decode             {decoded:8.2f} s  {decoded / baseline:6.2f}×")
    print(f"  strict validation          {validated:8.2f} s  {validated / baseline:6.2f}×")
    print(f"  the fold                   {folded:8.2f} s  {folded / baseline:6.2f}×")
    held = ratio <= TIME_GOAL and indexed <= INDEX_GOAL and rss <= RSS_GOAL_MB
    print(f"goals: {'hold' if held else 'MISSED'}")
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())

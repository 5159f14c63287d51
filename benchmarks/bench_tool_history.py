"""Cold and incremental `Session.tool_history()` on a ~70 MB, 100k-event session (issue 2).

Figures are ratios against baselines measured in the same run, interleaved (the machine is shared):
- cold reduce / reading the file and `json.loads`-ing every line   (goal ≤ 0.3)
- cold reduce / one incremental `tool_history()` after one append  (goal ≥ 1000×)

    .venv/bin/python benchmarks/bench_tool_history.py [--events 100000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.session.events import TurnStartData, TurnEndData  # noqa: E402
from app.session.session import Session  # noqa: E402
from app.session.store import SessionWriter  # noqa: E402
from benchmarks.sessions import write_large_session  # noqa: E402


def json_loads_every_line(path: Path) -> float:
    started = time.perf_counter()
    for line in path.read_bytes().splitlines():
        json.loads(line)
    return time.perf_counter() - started


def cold_tool_history(path: Path) -> float:
    started = time.perf_counter()
    Session.open(path).tool_history()
    return time.perf_counter() - started


def incremental_tool_history(path: Path, appends: int) -> list[float]:
    """Open a writer (which parses the log once), then time `tool_history()` after each append."""
    timings = []
    with SessionWriter.open(path) as writer:
        writer.session.tool_history()
        turn = writer.session.view().turns[-1].number
        for index in range(appends):
            if index % 2 == 0:
                turn += 1
                writer.append("turn/start", TurnStartData(turn=turn))
            else:
                writer.append("turn/end", TurnEndData(turn=turn, reason="completed"))
            started = time.perf_counter()
            writer.session.tool_history()
            timings.append(time.perf_counter() - started)
    return timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "bench.jsonl"
        count = write_large_session(path, options.events)
        size = path.stat().st_size
        print(f"session: {count} events, {size / 1e6:.1f} MB")
        loads, cold = [], []
        for _ in range(options.repeats):
            loads.append(json_loads_every_line(path))
            cold.append(cold_tool_history(path))
        incremental = incremental_tool_history(path, 200)
    best_loads, best_cold = min(loads), min(cold)
    median_incremental = statistics.median(incremental)
    print(f"read + json.loads every line: best {best_loads * 1000:8.1f} ms")
    print(f"cold tool_history():          best {best_cold * 1000:8.1f} ms")
    print(f"incremental after one append: median {median_incremental * 1e6:6.1f} µs")
    cold_ratio = best_cold / best_loads
    speedup = best_cold / median_incremental
    print(f"cold / json.loads = {cold_ratio:.3f}   (goal ≤ 0.3: {'met' if cold_ratio <= 0.3 else 'NOT met'})")
    print(f"cold / incremental = {speedup:,.0f}×  (goal ≥ 1000×: {'met' if speedup >= 1000 else 'NOT met'})")
    return 0 if cold_ratio <= 0.3 and speedup >= 1000 else 1


if __name__ == "__main__":
    sys.exit(main())

"""Issue 11's two ratio goals in CPU time, for a machine that others load: the tail and the median
full request of `bench_large.py`, each call timed with `time.process_time` and taken as the least
of `--rounds` repetitions (what a loaded machine adds to a call only makes it slower).

- tail: open + the last 200 view items with their turn, step and request numbers, BIG / the
  10-event session (goal ≤ 2); beside it, not a goal, BIG / the 1,000-event session's 200 items;
- request: the full model request (header, tool-history snapshot, messages), each from a fresh
  view: every request the 1,000-event session has, on BIG and on it (the same lines: the generator
  writes the same prefix whatever the length), medians compared (goal ≤ 2); beside it, not goals,
  20 requests spread over BIG as `bench_large.py` samples them against the 1,000-event session's at
  the same relative place and against the 10,000-event session's of the nearest window length, and
  the median windows.
- beside them, not goals, what is left per item (BIG's tail less the 10-event one, over the items
  more) and per message (the median of BIG's sampled requests' CPU over their window);

BIG is `--big FILE` (linked, never written: only its line index is written, beside the link) or a
generated session of `--events` events. Exits 1 when a goal does not hold.

    .venv/bin/python benchmarks/bench_large_cpu.py [--big FILE | --events N] [--rounds N]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.session.session import Session  # noqa: E402
from benchmarks.bench_large import full_request, nearest, report, requests_by_window, tail  # noqa: E402
from benchmarks.sessions import write_large_session  # noqa: E402

SAMPLED = 20


def least_cpu(action: Callable[[], float | None], rounds: int) -> float:
    """The least CPU time of `rounds` calls of `action` (which may time its own part and return it)."""
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        timed = action()
        best = min(best, timed if timed is not None else time.process_time() - started)
    return best


def request_cpu(path: Path, index: int) -> float:
    """CPU time of one full request from a fresh view (the open not counted, as in bench_large)."""
    view = Session.open(path).view()
    started = time.process_time()
    full_request(view, index)
    return time.process_time() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--big", type=Path, help="use this generated session (linked, never written)")
    parser.add_argument("--rounds", type=int, default=20)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        directory = Path(home)
        big = directory / "20260101-000000-b1b1b1.jsonl"
        if options.big is not None:
            big.symlink_to(options.big.resolve())
        else:
            write_large_session(big, options.events)
        small, medium, cycles = (directory / f"20260101-000000-{name}.jsonl" for name in ("c1c1c1", "a1a1a1", "e1e1e1"))
        write_large_session(small, 10)
        write_large_session(medium, 1_000)
        write_large_session(cycles, 10_000)
        for path in (big, small, medium, cycles):
            Session.open(path).view().history  # the index and its fold checkpoints, as a writer leaves them
            tail(path)

        tails = {path: least_cpu(lambda path=path: tail(path), options.rounds * 4) for path in (big, small, medium)}
        small_items = len(Session.open(small).view().items[-200:])

        big_count = len(Session.open(big).view().requests)
        medium_count = len(Session.open(medium).view().requests)
        sample = sorted(random.Random(5).sample(range(big_count), min(200, big_count)))[:: max(1, min(200, big_count) // SAMPLED)]
        by_window = requests_by_window(cycles)
        big_times, medium_times, cycles_times, windows, medium_windows = [], [], [], [], []
        for index in sample:
            relative = min(medium_count - 1, index * medium_count // big_count)
            windows.append(len(Session.open(big).view().requests[index].messages))
            medium_windows.append(len(Session.open(medium).view().requests[relative].messages))
            paired = nearest(by_window, windows[-1])
            big_times.append(least_cpu(lambda index=index: request_cpu(big, index), options.rounds))
            medium_times.append(least_cpu(lambda relative=relative: request_cpu(medium, relative), options.rounds))
            cycles_times.append(least_cpu(lambda paired=paired: request_cpu(cycles, paired), options.rounds))
        same_big = [least_cpu(lambda index=index: request_cpu(big, index), options.rounds) for index in range(medium_count)]
        same_medium = [least_cpu(lambda index=index: request_cpu(medium, index), options.rounds) for index in range(medium_count)]

    ms = 1000
    return report([
        ("tail BIG / 10-event (CPU)", tails[big] / tails[small], 2.0, f"{tails[big] * ms:.2f} ms / {tails[small] * ms:.2f} ms"),
        ("  not a goal: tail BIG / 1,000-event (200 items)", tails[big] / tails[medium], None,
         f"{tails[big] * ms:.2f} ms / {tails[medium] * ms:.2f} ms"),
        ("  not a goal: µs per item beyond the 10-event tail's", (tails[big] - tails[small]) / (200 - small_items) * 1e6, None,
         f"({tails[big] * ms:.2f} - {tails[small] * ms:.2f} ms) / (200 - {small_items}) items"),
        (f"same request BIG / 1,000-event (median of {medium_count}, CPU)",
         statistics.median(same_big) / statistics.median(same_medium), 2.0,
         f"{statistics.median(same_big) * ms:.2f} ms / {statistics.median(same_medium) * ms:.2f} ms"),
        ("  not a goal: sampled BIG / same relative place, 1,000-event", statistics.median(big_times) / statistics.median(medium_times), None,
         f"{statistics.median(big_times) * ms:.2f} ms / {statistics.median(medium_times) * ms:.2f} ms; median windows "
         f"{statistics.median(windows):.0f} / {statistics.median(medium_windows):.0f} messages"),
        ("  not a goal: same, equal windows (10,000-event)", statistics.median(big_times) / statistics.median(cycles_times), None,
         f"{statistics.median(big_times) * ms:.2f} ms / {statistics.median(cycles_times) * ms:.2f} ms"),
        ("  not a goal: µs per message of BIG's requests (median)", statistics.median(
            cpu / window for cpu, window in zip(big_times, windows)) * 1e6, None, "request CPU / its window"),
    ])


if __name__ == "__main__":
    sys.exit(main())

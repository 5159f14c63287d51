"""Large sessions (issue 11, docs/architecture.md §5): a huge generated log against small ones, in one run.

Writes (or copies, with --big FILE: `run` below appends to it) a session of --events events
(default 1,000,000, ~600 MB), a 10,000-, a 1,000- and a 10-event one from the same generator, and
prints ratios measured here:
- tail: open + the last 200 view items with their turn, step and request numbers, index present,
  BIG / 10-event (goal ≤ 2); and with no index yet against Toolong's first paint of the same file
  (`--toolong PYTHON`, a venv with toolong; `toolong_first_paint.py`) (goal ≤ 1). A second line,
  not a goal, compares the same 200-item tail with the 1,000-event session's: what grows with the
  log when the work per item is the same;
- any request: the full model request (header, tool-history snapshot, messages) of 200 sampled
  requests of BIG, its index holding the fold checkpoints as a writer leaves them (built once
  first, and that time printed): the slowest (goal ≤ 50 ms); and the same requests on the
  1,000-event session (goal ≤ 2): the generator writes the same events whatever the length, so BIG's
  request N is the 1,000-event log's request N, byte for byte, for every N the smaller log has
  (its 179): each is built on both, the medians compared. Not goals, beside it: BIG's sampled
  requests against the 1,000-event log's at the same relative place (their windows are ~4× shorter:
  that log has not compacted yet), and against the 10,000-event log's request of the nearest window
  length (same compaction cycle), so that only the log's size differs;
- peak RSS of a process that opens BIG, walks every request and reads the tail (goal ≤ 300 MB);
- `toolscope inspect BIG --request 1` and `toolscope run --session BIG "hi"` (offline model)
  against the 10-event session, wall time (goal ≤ 1.5 each);
- strict validation of every line (no validation record) against bare `json.loads` of every
  line (goal ≤ 1.0).
Exits 1 when a goal does not hold.

    .venv/bin/python benchmarks/bench_large.py [--events N] [--big FILE] [--rounds N] [--toolong PYTHON]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.session.line_index import VALIDATED, index_path, save_index  # noqa: E402
from app.session.session import Session  # noqa: E402
from benchmarks.sessions import write_large_session  # noqa: E402

SCRIPT = Path(sys.executable).parent / "toolscope"
RSS_PROBE = """
import resource, sys
from app.session.session import Session
view = Session.open(sys.argv[1]).view()
for request in view.requests:
    request.header, request.history, request.outcome
items = view.items[-200:]
[view.position(item.seq) for item in items]
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def timed(action) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def tail(path: Path) -> None:
    view = Session.open(path).view()
    for item in view.items[-200:]:
        view.position(item.seq)


def full_request(view, index: int) -> None:  # type: ignore[no-untyped-def]
    request = view.requests[index]
    request.header, request.history, list(request.messages)


def requests_by_window(path: Path) -> dict[int, int]:
    """Message-window length → the index of a request of `path` with that window (the first)."""
    found: dict[int, int] = {}
    for request in Session.open(path).folded_view().requests:
        found.setdefault(len(request.messages), request.index - 1)
    return found


def nearest(by_window: dict[int, int], window: int) -> int:
    return by_window[min(by_window, key=lambda length: abs(length - window))]


def json_loads_every_line(path: Path) -> None:
    with path.open("rb") as handle:
        handle.readline()
        for line in handle:
            json.loads(line)


def forget_validation(path: Path) -> None:
    """Drop the validation record from the index (as any change to the file would)."""
    session = Session.open(path)
    session.chain.own.index.extra.discard(VALIDATED)
    save_index(session.chain.own.index)


def validate(path: Path) -> None:
    Session.open(path).load()


def toolong_first_paint(python: str, path: Path) -> float:
    """Seconds to Toolong's first paint of `path`'s tail, measured by `toolong_first_paint.py`
    under `python` (a venv with toolong installed)."""
    script = Path(__file__).resolve().parent / "toolong_first_paint.py"
    probe = subprocess.run([python, str(script), str(path)], check=True, capture_output=True, text=True)
    return float(probe.stdout.split()[-1])


def wall(command: list[str], env: dict[str, str]) -> float:
    return timed(
        lambda: subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--big", type=Path, help="reuse this generated session instead of writing one")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--toolong", metavar="PYTHON", help="a Python with toolong installed (its own venv)")
    options = parser.parse_args()
    results: list[tuple[str, float, float | None, str]] = []
    with tempfile.TemporaryDirectory() as home:
        # This process and the commands it runs are one user's: the same data home, so the same
        # key seals the index caches (a cache sealed under another key is rebuilt).
        os.environ["TOOLSCOPE_HOME"] = home
        sessions = Path(home) / "sessions"
        sessions.mkdir()
        big = sessions / "20260101-000000-b1b1b1.jsonl"
        if options.big is not None:
            # Copied, never linked: `run` below appends a turn, and FILE stays as it was.
            shutil.copyfile(options.big, big)
            big.chmod(0o600)
        else:
            write_large_session(big, options.events)
        medium, small = sessions / "20260101-000000-a1a1a1.jsonl", sessions / "20260101-000000-c1c1c1.jsonl"
        cycles = sessions / "20260101-000000-e1e1e1.jsonl"
        write_large_session(cycles, 10_000)
        write_large_session(medium, 1_000)
        write_large_session(small, 10)
        big_session = Session.open(big)
        print(f"BIG: {len(big_session.chain):,} events, {big.stat().st_size / 1e6:.0f} MB; "
              f"{len(big_session.view().requests):,} requests")

        # Tail with no index yet (a line scan of the whole file), against Toolong's first paint of
        # the same file's tail (its own scan), interleaved; then warm rounds against the small one.
        cold_times, toolong_times = [], []
        for _ in range(3 if options.toolong else 1):
            index_path(big).unlink(missing_ok=True)
            cold_times.append(timed(lambda: tail(big)))
            if options.toolong:
                toolong_times.append(toolong_first_paint(options.toolong, big))
        cold = statistics.median(cold_times)
        if options.toolong:
            toolong = statistics.median(toolong_times)
            results.append(("tail with no index / Toolong's first paint", cold / toolong, 1.0,
                            f"{cold:.2f} s / {toolong:.2f} s"))
        else:
            print(f"tail, no index yet (line scan): {cold:.2f} s (no --toolong: not compared)")
        tail(small)
        tail(medium)
        warm_big, warm_small, warm_medium = [], [], []
        for _ in range(options.rounds):
            warm_big.append(timed(lambda: tail(big)))
            warm_small.append(timed(lambda: tail(small)))
            warm_medium.append(timed(lambda: tail(medium)))
        ratio = statistics.median(warm_big) / statistics.median(warm_small)
        results.append(("tail BIG / 10-event (index present)", ratio, 2.0,
                        f"{statistics.median(warm_big) * 1000:.1f} ms / {statistics.median(warm_small) * 1000:.1f} ms"))
        ratio = statistics.median(warm_big) / statistics.median(warm_medium)
        results.append(("  not a goal: tail BIG / 1,000-event (200 items)", ratio, None,
                        f"{statistics.median(warm_big) * 1000:.1f} ms / {statistics.median(warm_medium) * 1000:.1f} ms"))

        # The fold checkpoints as a writer leaves them in the index (it records them as it appends;
        # the generator writes lines, not through the writer): built once here, timed, not a goal.
        built = timed(lambda: Session.open(big).view().history)
        print(f"checkpoints of BIG built once (a full fold of what changes the state): {built:.1f} s")

        # Any request's full model request, from a fresh view each time (no state carried over).
        rng = random.Random(5)
        big_count = len(Session.open(big).view().requests)
        medium_count = len(Session.open(medium).view().requests)
        sample = sorted(rng.sample(range(big_count), min(200, big_count)))
        cycles_by_window = requests_by_window(cycles)
        big_times, medium_times, cycles_times, windows = [], [], [], []
        for index in sample:
            view = Session.open(big).view()
            big_times.append(timed(lambda: full_request(view, index)))
            windows.append(len(view.requests[index].messages))
            view = Session.open(medium).view()
            relative = min(medium_count - 1, index * medium_count // big_count)
            medium_times.append(timed(lambda: full_request(view, relative)))
            view = Session.open(cycles).view()
            paired = nearest(cycles_by_window, windows[-1])
            cycles_times.append(timed(lambda: full_request(view, paired)))
        slowest = max(big_times)
        results.append(("slowest full request on BIG (s)", slowest, 0.050,
                        f"{slowest * 1000:.1f} ms, window {windows[big_times.index(slowest)]} messages"))
        same_big, same_medium = [], []
        for index in range(medium_count):  # the requests both logs have: the same lines
            view = Session.open(big).view()
            same_big.append(timed(lambda: full_request(view, index)))
            view = Session.open(medium).view()
            same_medium.append(timed(lambda: full_request(view, index)))
        ratio = statistics.median(same_big) / statistics.median(same_medium)
        results.append((f"same request BIG / 1,000-event (median of {medium_count})", ratio, 2.0,
                        f"{statistics.median(same_big) * 1000:.2f} ms / {statistics.median(same_medium) * 1000:.2f} ms"))
        ratio = statistics.median(big_times) / statistics.median(medium_times)
        results.append(("  not a goal: sampled BIG / same relative place, 1,000-event", ratio, None,
                        f"{statistics.median(big_times) * 1000:.1f} ms / {statistics.median(medium_times) * 1000:.1f} ms"))
        ratio = statistics.median(big_times) / statistics.median(cycles_times)
        results.append(("  not a goal: same, equal windows (10,000-event)", ratio, None,
                        f"{statistics.median(big_times) * 1000:.1f} ms / {statistics.median(cycles_times) * 1000:.1f} ms; "
                        f"median window {statistics.median(windows):.0f} messages"))

        # Peak RSS: open, walk every request, read the tail.
        probe = subprocess.run(
            [sys.executable, "-c", RSS_PROBE, str(big)], check=True, capture_output=True, text=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
        rss_mb = int(probe.stdout.split()[-1]) / 1024
        results.append(("peak RSS MB: open, every request, tail", rss_mb, 300, f"{rss_mb:.0f} MB"))

        # Strict validation of every line (no validation record yet; the line index is there)
        # against json.loads of every line, once each (a minute on 1M lines). It leaves the record
        # a writer leaves as it closes, as `run` below expects.
        loads = timed(lambda: json_loads_every_line(big))
        forget_validation(big)
        strict = timed(lambda: validate(big))
        results.append(("strict validation / json.loads", strict / loads, 1.0, f"{strict:.1f} s / {loads:.1f} s"))

        # Commands, wall time, interleaved.
        env = {k: v for k, v in os.environ.items() if k not in ("TOOLSCOPE_CONFIG", "DEEPSEEK_API_KEY")}
        env["TOOLSCOPE_HOME"] = home
        inspect_big, inspect_small, run_big, run_small = [], [], [], []
        for _ in range(options.rounds):
            inspect_big.append(wall([str(SCRIPT), "inspect", big.stem, "--request", "1"], env))
            inspect_small.append(wall([str(SCRIPT), "inspect", small.stem, "--request", "1"], env))
        for _ in range(2):
            run_big.append(wall([str(SCRIPT), "run", "--route", "offline/demo", "--session", big.stem, "hi"], env))
            run_small.append(wall([str(SCRIPT), "run", "--route", "offline/demo", "--session", small.stem, "hi"], env))
        for name, a, b in (("inspect --request 1", inspect_big, inspect_small), ("run --session … hi", run_big, run_small)):
            ratio = statistics.median(a) / statistics.median(b)
            results.append((f"`{name}` BIG / 10-event", ratio, 1.5,
                            f"{statistics.median(a):.2f} s / {statistics.median(b):.2f} s"))

        for path in sessions.glob("*.idx"):
            path.unlink()

    return report(results)


def report(results: list[tuple[str, float, float | None, str]]) -> int:
    """Print the load average and each (name, value, goal or None, detail); 1 if a goal is not met."""
    print("load average (1, 5, 15 min): " + ", ".join(f"{load:.2f}" for load in os.getloadavg()))
    failed = False
    for name, value, goal, detail in results:
        shown = f"{value:.3f}" if value < 100 else f"{value:.0f}"
        if goal is None:
            print(f"{name:50} {shown:>9}  ({detail})")
            continue
        met = value <= goal
        failed = failed or not met
        print(f"{name:50} {shown:>9}  ({detail}; goal ≤ {goal}: {'met' if met else 'NOT met'})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

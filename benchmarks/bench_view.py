"""`toolscope view` on a large session against a 10-event one (issue 12, "large sessions").

Writes a generated session of N events (default 100,000; `benchmarks/sessions.py`) and one of 10,
then measures each in a fresh subprocess running the viewer headless (`ViewerApp.run_test`), so
nothing one measurement loaded helps the next:
- first paint: from opening the session (what `toolscope view FILE` does before the app starts) to
  the first frame of the Trajectory screen (its loading line), and to the first frame with the
  trajectory's rows;
- key latency: the cursor moved down in the flat list (down and up in the small one), one key at a
  time, each timed from the key event to the next frame the app renders; p50 and p95;
- peak RSS (`ru_maxrss`) after paging through the whole flat list, one Page Down at a time.
Every figure is printed beside the 10-event baseline of the same run, as a ratio. Goals (issue 12,
stated for 1M events with the indexed reader): rows shown ≤ 1.5 × the small session, p95 key
latency ≤ 50 ms, peak RSS ≤ 300 MB. Exits 1 when a goal does not hold.

    .venv/bin/python benchmarks/bench_view.py [--events N] [--keys N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PAINT_GOAL = 1.5
KEY_GOAL_MS = 50.0
RSS_GOAL_MB = 300.0
SIZE = (120, 40)


# --- one measurement (the child process) ---------------------------------------------------------


async def _measure(path: Path, keys: int) -> dict[str, float]:
    from textual import events

    from app.ui.screens.viewer import TrajectoryScreen
    from app.ui.trajectory_source import SessionFileSource
    from app.ui.viewer_app import ViewerApp
    from app.ui.widgets.trajectory_list import TrajectoryList

    start = time.perf_counter()
    app = ViewerApp(SessionFileSource.open(path))
    painted = asyncio.Event()
    display = app._display

    def timed_display(screen, renderable) -> None:  # type: ignore[no-untyped-def]
        # Every frame the app renders goes through here (the headless driver then drops it).
        display(screen, renderable)
        if renderable is not None and isinstance(screen, TrajectoryScreen):
            painted.set()

    app._display = timed_display  # type: ignore[method-assign]

    async def frame_after(action) -> float:  # type: ignore[no-untyped-def]
        began = time.perf_counter()
        painted.clear()
        action()
        await painted.wait()
        return time.perf_counter() - began

    figures: dict[str, float] = {}
    async with app.run_test(size=SIZE) as pilot:
        await painted.wait()
        figures["first_frame"] = time.perf_counter() - start
        screen = app.screen
        while not screen.loaded:
            painted.clear()
            await painted.wait()
        figures["rows_shown"] = time.perf_counter() - start
        await pilot.press("v")
        flat = screen.query_one(TrajectoryList)

        def key(name: str):  # type: ignore[no-untyped-def]
            return lambda: app._driver.send_message(events.Key(name, None))

        latencies = []
        for index in range(keys):
            direction = "down" if len(flat.rows) > keys or index < keys // 2 else "up"
            latencies.append(await frame_after(key(direction)))
        figures["key_p50"] = statistics.median(latencies)
        figures["key_p95"] = statistics.quantiles(latencies, n=20)[-1]
        await pilot.press("home")
        while flat.cursor < len(flat.rows) - 1:
            await frame_after(key("pagedown"))
        figures["rows"] = len(flat.rows)
    figures["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return figures


# --- the run -------------------------------------------------------------------------------------


def _child(path: Path, keys: int) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, __file__, "--child", str(path), "--keys", str(keys)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    return json.loads(result.stdout.splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=300)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(asyncio.run(_measure(args.child, args.keys))))
        return 0

    from benchmarks.sessions import write_large_session

    with tempfile.TemporaryDirectory(prefix="bench-view-") as folder:
        small, large = Path(folder) / "small.jsonl", Path(folder) / "large.jsonl"
        write_large_session(small, events=10)
        written = write_large_session(large, events=args.events)
        print(f"sessions: {written:,} events ({large.stat().st_size / 2**20:.0f} MiB) and 10 events")
        base = _child(small, args.keys)
        big = _child(large, args.keys)

    def row(name: str, key: str, unit: str, scale: float = 1.0) -> float:
        ratio = big[key] / base[key]
        print(f"{name:<34} {big[key] * scale:10.1f} {unit:<3} vs {base[key] * scale:8.1f} {unit:<3}  ({ratio:.2f}x)")
        return ratio

    row("first frame (loading line)", "first_frame", "ms", 1000)
    paint = row("first paint with rows", "rows_shown", "ms", 1000)
    row("key latency p50 (flat list)", "key_p50", "ms", 1000)
    row("key latency p95 (flat list)", "key_p95", "ms", 1000)
    row("peak RSS after paging through", "peak_rss_mb", "MB")
    print(f"rows in the flat list: {int(big['rows']):,}")
    goals = {
        f"rows shown ≤ {PAINT_GOAL}x the 10-event session": paint <= PAINT_GOAL,
        f"key p95 ≤ {KEY_GOAL_MS:.0f} ms": big["key_p95"] * 1000 <= KEY_GOAL_MS,
        f"peak RSS ≤ {RSS_GOAL_MB:.0f} MB": big["peak_rss_mb"] <= RSS_GOAL_MB,
    }
    for goal, held in goals.items():
        print(f"{'holds' if held else 'MISSED'}: {goal}")
    return 0 if all(goals.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

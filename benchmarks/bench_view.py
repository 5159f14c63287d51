"""`toolscope view` on a large session against a 10-event one and against Toolong (issue 12, item 5
and "Benchmarks").

The large session is a file (`--file`, by default the 1M-event one the large-sessions benchmark
leaves in /tmp/large_bench) or one generated here (`--events N`, `benchmarks/sessions.py`); the
10-event one is generated. Each measurement runs in a fresh subprocess running the trajectory headless
(`TrajectoryApp.run_test`), so nothing one measurement loaded helps the next:
- first paint: from opening the session (what `toolscope view FILE` does before the app starts)
  to the first frame of the Trajectory screen (its loading line), and to the first frame with
  the trajectory's rows, and to the first frame showing the latest turn expanded with the cursor
  on it (where the trajectory opens, issue 24 item 8) — on a copy of the file indexed first (the
  usual case; a copy, as another process may append to the shared file meanwhile), and also
  without an index (a hard link to the copy in a fresh folder: the trajectory indexes it, showing
  progress);
- Toolong (`tl`) opening the same large file, in the same run (`benchmarks/toolong_first_paint.py`
  run by `--toolong PYTHON`, by default /tmp/tlvenv/bin/python when it exists);
- key latency: the cursor moved down in the flat list (down and up in the small one), one key at a
  time, each timed from the key event to the next frame the app renders; p50 and p95, first while
  the classification and validation run behind the trajectory (right after the first paint), then
  once they are done;
- peak RSS (`ru_maxrss`) after paging through the flat list as a user would: Page Down from the
  top `--pages` times, End, Page Up `--pages` times, then a jump to each of 200 points spread over
  the whole list (every row between them is found but not drawn); `--pages 0` pages through the
  whole list as a user would, one Page Down key at a time, each followed by its frame, so every
  row is drawn once (1M events: 582,455 rows, 15,742 Page Downs, about 48 min at a load of 5-14
  on 2 cores, peak RSS 157 MB; progress on stderr). Each run prints the Page Down frame p50/p95
  and how long the paging took;
- with `--tree-pages N`, peak RSS after paging the Tree (the default mode) in a process of its
  own: every collapsed node within a page of the cursor is opened, then Page Down, N times.
Every figure is printed beside the 10-event baseline of the same run, as a ratio, with the load
average. Goals (issue 12, for 1M events): rows shown ≤ 1.5 × the small session and before Toolong,
p95 key latency ≤ 50 ms, peak RSS ≤ 300 MB; (issue 24 item 8) the latest turn shown ≤ 1.5 × the
small session's. Exits 1 when a goal does not hold.

    .venv/bin/python benchmarks/bench_view.py [--file PATH | --events N] [--keys N] [--pages N] [--tree-pages N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
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
LARGE_FILE = Path("/tmp/large_bench/20260101-000000-b1b1b1.jsonl")
TOOLONG_PYTHON = Path("/tmp/tlvenv/bin/python")
JUMPS = 200
PROGRESS_EVERY = 1000
TREE_PAGES = 0


# --- one measurement (the child process) ---------------------------------------------------------


async def _measure(path: Path, keys: int, pages: int, mode: str) -> dict[str, float]:
    from textual import events

    from app.session.view import Turn
    from app.trajectory.source import SessionFileSource
    from app.ui.trajectory.app import TrajectoryApp
    from app.ui.trajectory.flat_list import TrajectoryList
    from app.ui.trajectory.screen import TrajectoryScreen
    from app.ui.trajectory.tree import TrajectoryTree, entry_of

    start = time.perf_counter()
    app = TrajectoryApp(SessionFileSource.open(path))
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

    def key(name: str):  # type: ignore[no-untyped-def]
        return lambda: app._driver.send_message(events.Key(name, None))

    async def latencies(flat: TrajectoryList) -> list[float]:
        found = []
        for index in range(keys):
            direction = "down" if len(flat.rows) > keys or index < keys // 2 else "up"
            found.append(await frame_after(key(direction)))
        return found

    figures: dict[str, float] = {}
    async with app.run_test(size=SIZE) as pilot:
        await painted.wait()
        figures["first_frame"] = time.perf_counter() - start
        screen = app.screen
        while not screen.loaded:
            painted.clear()
            await painted.wait()
        figures["rows_shown"] = time.perf_counter() - start
        tree = screen.query_one(TrajectoryTree)

        def turn_opened() -> Turn | None:
            node = tree.cursor_node
            entry = entry_of(node.data) if node is not None else None
            return entry.subject if entry is not None and isinstance(entry.subject, Turn) and node.is_expanded else None

        while turn_opened() is None:
            painted.clear()
            await painted.wait()
        figures["latest_turn_shown"] = time.perf_counter() - start
        opened = turn_opened()
        if opened is None or opened.number != len(screen.model.view.turns):
            raise SystemExit(f"the trajectory opened on turn {opened.number if opened else None}, not the latest")
        if mode == "paint":
            app.exit()
            return figures
        if mode == "tree":
            await app.workers.wait_for_complete()
            figures.update(await _tree_paging(screen.query_one(TrajectoryTree), pages, frame_after, key, pilot))
            app.exit()
            figures["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            return figures
        await pilot.press("v")
        flat = screen.query_one(TrajectoryList)
        during = await latencies(flat)
        await app.workers.wait_for_complete()
        figures["background_done"] = time.perf_counter() - start
        await pilot.press("home")
        after = await latencies(flat)
        for name, found in (("during", during), ("after", after)):
            figures[f"key_p50_{name}"] = statistics.median(found)
            figures[f"key_p95_{name}"] = statistics.quantiles(found, n=20)[-1]
        await pilot.press("home")
        frames = []
        began = time.perf_counter()
        if pages:
            for _page in range(pages):
                frames.append(await frame_after(key("pagedown")))
            await frame_after(key("end"))
            for _page in range(pages):
                await frame_after(key("pageup"))
            for point in range(JUMPS + 1):
                flat.cursor = (len(flat.rows) - 1) * point // JUMPS
                await pilot.pause()
        else:
            while flat.cursor < len(flat.rows) - 1:
                frames.append(await frame_after(key("pagedown")))
                if len(frames) % PROGRESS_EVERY == 0:
                    _progress(f"{len(frames):,} pages, row {flat.cursor:,} of {len(flat.rows):,}", began)
        figures["paging_s"] = time.perf_counter() - began
        figures["pages"] = len(frames)
        if frames:
            figures["page_p50"] = statistics.median(frames)
            figures["page_p95"] = statistics.quantiles(frames, n=20)[-1] if len(frames) > 1 else frames[0]
        figures["rows"] = len(flat.rows)
    figures["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return figures


async def _tree_paging(tree, pages: int, frame_after, key, pilot) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """The Tree as a reader who opens everything pages through it: every collapsed node within a
    page of the cursor is expanded (its children built, one at a time, from the top), then Page
    Down; `pages` of them, each followed by its frame, or until the last line."""
    frames, expansions = [], 0
    began = time.perf_counter()
    height = tree.scrollable_content_region.height
    while len(frames) < pages and tree.cursor_line < len(tree._tree_lines) - 1:
        while True:
            top = max(tree.cursor_line - height, 0)
            shown = [line.node for line in tree._tree_lines[top : tree.cursor_line + height]]
            closed = next((node for node in shown if node.allow_expand and not node.is_expanded), None)
            if closed is None:
                break
            closed.expand()
            expansions += 1
            await pilot.pause()  # its children are built as the expansion's message is handled
        frames.append(await frame_after(key("pagedown")))
        if len(frames) % PROGRESS_EVERY == 0:
            _progress(f"{len(frames):,} pages in the tree, line {tree.cursor_line:,} of {len(tree._tree_lines):,}", began)
    return {
        "paging_s": time.perf_counter() - began,
        "pages": len(frames),
        "expansions": expansions,
        "tree_lines": len(tree._tree_lines),
        "page_p50": statistics.median(frames),
        "page_p95": statistics.quantiles(frames, n=20)[-1],
    }


def _progress(what: str, began: float) -> None:
    """A line on stderr while a long paging runs (the parent passes it through)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    elapsed = time.perf_counter() - began
    print(f"  {what}: {elapsed:.0f} s, peak RSS {rss:.0f} MB, load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)


# --- the run -------------------------------------------------------------------------------------


def _child(path: Path, keys: int, pages: int, mode: str = "full") -> dict[str, float]:
    command = [sys.executable, __file__, "--child", str(path), "--keys", str(keys), "--pages", str(pages)]
    # stderr is passed through: a whole page-through reports its progress there.
    result = subprocess.run([*command, "--mode", mode], stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise SystemExit(f"the measurement of {path} failed (its error is above)")
    return json.loads(result.stdout.splitlines()[-1])


def _toolong(python: Path, path: Path) -> float | None:
    script = Path(__file__).with_name("toolong_first_paint.py")
    result = subprocess.run([str(python), str(script), str(path)], capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        print(f"toolong failed: {result.stderr.strip().splitlines()[-1:]}")
        return None
    return float(result.stdout.split()[-1])


def _as_a_writer_leaves_it(path: Path) -> None:
    """The line index present and current, with the fold checkpoints up to the last event: what a
    writer keeps as it closes (the agent reads the tail's state before each request), and any
    earlier view of the latest turn. A copy of a session has neither: its first view builds them
    (the measurement without an index shows that case)."""
    from app.session.session import Session

    session = Session.open(path)
    session.tool_history()  # the state after the last event, from the checkpoints it records
    session.save_index()


def _without_index(path: Path, folder: Path) -> Path:
    """The same file in a fresh folder, so no line index lies beside it (a hard link when it can)."""
    bare = folder / path.name
    try:
        os.link(path, bare)
    except OSError:
        shutil.copyfile(path, bare)
    return bare


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", type=Path, help="the large session (default: the 1M one, else generated)")
    parser.add_argument("--events", type=int, default=1_000_000, help="events to generate when there is no file")
    parser.add_argument("--keys", type=int, default=300)
    parser.add_argument("--pages", type=int, default=500, help="Page Downs then Page Ups; 0: the whole list")
    parser.add_argument("--toolong", type=Path, default=TOOLONG_PYTHON if TOOLONG_PYTHON.exists() else None)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--tree-pages", type=int, default=TREE_PAGES, help="keys paging the Tree (0: none)")
    parser.add_argument("--mode", choices=["full", "paint", "tree"], default="full", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(asyncio.run(_measure(args.child, args.keys, args.pages, args.mode))))
        return 0

    from app.session.session import Session
    from benchmarks.sessions import write_large_session

    with tempfile.TemporaryDirectory(prefix="bench-view-") as folder:
        small = Path(folder) / "small.jsonl"
        write_large_session(small, events=10)
        given = args.file or (LARGE_FILE if LARGE_FILE.exists() else None)
        large = Path(folder) / "indexed" / (given.name if given is not None else "large.jsonl")
        large.parent.mkdir()
        if given is not None:
            # A copy: another process may be appending to the shared file while this one measures.
            shutil.copyfile(given, large)
        else:
            write_large_session(large, events=args.events)
        for path in (large, small):
            _as_a_writer_leaves_it(path)
        events = len(Session.open(large).chain)
        print(f"sessions: {large} ({events:,} events, {large.stat().st_size / 2**20:.0f} MiB) and 10 events")
        print(f"load average before: {os.getloadavg()[0]:.2f}")
        base = _child(small, args.keys, args.pages)
        big = _child(large, args.keys, args.pages)
        (Path(folder) / "bare").mkdir()
        bare = _child(_without_index(large, Path(folder) / "bare"), args.keys, args.pages, "paint")
        tree = _child(large, args.keys, args.tree_pages, "tree") if args.tree_pages else None
        toolong = _toolong(args.toolong, large) if args.toolong is not None else None
        print(f"load average after: {os.getloadavg()[0]:.2f}")

    def row(name: str, key: str, unit: str, scale: float = 1.0, base_key: str | None = None) -> float:
        baseline = base[base_key or key]
        ratio = big[key] / baseline
        print(f"{name:<44} {big[key] * scale:10.1f} {unit:<3} vs {baseline * scale:8.1f} {unit:<3}  ({ratio:.2f}x)")
        return ratio

    row("first frame (loading line)", "first_frame", "ms", 1000)
    paint = row("first paint with rows (index present)", "rows_shown", "ms", 1000)
    latest_turn = row("first paint of the latest turn, expanded", "latest_turn_shown", "ms", 1000)
    print(
        f"{'first paint with rows (no index yet)':<44} {bare['rows_shown'] * 1000:10.1f} ms  "
        f"({bare['rows_shown'] / base['rows_shown']:.2f}x; its loading line after {bare['first_frame'] * 1000:.0f} ms)"
    )
    print(
        f"{'latest turn shown (no index yet)':<44} {bare['latest_turn_shown'] * 1000:10.1f} ms  "
        f"({bare['latest_turn_shown'] / base['latest_turn_shown']:.2f}x; its checkpoints folded first)"
    )
    if toolong is not None:
        print(f"{'Toolong (tl) first paint, same file':<44} {toolong * 1000:10.1f} ms  (view/tl {big['rows_shown'] / toolong:.2f}x)")
    row("key p50 (flat list), background running", "key_p50_during", "ms", 1000)
    row("key p95 (flat list), background running", "key_p95_during", "ms", 1000)
    row("key p50 (flat list), background done", "key_p50_after", "ms", 1000)
    row("key p95 (flat list), background done", "key_p95_after", "ms", 1000)
    print(f"background (classification, validation) done after {big['background_done']:.1f} s")
    row("Page Down frame p50 (flat list)", "page_p50", "ms", 1000)
    row("Page Down frame p95 (flat list)", "page_p95", "ms", 1000)
    row("peak RSS after paging through", "peak_rss_mb", "MB")
    print(f"rows in the flat list: {int(big['rows']):,}; {int(big['pages']):,} Page Downs; paging took {big['paging_s']:.0f} s")
    if tree is not None:
        print(
            f"{'Tree: peak RSS after paging':<44} {tree['peak_rss_mb']:10.1f} MB  ({int(tree['pages']):,} Page Downs, "
            f"{int(tree['expansions']):,} nodes opened, {int(tree['tree_lines']):,} lines open; "
            f"frame p50 {tree['page_p50'] * 1000:.1f} ms, p95 {tree['page_p95'] * 1000:.1f} ms; {tree['paging_s']:.0f} s)"
        )
    goals = {
        f"rows shown ≤ {PAINT_GOAL}x the 10-event session": paint <= PAINT_GOAL,
        f"latest turn shown ≤ {PAINT_GOAL}x the 10-event session's": latest_turn <= PAINT_GOAL,
        f"key p95 ≤ {KEY_GOAL_MS:.0f} ms (background done)": big["key_p95_after"] * 1000 <= KEY_GOAL_MS,
        f"key p95 ≤ {KEY_GOAL_MS:.0f} ms (background running)": big["key_p95_during"] * 1000 <= KEY_GOAL_MS,
        f"peak RSS ≤ {RSS_GOAL_MB:.0f} MB": big["peak_rss_mb"] <= RSS_GOAL_MB,
    }
    if toolong is not None:
        goals["first paint before Toolong's"] = big["rows_shown"] < toolong
    for goal, held in goals.items():
        print(f"{'holds' if held else 'MISSED'}: {goal}")
    return 0 if all(goals.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

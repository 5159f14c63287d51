"""`toolscope sessions` on a session holding one enormous line (issue 8, item 13: was quadratic).

Writes one session whose tool result is a single 50 MB line and one whose result is 200 MB, and
measures, interleaved, a cold `list_sessions()` (index cache deleted first) of each against the
floor of any listing: reading the same file in the listing's chunks. Figures:
- scan(200 MB) / scan(50 MB): a linear scan is about 4 (the quadratic one was about 17);
- scan / read of the 200 MB file: the cost of the listing over one plain read of the bytes.
Exits 1 when the length ratio is above 1.5 × the linear 4 (room for noise) or the scan costs more
than 8 reads.

    .venv/bin/python benchmarks/bench_long_line.py [--small MB] [--large MB] [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.session.events import (  # noqa: E402
    SessionHeader,
    ToolResultData,
    TurnStartData,
    UserMessageData,
    encode_event,
    encode_header,
    make_event,
)
from app.session.listing import CHUNK_SIZE, list_sessions  # noqa: E402

RATIO_SLACK = 1.5
"""The length ratio may exceed the linear one by this factor (noise); the quadratic scan was 3×."""
READ_GOAL = 8.0


def write_session(directory: Path, name: str, megabytes: int) -> Path:
    """A session whose third event is a `tool/result` of `megabytes` MB on one line."""
    path = directory / name / "sessions" / f"{name}.jsonl"
    path.parent.mkdir(parents=True)
    header = SessionHeader(version=1, id=name, created_at=1_700_000_000_000, cwd="/w", parent=None)
    result = ToolResultData(turn=1, step=1, call_id="c", name="read_file", content="@", is_error=False)
    before, after = encode_event(make_event("tool/result", 2, 0, result)).split(b"@")
    block = b"x" * 1_000_000
    with path.open("wb") as handle:
        handle.write(encode_header(header))
        handle.write(encode_event(make_event("turn/start", 0, 0, TurnStartData(turn=1))))
        handle.write(encode_event(make_event("user/message", 1, 0, UserMessageData(id="u", text="read it"))))
        handle.write(before)
        for _ in range(megabytes):
            handle.write(block)
        handle.write(after)
    return path


def cold_listing(path: Path) -> float:
    cache = path.parent.parent / "cache" / "sessions-index.json"
    cache.unlink(missing_ok=True)
    started = time.perf_counter()
    (summary,) = list_sessions(path.parent, cache)
    elapsed = time.perf_counter() - started
    assert summary.title == "read it" and summary.events == 3, summary
    return elapsed


def plain_read(path: Path) -> float:
    started = time.perf_counter()
    with path.open("rb") as handle:
        while handle.read(CHUNK_SIZE):
            pass
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=50, help="MB in the short session's line")
    parser.add_argument("--large", type=int, default=200, help="MB in the long session's line")
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        small = write_session(Path(root), "small", options.small)
        large = write_session(Path(root), "large", options.large)
        scans_small, scans_large, reads = [], [], []
        for _ in range(options.rounds):
            scans_small.append(cold_listing(small))
            scans_large.append(cold_listing(large))
            reads.append(plain_read(large))
    small_m, large_m, read_m = (statistics.median(x) for x in (scans_small, scans_large, reads))
    ratio = large_m / small_m
    over_read = large_m / read_m
    expected = options.large / options.small
    ratio_goal = RATIO_SLACK * expected
    print(f"one-line sessions of {options.small} and {options.large} MB; medians of {options.rounds} rounds")
    print(f"  cold listing, {options.small:4d} MB line   {small_m * 1000:8.1f} ms")
    print(f"  cold listing, {options.large:4d} MB line   {large_m * 1000:8.1f} ms")
    print(f"  plain read,   {options.large:4d} MB file   {read_m * 1000:8.1f} ms")
    print(f"scan {options.large} MB / scan {options.small} MB = {ratio:.2f}  (linear ≈ {expected:g}; "
          f"goal ≤ {ratio_goal:g}: {'met' if ratio <= ratio_goal else 'NOT met'})")
    print(f"scan / plain read = {over_read:.2f}  (goal ≤ {READ_GOAL:g}: {'met' if over_read <= READ_GOAL else 'NOT met'})")
    return 0 if ratio <= ratio_goal and over_read <= READ_GOAL else 1


if __name__ == "__main__":
    sys.exit(main())

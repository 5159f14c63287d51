"""`toolscope sessions` with thousands of files (issue 2: "instant with thousands of files").

Writes N sessions (default 3,000, of 10 to 400 events each, ~215 MB) into a temporary
TOOLSCOPE_HOME and measures, interleaved:
- the naive listing a first implementation would do: read every file, parse its header, parse lines
  until the first user message, count the lines;
- `list_sessions()` cold (index cache deleted first) and warm (cache present).
Figures: warm / naive (goal ≤ 0.2: the index makes a listing at least 5× cheaper than reading
the files) and cold / naive (goal ≤ 1.5: building the index costs about one read of the files).
For a person, the wall time of the whole `toolscope sessions` command is printed next to
`toolscope --version`, the floor of starting the program. Exits 1 when a goal does not hold.

    .venv/bin/python benchmarks/bench_sessions.py [--sessions N] [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.session.events import (  # noqa: E402
    AssistantMessageData,
    SessionHeader,
    TextContent,
    TurnStartData,
    UserMessageData,
    encode_event,
    encode_header,
    make_event,
)
from app.session.listing import list_sessions  # noqa: E402

WARM_GOAL = 0.2
COLD_GOAL = 1.5
SCRIPT = Path(sys.executable).parent / "toolscope"


def write_sessions(directory: Path, count: int) -> None:
    rng = random.Random(3)
    directory.mkdir(parents=True)
    for number in range(count):
        session_id = f"20260101-{number:06d}-abcdef"
        lines = [
            encode_header(
                SessionHeader(version=1, id=session_id, created_at=1_700_000_000_000 + number, cwd="/w", parent=None)
            ),
            encode_event(make_event("turn/start", 0, 0, TurnStartData(turn=1))),
            encode_event(make_event("user/message", 1, 0, UserMessageData(id="u", text=f"question {number} about tools"))),
        ]
        for seq in range(2, rng.randint(10, 400)):
            lines.append(
                encode_event(
                    make_event(
                        "assistant/message",
                        seq,
                        0,
                        AssistantMessageData(
                            turn=1, step=1, route="r", model="m", content=(TextContent(text="x" * 200),), finish="stop"
                        ),
                    )
                )
            )
        (directory / f"{session_id}.jsonl").write_bytes(b"".join(lines))


def naive_listing(directory: Path) -> list[tuple[str, str, int]]:
    rows = []
    for path in directory.glob("*.jsonl"):
        lines = path.read_bytes().splitlines()
        header = json.loads(lines[0])
        title = next(
            (event["data"]["text"] for event in map(json.loads, lines[1:]) if event["type"] == "user/message"), ""
        )
        rows.append((header["id"], title, len(lines) - 1))
    return rows


def timed(action) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def wall_time(command: list[str], env: dict[str, str]) -> float:
    return timed(lambda: subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        directory = Path(home) / "sessions"
        write_sessions(directory, options.sessions)
        size = sum(p.stat().st_size for p in directory.iterdir())
        cache = Path(home) / "cache" / "sessions-index.json"
        env = {k: v for k, v in os.environ.items() if k != "TOOLSCOPE_CONFIG"}
        env["TOOLSCOPE_HOME"] = home
        naive, cold, warm, command, floor = [], [], [], [], []
        for _ in range(options.rounds):
            naive.append(timed(lambda: naive_listing(directory)))
            cache.unlink(missing_ok=True)
            cold.append(timed(lambda: list_sessions(directory, cache)))
            warm.append(timed(lambda: list_sessions(directory, cache)))
            floor.append(wall_time([str(SCRIPT), "--version"], env))
            command.append(wall_time([str(SCRIPT), "sessions"], env))
    naive_m, cold_m, warm_m, command_m, floor_m = (
        statistics.median(x) for x in (naive, cold, warm, command, floor)
    )
    print(f"{options.sessions} sessions, {size / 1e6:.1f} MB; medians of {options.rounds} interleaved rounds")
    print(f"  naive listing (read and parse)  {naive_m * 1000:8.1f} ms")
    print(f"  list_sessions() cold            {cold_m * 1000:8.1f} ms")
    print(f"  list_sessions() warm            {warm_m * 1000:8.1f} ms")
    print(f"  `toolscope sessions` (warm)     {command_m * 1000:8.1f} ms wall")
    print(f"  `toolscope --version`           {floor_m * 1000:8.1f} ms wall")
    warm_ratio, cold_ratio = warm_m / naive_m, cold_m / naive_m
    print(f"warm / naive = {warm_ratio:.3f}  (goal ≤ {WARM_GOAL}: {'met' if warm_ratio <= WARM_GOAL else 'NOT met'})")
    print(f"cold / naive = {cold_ratio:.3f}  (goal ≤ {COLD_GOAL}: {'met' if cold_ratio <= COLD_GOAL else 'NOT met'})")
    return 0 if warm_ratio <= WARM_GOAL and cold_ratio <= COLD_GOAL else 1


if __name__ == "__main__":
    sys.exit(main())

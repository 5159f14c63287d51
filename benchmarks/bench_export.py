"""`toolscope export --format html` on a session with one huge tool result, and on the 1M-event
session (issue 23, item 6: an export grew with the number of routes and was built whole in memory).

Every export is the real console command in a child process, its output read from a pipe and
counted here, its peak RSS its own (`ru_maxrss`, read by a small parent of its own). The catalog
is the six built-in routes (`docs/routes.md`): the config file lists each of them as a
`[[routes]]` table, so every request is projected onto six routes, as in the issue.
- huge result: a session whose one tool result is `--result-mb` MB (10) of text, alone and with
  three more short turns; the HTML's size against the session file's (goal ≤ 1.5×) and peak RSS
  (goal ≤ 150 MB), beside the same export of a 10-event session (the command's floor, a ratio);
  the Markdown and JSON sizes are printed too, not goals;
- large: the session `benchmarks/sessions.py` writes for `--events` events (1,000,000, ~600 MB; or
  `--big FILE`, linked, never written), peak RSS of its HTML export (goal ≤ 300 MB), with its
  size and time, beside the 10-event session's; `--events 0` leaves it out. Its first export
  also indexes and validates the file (the floor of a first open of 600 MB); the export takes
  about an hour, most of it building each request's wire body on each route (`app.report`).
Exits 1 when a goal does not hold.

    .venv/bin/python benchmarks/bench_export.py [--result-mb N] [--events N | --big FILE]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.llm.routes import load_catalog  # noqa: E402
from app.session.events import (  # noqa: E402
    AssistantMessageData,
    RequestHeaderData,
    SessionHeader,
    StepData,
    TextContent,
    ToolCallContent,
    ToolCallData,
    ToolDefinition,
    ToolResultData,
    TurnEndData,
    TurnStartData,
    UserMessageData,
    encode_event,
    encode_header,
    make_event,
)
from benchmarks.bench_large import report  # noqa: E402
from benchmarks.sessions import write_large_session  # noqa: E402

SCRIPT = Path(sys.executable).parent / "toolscope"
SIZE_GOAL = 1.5
RESULT_RSS_GOAL_MB = 150.0
LARGE_RSS_GOAL_MB = 300.0
READ = ToolDefinition(
    name="read_file",
    description="Read a text file of the workspace.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


def log_text(size: int) -> str:
    """`size` characters of a build log: numbered lines with quotes, `<tags>` and `&`, as a read
    file would hold (HTML and JSON escape some of them)."""
    lines, total, number = [], 0, 0
    while total < size:
        number += 1
        line = f'{number:07d} [build] compiling "src/module_{number % 97}.c" <warn> & retrying in 0.{number % 10}s\n'
        lines.append(line)
        total += len(line)
    return "".join(lines)[:size]


def write_result_session(path: Path, result_chars: int, short_turns: int) -> None:
    """One turn that reads a file whose content is `result_chars` characters, then answers; then
    `short_turns` turns of a question and a one-line answer."""
    seq = 0
    lines = [encode_header(SessionHeader(version=1, id=path.stem, created_at=1_700_000_000_000, cwd="/work", parent=None))]

    def emit(type_: str, data) -> None:  # type: ignore[no-untyped-def]
        nonlocal seq
        lines.append(encode_event(make_event(type_, seq, 1_700_000_000_000 + seq, data)))
        seq += 1

    def answer(turn: int, step: int, text: str, calls: tuple[ToolCallContent, ...] = ()) -> None:
        emit("step/start", StepData(turn=turn, step=step))
        if turn == 1 and step == 1:
            emit("request/header", RequestHeaderData(
                reason="initial", sequence=0, route="deepseek/deepseek-flash", model="deepseek-v4-flash",
                system="You are a careful assistant.", tools=(READ,), config={},
            ))
        emit("assistant/message", AssistantMessageData(
            turn=turn, step=step, route="deepseek/deepseek-flash", model="deepseek-v4-flash",
            content=(TextContent(text=text), *calls), usage=None, finish="tool-calls" if calls else "stop",
        ))

    emit("turn/start", TurnStartData(turn=1))
    emit("user/message", UserMessageData(id="u1", text="Read build.log and tell me how long it is."))
    call = ToolCallContent(call_id="call_1", name="read_file", arguments='{"path": "build.log"}')
    answer(1, 1, "Reading it.", (call,))
    emit("tool/call", ToolCallData(turn=1, step=1, call_id="call_1", name="read_file", arguments=call.arguments))
    emit("tool/result", ToolResultData(
        turn=1, step=1, call_id="call_1", name="read_file", content=log_text(result_chars), is_error=False, error=None,
    ))
    emit("step/end", StepData(turn=1, step=1))
    answer(1, 2, "It is a long build log.")
    emit("step/end", StepData(turn=1, step=2))
    emit("turn/end", TurnEndData(turn=1, reason="completed"))
    for turn in range(2, 2 + short_turns):
        emit("turn/start", TurnStartData(turn=turn))
        emit("user/message", UserMessageData(id=f"u{turn}", text=f"Question {turn}: which step failed?"))
        answer(turn, 1, f"Answer {turn}: none of them.")
        emit("step/end", StepData(turn=turn, step=1))
        emit("turn/end", TurnEndData(turn=turn, reason="completed"))
    path.write_bytes(b"".join(lines))


PEAK_RSS_OF_CHILD = """
import resource, subprocess, sys
code = subprocess.run(sys.argv[1:]).returncode
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
"""


def export(path: Path, fmt: str, env: dict[str, str]) -> tuple[int, float, float]:
    """(bytes written, peak RSS in MB, seconds) of `toolscope export PATH --format FMT`, its output
    read from a pipe. A small Python starts it and reads its children's peak RSS: a child forked
    from this process would count this process's memory (the generator's) as its own."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", PEAK_RSS_OF_CHILD, str(SCRIPT), "export", str(path), "--format", fmt],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    assert child.stdout is not None and child.stderr is not None
    written = 0
    while chunk := child.stdout.read(1 << 20):
        written += len(chunk)
    code, rss = child.stderr.read().split()[-2:]
    if child.wait() != 0 or code != b"0":
        raise SystemExit(f"toolscope export {path.name} --format {fmt} exited {code.decode()}")
    return written, int(rss) / 1024, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--result-mb", type=float, default=10.0, help="size of the huge tool result in MB")
    parser.add_argument("--events", type=int, default=1_000_000, help="events of the large session (0: none)")
    parser.add_argument("--big", type=Path, help="export this generated session instead of writing one")
    options = parser.parse_args()
    results: list[tuple[str, float, float | None, str]] = []
    with tempfile.TemporaryDirectory() as home:
        config = Path(home) / "config.toml"
        routes = list(load_catalog())
        config.write_text("".join(f'[[routes]]\nid = "{route.id}"\n\n' for route in routes), encoding="utf-8")
        env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
        env.update(TOOLSCOPE_HOME=home, TOOLSCOPE_CONFIG=str(config), LANG="C.UTF-8")
        print(f"{len(routes)} routes: {', '.join(route.id for route in routes)}")
        sessions = Path(home) / "sessions"
        sessions.mkdir()
        small = sessions / "20260101-000000-c1c1c1.jsonl"
        write_large_session(small, 10)
        _size, floor_mb, _seconds = export(small, "html", env)
        print(f"10-event session: HTML export peak RSS {floor_mb:.0f} MB (the floor)")

        result_chars = int(options.result_mb * 1_000_000)
        for short_turns in (0, 3):
            path = sessions / f"20260101-000000-d{short_turns}d{short_turns}d{short_turns}.jsonl"
            write_result_session(path, result_chars, short_turns)
            size = path.stat().st_size
            name = f"{options.result_mb:g} MB result" + (f" + {short_turns} short turns" if short_turns else "")
            html, rss, seconds = export(path, "html", env)
            results.append((f"{name}: HTML / session size", html / size, SIZE_GOAL,
                            f"{html / 1e6:.1f} MB / {size / 1e6:.1f} MB, {seconds:.1f} s"))
            results.append((f"{name}: HTML peak RSS MB", rss, RESULT_RSS_GOAL_MB,
                            f"{rss:.0f} MB, {rss / floor_mb:.2f}× the 10-event session's"))
            for fmt in ("md", "json"):
                written, rss, _seconds = export(path, fmt, env)
                results.append((f"  not a goal: {name}: {fmt} / session size", written / size, None,
                                f"{written / 1e6:.1f} MB, peak RSS {rss:.0f} MB"))

        if options.big is not None or options.events:
            big = sessions / "20260101-000000-b1b1b1.jsonl"
            if options.big is not None:
                os.link(options.big, big)  # the export writes only the index cache beside it
            else:
                write_large_session(big, options.events)
            html, rss, seconds = export(big, "html", env)
            results.append((f"large session ({big.stat().st_size / 1e6:.0f} MB): HTML peak RSS MB", rss,
                            LARGE_RSS_GOAL_MB, f"{rss:.0f} MB, {rss / floor_mb:.2f}× the 10-event session's; "
                            f"{html / 1e6:.0f} MB of HTML in {seconds:.0f} s"))
    return report(results)


if __name__ == "__main__":
    sys.exit(main())

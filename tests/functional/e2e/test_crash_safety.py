"""Crash safety end to end (docs/architecture.md §4): `toolscope run` killed with SIGKILL — while a reply
streams, while a tool runs, between two events — leaves a log that reads back, has lost none of
the lines it held before the kill, and that the next writer closes exactly as the design says
(orphaned calls answered, the step and the turn ended as interrupted)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.session.events import Event
from app.session.session import Session
from app.session.store import SessionStore
from tests.functional.e2e.harness import (
    RouteSpec,
    Workbench,
    run,
    start_run,
    text_frames,
    tool_call_frames,
)
from tests.functional.llm.sse_server import Reply, SSEServer

SEED = 20260701
LINES_OF_A_TURN = 15
"""The session header, then turn/start … turn/end of the scripted turn (it never changes tools)."""
TIMED_KILLS = 30
"""Kills sent from outside at seeded-random times in the turn; ten more land while the command
runs, and one more after each line but the last comes from inside (`kill_switch/`): 54 runs."""
COMMAND_KILLS = 10
COMMAND_WINDOW = 0.2
"""Kills while a tool runs land this long at most after its call is logged (the command sleeps
0.3 s): the turn's own pace varies with the machine's load, the command's does not."""
MIN_KILLS = 50
KILL_WINDOW = 1.1
"""Timed kills land uniformly in this many seconds after the turn starts; the turn takes
at least 1.14 s from there (streams of 10 and 11 pieces 0.04 s apart, a 0.3 s command between)."""
PARALLEL = 4
"""Runs at a time: they mostly wait on the slow server, so a few share two cores well."""
PIECE_DELAY = 0.04
POLL = 0.005
GRACE = 3 * PIECE_DELAY
"""After a kill, time for the server to notice the dead client and end its reply by itself."""
KILL_SWITCH = Path(__file__).resolve().parent / "kill_switch"
ROUTE = RouteSpec("e2e/deepseek")
TURN_STARTED = b'"type":"turn/start"'
COMMAND_STARTED = b'"step":1,"callId":"call-sleep"'
"""The command's `tool/call` line (its result's comes later; the reply names the call otherwise)."""


def slow_turn() -> tuple[Reply, Reply]:
    """Reply 1 says something, then calls a read-only tool and a command; reply 2 answers."""
    first = tool_call_frames(
        ("call-read", "read_file", '{"path": "notes.txt"}'),
        ("call-sleep", "run_command", '{"command": "sleep 0.3"}'),
        preface="Let me look at your notes first.",
    )
    second = text_frames("Your notes say to buy milk, and the command finished.", pieces=8)
    return Reply(pieces=first, delay=PIECE_DELAY), Reply(pieces=second, delay=PIECE_DELAY)


@dataclass(frozen=True)
class KillPoint:
    """From outside, `seconds` after the log first holds `after`; or from inside, right after the
    process wrote line `line` of the log."""

    seconds: float = 30.0
    line: int | None = None
    after: bytes = TURN_STARTED


def kill_points(rng: random.Random) -> list[KillPoint]:
    timed = [KillPoint(seconds=rng.uniform(0, KILL_WINDOW)) for _ in range(TIMED_KILLS)]
    in_command = [KillPoint(seconds=rng.uniform(0, COMMAND_WINDOW), after=COMMAND_STARTED) for _ in range(COMMAND_KILLS)]
    return timed + in_command + [KillPoint(line=line) for line in range(1, LINES_OF_A_TURN)]


@dataclass(frozen=True)
class Kill:
    point: KillPoint
    path: Path
    held: bytes
    """The complete lines the file held at the last look before the process died."""
    killed: bool
    """False when the run finished before its kill point came."""


async def kill_one_run(root: Path, point: KillPoint) -> Kill:
    bench = Workbench(root)
    (bench.workspace / "notes.txt").write_text("buy milk\n", encoding="utf-8")
    env = {}
    if point.line is not None:
        pythonpath = os.pathsep.join(filter(None, [str(KILL_SWITCH), os.environ.get("PYTHONPATH")]))
        env = {"PYTHONPATH": pythonpath, "TOOLSCOPE_E2E_KILL_AFTER_LINE": str(point.line)}
    async with SSEServer(*slow_turn()) as server:
        bench.write_config(server.base_url, [ROUTE])
        process = await start_run(bench, "--approve", "Read my notes, then wait a moment.", env=env)
        try:
            path = await session_file(bench)
            held = await watch(path, process, point)
        finally:
            with contextlib.suppress(ProcessLookupError):  # it may have ended by itself just now
                process.kill()
            await asyncio.wait_for(process.communicate(), 10)
        await asyncio.sleep(GRACE)
    return Kill(point, path, held, killed=process.returncode == -signal.SIGKILL)


async def session_file(bench: Workbench) -> Path:
    for _ in range(round(30 / POLL)):
        found = list(bench.sessions.glob("*.jsonl")) if bench.sessions.exists() else []
        if found:
            return found[0]
        await asyncio.sleep(POLL)
    raise TimeoutError("toolscope run created no session file within 30 s")


async def watch(path: Path, process: asyncio.subprocess.Process, point: KillPoint) -> bytes:
    """Look at the file every POLL seconds until `point.seconds` after it first holds `point.after`
    pass, or the process ends; return the complete lines last seen. The clock starts at an event,
    not at the file's creation, so a slow start-up on a loaded machine does not move the kills out
    of the turn (the turn itself is paced by the server's and the command's wall-clock delays)."""
    loop = asyncio.get_running_loop()
    deadline: float | None = None
    while True:
        data = path.read_bytes()
        held = data[: data.rfind(b"\n") + 1]
        if deadline is None and point.after in held:
            deadline = loop.time() + point.seconds
        if (deadline is not None and loop.time() >= deadline) or process.returncode is not None:
            return held
        await asyncio.sleep(POLL)


async def kill_all(root: Path, points: list[KillPoint]) -> list[Kill]:
    slots = asyncio.Semaphore(PARALLEL)

    async def one(number: int, point: KillPoint) -> Kill:
        async with slots:
            return await kill_one_run(root / f"run-{number:02d}", point)

    return await asyncio.gather(*(one(number, point) for number, point in enumerate(points)))


Closer = tuple[str, str | None, str | None]
"""(event type, call id, error code or turn-end reason)"""


def expected_closers(events: tuple[Event, ...]) -> list[Closer]:
    """What a writer must append to close the turn a crash left open: results for the open step's
    unanswered calls (`TOOL_OUTCOME_UNKNOWN` once started, else the call and `TOOL_NOT_STARTED`),
    then `step/end`, then `turn/end{interrupted}`. Worked out here independently of the store."""
    open_turn = open_step = None
    unanswered: dict[str, bool] = {}  # call id → started
    for event in events:
        if event.type == "turn/start":
            open_turn = event.data.turn
        elif event.type == "turn/end":
            open_turn = None
        elif event.type == "step/start":
            open_step, unanswered = event.data.step, {}
        elif event.type == "step/end":
            open_step = None
        elif event.type == "assistant/message":
            for part in event.data.content:
                if part.type == "tool-call":
                    unanswered.setdefault(part.call_id, False)
        elif event.type == "tool/call":
            unanswered[event.data.call_id] = True
        elif event.type == "tool/result":
            unanswered.pop(event.data.call_id)
    if open_turn is None:
        return []
    closers: list[Closer] = []
    if open_step is not None:
        for call_id, started in unanswered.items():
            if started:
                closers.append(("tool/result", call_id, "TOOL_OUTCOME_UNKNOWN"))
            else:
                closers += [("tool/call", call_id, None), ("tool/result", call_id, "TOOL_NOT_STARTED")]
        closers.append(("step/end", None, None))
    closers.append(("turn/end", None, "interrupted"))
    return closers


def closer(event: Event) -> Closer:
    if event.type == "tool/result":
        return (event.type, event.data.call_id, event.data.error.code if event.data.error else None)
    if event.type == "tool/call":
        return (event.type, event.data.call_id, None)
    if event.type == "turn/end":
        return (event.type, None, event.data.reason)
    return (event.type, None, None)


def moment(events: tuple[Event, ...]) -> str:
    """Where a run was when it died, told by the last event it had logged."""
    last = events[-1].type if events else None
    if last in ("request/header", "step/start"):
        return "streaming"
    if last == "tool/call":
        return "tool running"
    return f"after {last}"


# Past the scenario's own 170 s bound and its clean-up, so a slow run fails as a test: a
# pytest-timeout kill would take the xdist worker, and the tests queued on it, down with it.
@pytest.mark.slow(seconds=42)
@pytest.mark.timeout(240)
def test_sigkill_anywhere_loses_nothing_and_the_next_writer_closes_the_turn(tmp_path: Path) -> None:
    points = kill_points(random.Random(SEED))
    kills = [kill for kill in run(kill_all(tmp_path, points), limit=170) if kill.killed]
    assert len(kills) >= MIN_KILLS

    moments: Counter[str] = Counter()
    repairs: Counter[str | None] = Counter()
    for kill in kills:
        name = kill.path.parent.parent.parent.name
        data = kill.path.read_bytes()
        assert data.startswith(kill.held), f"{name}: a line it held was lost"
        if kill.point.line is not None:
            assert data.count(b"\n") == kill.point.line, f"{name}: died elsewhere than after its line"
        events = Session.open(kill.path).load().events
        if kill.point.line is None:
            moments[moment(events)] += 1
        expected = expected_closers(events)
        with SessionStore(kill.path.parent).open_writer(kill.path.stem) as writer:
            assert [closer(event) for event in writer.repaired] == expected, name
        repairs.update(code for _type, _call, code in expected)
        assert kill.path.read_bytes().startswith(data), f"{name}: the repair cut a line"
        reopened = Session.open(kill.path).view()
        assert reopened.open_turn is None
        assert [turn.end_reason for turn in reopened.turns] in ([], ["completed"], ["interrupted"])

    # The kills landed everywhere this test claims: in streams, in tools, and between events
    # (where only an exact kill finds a call logged by its reply but never started).
    assert moments["streaming"] >= 10 and moments["tool running"] >= 5, moments
    assert repairs["TOOL_NOT_STARTED"] >= 1 and repairs["TOOL_OUTCOME_UNKNOWN"] >= 5, repairs
    assert repairs["interrupted"] >= MIN_KILLS - 5, repairs

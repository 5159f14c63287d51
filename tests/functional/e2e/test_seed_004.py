"""Seed 004 end to end: a streamed tool call whose `id` never arrives costs one retry, never a
call without identity in the log, so the session stays readable and can be continued."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.session.session import Session
from app.session.store import SessionStore
from tests.functional.e2e.harness import (
    RouteSpec,
    RunResult,
    Workbench,
    answer,
    call_without_id_frames,
    calls,
    events_of,
    of_type,
    run,
    toolscope_run,
)
from tests.functional.llm.sse_server import Reply, SSEServer

READ_NOTES = '{"path": "notes.txt"}'


async def malformed_call_then_a_good_one(bench: Workbench) -> tuple[RunResult, dict[str, object], RunResult, Path]:
    """The first turn (retried once), then a second turn continuing the same session."""
    replies = (
        Reply(pieces=call_without_id_frames("read_file", READ_NOTES)),
        calls(("call-read", "read_file", READ_NOTES)),
        answer("notes.txt says: remember the milk."),
        answer("Still the same session."),
    )
    async with SSEServer(*replies) as server:
        bench.write_config(server.base_url, [RouteSpec("e2e/deepseek")])
        first = await toolscope_run(bench, "What do my notes say?")
        path = bench.only_session()
        reopened = reopen_checks(bench, path)
        second = await toolscope_run(bench, "--session", path.stem, "And now?")
    return first, reopened, second, path


def reopen_checks(bench: Workbench, path: Path) -> dict[str, object]:
    """What a reader and then a writer find in the log the first run left (before the second)."""
    view = Session.open(path).view()
    with SessionStore(bench.sessions).open_writer(path.stem) as writer:
        repaired, torn = writer.repaired, writer.torn_path
    return {"failed": [request.failed for request in view.requests], "repaired": repaired, "torn": torn}


@pytest.mark.timeout(60)
def test_a_call_without_id_is_retried_and_the_session_reopens_and_continues(bench: Workbench) -> None:
    (bench.workspace / "notes.txt").write_text("remember the milk\n", encoding="utf-8")
    first, reopened, second, path = run(malformed_call_then_a_good_one(bench))
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    assert "Traceback" not in first.stderr + second.stderr

    events = events_of(path)
    kinds = [e.type for e in events if e.type in ("agent/request-error", "llm/retry", "assistant/message")]
    assert kinds[:3] == ["agent/request-error", "llm/retry", "assistant/message"]
    error, retry = of_type(events, "agent/request-error")[0], of_type(events, "llm/retry")[0]
    assert error.data.failure.code == retry.data.failure.code == "MALFORMED_TOOL_CALL"
    assert (retry.data.turn, retry.data.step, retry.data.retry) == (1, 1, 1)
    good = of_type(events, "assistant/message")[0]
    assert (good.data.turn, good.data.step) == (1, 1), "the retry repeats the same turn and step"
    assert [(c.call_id, c.name) for c in good.data.content] == [("call-read", "read_file")]
    (result,) = of_type(events, "tool/result")
    assert result.data.call_id == "call-read" and "remember the milk" in result.data.content

    assert reopened == {"failed": [True, False, False], "repaired": (), "torn": None}
    assert [(e.data.turn, e.data.reason) for e in of_type(events, "turn/end")] == [(1, "completed"), (2, "completed")]
    assert "Still the same session." in second.stdout

"""Provider faults end to end (docs/architecture.md §9): what the retry policy retries ends in exactly one
assistant message with the `llm/retry` events the policy promises; what it does not ends the turn
with one clear line on stderr."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.functional.e2e.harness import (
    KEY,
    RouteSpec,
    RunResult,
    Workbench,
    answer,
    events_of,
    json_error,
    of_type,
    run,
    text_frames,
    toolscope_run,
)
from tests.functional.llm.sse_server import Reply, SSEServer

ANSWER = "The answer, in full."
ROUTE = RouteSpec("e2e/deepseek")
HALF_AN_ANSWER = text_frames("Half an answer that never ends", pieces=4)[:3]
"""A stream cut before its finish: some text deltas, no `[DONE]`."""


@dataclass(frozen=True)
class Fault:
    replies: tuple[Reply, ...]
    codes: tuple[str, ...]
    """The failure codes logged, in order, each followed by one retry."""
    delays_ms: tuple[tuple[int, int], ...]
    """Bounds of each retry's delay: Retry-After, else 0.5 s · 2^(n−1) ± 10 %."""


FAULTS = {
    "429 with Retry-After 0": Fault(
        (json_error(429, "Slow down.", "rate_limit_error", **{"retry-after": "0"}), answer(ANSWER)),
        ("RATE_LIMIT",),
        ((0, 0),),
    ),
    "500, then 502": Fault(
        (json_error(500, "Boom.", "server_error"), json_error(502, "Bad gateway.", "server_error"), answer(ANSWER)),
        ("SERVER", "SERVER"),
        ((450, 550), (900, 1100)),
    ),
    "connection reset mid-stream": Fault(
        (Reply(pieces=HALF_AN_ANSWER, delay=0.05, then="reset"), answer(ANSWER)),
        ("TRANSPORT",),
        ((450, 550),),
    ),
}


async def run_against(bench: Workbench, *replies: Reply) -> tuple[RunResult, SSEServer]:
    async with SSEServer(*replies) as server:
        bench.write_config(server.base_url, [ROUTE])
        result = await toolscope_run(bench, "Answer me.")
    return result, server


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", list(FAULTS))
def test_a_retryable_fault_is_retried_into_exactly_one_answer(bench: Workbench, name: str) -> None:
    fault = FAULTS[name]
    result, server = run(run_against(bench, *fault.replies))
    assert result.returncode == 0, result.stderr
    events = events_of(bench.only_session())

    errors, retries = of_type(events, "agent/request-error"), of_type(events, "llm/retry")
    assert [e.data.failure.code for e in errors] == list(fault.codes)
    assert [r.data.failure for r in retries] == [e.data.failure for e in errors]
    assert all(error.seq + 1 == retry.seq for error, retry in zip(errors, retries))
    assert [(r.data.step, r.data.retry, r.data.max_retries) for r in retries] == [
        (1, n, 5) for n in range(1, len(fault.codes) + 1)
    ]
    for retry, (low, high) in zip(retries, fault.delays_ms):
        assert low <= retry.data.delay_ms <= high

    (message,) = of_type(events, "assistant/message")
    assert [part.text for part in message.data.content] == [ANSWER]
    assert of_type(events, "turn/end")[-1].data.reason == "completed"
    # A retry repeats the same request.
    assert len({received.body for received in server.received}) == 1
    assert len(server.received) == len(fault.codes) + 1


@pytest.mark.timeout(60)
def test_the_retried_answer_starts_its_own_line_on_stdout(bench: Workbench) -> None:
    result, _server = run(run_against(bench, *FAULTS["connection reset mid-stream"].replies))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == ANSWER
    assert "retrying in" in result.stderr


@pytest.mark.timeout(60)
def test_a_refused_key_is_not_retried_and_fails_in_one_line_without_the_key(bench: Workbench) -> None:
    # The gateway echoes the key it refused; it must not reach the terminal or the log.
    result, server = run(run_against(bench, json_error(401, f"Invalid API key {KEY}.", "authentication_error")))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("toolscope: error:")]
    assert "refused the credentials (HTTP 401)" in line
    path = bench.only_session()
    assert KEY not in result.stdout + result.stderr and KEY.encode() not in path.read_bytes()

    events = events_of(path)
    assert [e.data.failure.code for e in of_type(events, "agent/request-error")] == ["AUTH"]
    assert of_type(events, "llm/retry") == [] and of_type(events, "assistant/message") == []
    assert of_type(events, "turn/end")[-1].data.reason == "error"
    assert len(server.received) == 1


IDLE_TIMEOUT = 0.5


@pytest.mark.timeout(60)
def test_a_stalled_stream_times_out_and_is_retried(bench: Workbench) -> None:
    """The route's `idle_timeout` (0.5 s here, from `config.toml`) ends a silent stream; the retry
    answers."""

    async def scenario() -> tuple[RunResult, bool]:
        replies = (Reply(pieces=HALF_AN_ANSWER, then="stall"), answer(ANSWER))
        async with SSEServer(*replies) as server:
            bench.write_config(server.base_url, [RouteSpec(ROUTE.id, idle_timeout=IDLE_TIMEOUT)])
            result = await toolscope_run(bench, "Answer me.")
            return result, server.disconnected.is_set()

    result, client_hung_up = run(scenario(), limit=40)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == ANSWER
    # The client gave up on the silence (the server would have waited longer for it).
    assert client_hung_up
    events = events_of(bench.only_session())
    (error,) = of_type(events, "agent/request-error")
    assert error.data.failure.code == "TIMEOUT" and "0.5 s" in error.data.failure.message
    (retry,) = of_type(events, "llm/retry")
    assert retry.data.failure == error.data.failure
    (message,) = of_type(events, "assistant/message")
    assert [part.text for part in message.data.content] == [ANSWER]

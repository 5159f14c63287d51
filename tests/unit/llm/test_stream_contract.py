"""The stream-event contract (`check_stream`) and the failure codes (docs/architecture.md §9)."""

from __future__ import annotations

import pytest

from app.llm import errors
from app.llm.errors import DEFAULT_RETRYABLE, FAILURE_CODES, MALFORMED_TOOL_CALL, Failure
from app.llm.stream import (
    BlockDelta,
    BlockEnd,
    BlockStart,
    Finish,
    StreamChecker,
    StreamContractError,
    UsageReport,
    check_stream,
)
from app.session import events as session_events

FAILURE = Failure(code=MALFORMED_TOOL_CALL, message="Tool call 0 ended without a non-empty id.")
USAGE = UsageReport(10, 2, 0, 0)


def test_a_complete_response_passes_and_returns_its_finish():
    events = [
        BlockStart(0, "reasoning"),
        BlockDelta(0, "hm"),
        BlockEnd(0),
        BlockStart(1, "tool-call", "call_1", None),
        BlockDelta(1, "{}"),
        BlockEnd(1, "call_1", "grep", "{}"),
        USAGE,
        Finish("tool-calls"),
    ]
    assert check_stream(events) == Finish("tool-calls")


def test_a_cut_off_call_ends_a_max_tokens_response():
    events = [BlockStart(0, "tool-call", "c", "t"), BlockDelta(0, '{"a'), BlockEnd(0, "c", "t", '{"a', cut_off=True), Finish("max-tokens")]
    assert check_stream(events) == Finish("max-tokens")


@pytest.mark.parametrize("reason", ["error", "aborted"])
def test_an_error_or_aborted_finish_may_leave_blocks_open(reason):
    failure = FAILURE if reason == "error" else None
    assert check_stream([BlockStart(0, "tool-call"), BlockDelta(0, "{"), USAGE, Finish(reason, failure)]).reason == reason


@pytest.mark.parametrize(
    ("events", "complaint"),
    [
        ([], "without a finish"),
        ([BlockStart(0, "text")], "without a finish"),
        ([Finish("stop"), Finish("stop")], "after the finish"),
        ([BlockStart(0, "text"), Finish("error", FAILURE), BlockDelta(0, "x")], "after the finish"),
        ([BlockStart(0, "text"), BlockEnd(0), Finish("stop"), USAGE], "after the finish"),
        ([USAGE, USAGE, Finish("stop")], "second usage"),
        ([BlockStart(0, "text"), Finish("stop")], "left open"),
        ([BlockStart(0, "tool-call", "c", "t"), Finish("tool-calls")], "left open"),
        ([BlockStart(0, "text"), Finish("max-tokens")], "left open"),
        ([BlockDelta(0, "x"), Finish("error", FAILURE)], "not open"),
        ([BlockStart(0, "text"), BlockEnd(0), BlockDelta(0, "x"), Finish("stop")], "not open"),
        ([BlockEnd(0), Finish("stop")], "not open"),
        ([BlockStart(0, "text"), BlockEnd(0), BlockStart(0, "text"), BlockEnd(0), Finish("stop")], "started twice"),
        ([BlockStart(0, "tool-call", "c", "t"), BlockEnd(0, "", "t", "{}"), Finish("tool-calls")], "non-empty call_id and name"),
        ([BlockStart(0, "tool-call", "c", "t"), BlockEnd(0, "c", "", "{}"), Finish("tool-calls")], "non-empty call_id and name"),
        ([BlockStart(0, "tool-call"), BlockEnd(0, None, None, "{}"), Finish("tool-calls")], "non-empty call_id and name"),
        ([BlockStart(0, "tool-call", "c", "t"), BlockEnd(0, "c", "t", None), Finish("tool-calls")], "without arguments"),
        ([BlockStart(0, "tool-call", "c", "t"), BlockEnd(0, "c", "t", '{"a', cut_off=True), Finish("tool-calls")], "cut-off tool call before a tool-calls finish"),
        ([BlockStart(0, "text"), BlockEnd(0, cut_off=True), Finish("max-tokens")], "not a tool call"),
        ([BlockStart(0, "image"), BlockEnd(0), Finish("stop")], "unknown block kind"),
        ([Finish("done")], "unknown finish reason"),
        ([Finish("error")], "a failure must come with an error finish"),
        ([Finish("stop", FAILURE)], "a failure must come with an error finish"),
        ([Finish("error", Failure(code="OOPS", message="?"))], "undeclared failure code"),
        (["text", Finish("stop")], "not a stream event"),
    ],
)
def test_contract_violations_are_named(events, complaint):
    with pytest.raises(StreamContractError, match=complaint):
        check_stream(events)


def test_the_checker_works_one_event_at_a_time():
    checker = StreamChecker()
    checker.feed(BlockStart(0, "text"))
    checker.feed(BlockDelta(0, "hi"))
    with pytest.raises(StreamContractError, match="without a finish"):
        checker.close()
    checker.feed(BlockEnd(0))
    checker.feed(Finish("stop"))
    assert checker.close() == Finish("stop")


def test_failure_is_the_session_logs_own_model():
    assert Failure is session_events.Failure
    failure = Failure(code="RATE_LIMIT", message="slow down", status=429, retry_after_ms=1500)
    assert failure.to_json() == {"code": "RATE_LIMIT", "message": "slow down", "status": 429, "retryAfterMs": 1500}


def test_the_codes_and_the_default_retryable_set():
    assert FAILURE_CODES == {
        "AUTH", "QUOTA", "RATE_LIMIT", "CONTEXT_WINDOW_EXCEEDED", "INVALID_REQUEST", "SERVER", "TRANSPORT",
        "TIMEOUT", "EMPTY_RESPONSE", "STREAM_CLOSED", "MALFORMED_RESPONSE", "MALFORMED_TOOL_CALL",
        "MISSING_CREDENTIAL", "ABORTED",
    }  # fmt: skip
    assert all(getattr(errors, code) == code for code in FAILURE_CODES)
    assert DEFAULT_RETRYABLE == {"EMPTY_RESPONSE", "RATE_LIMIT", "SERVER", "TIMEOUT", "TRANSPORT", "MALFORMED_TOOL_CALL"}


def test_events_are_frozen():
    with pytest.raises(AttributeError):
        BlockDelta(0, "x").text = "y"  # type: ignore[misc]

"""The session view: turns → steps → requests, the header, history and messages of each request."""

from __future__ import annotations

import dataclasses

import pytest

from app.session import view_items
from app.session.view import SessionView
from app.session.view_items import (
    AssistantItem,
    ContextItem,
    HeaderItem,
    RequestErrorItem,
    RetryItem,
    SummaryItem,
    ToolCallItem,
    ToolResultItem,
    UserItem,
)
from tests.support.builder import LogBuilder, tool

READ, GREP, TIME = tool("read"), tool("grep"), tool("time")


def reduce(builder: LogBuilder) -> SessionView:
    view = SessionView(builder.header)
    for event in builder.events:
        view.apply(event)
    return view


def tool_turn(log: LogBuilder, tools, call_name: str, call_id: str) -> None:
    log.start_turn(f"please use {call_name}")
    log.start_step()
    log.header_for(tools)
    log.assistant("", calls=[(call_id, call_name, "{}")])
    log.tool_round(call_id, call_name)
    log.end_step()
    log.start_step()
    log.assistant("done")
    log.end_step()
    log.end_turn()


def test_requests_are_numbered_in_log_order_with_header_and_messages():
    log = LogBuilder()
    tool_turn(log, [READ, GREP], "read", "c1")
    log.simple_turn([READ, GREP, TIME], "second")
    view = reduce(log)

    assert [r.index for r in view.requests] == [1, 2, 3]
    first, second, third = view.requests
    assert [type(m) for m in first.messages] == [UserItem]
    assert [type(m) for m in second.messages] == [UserItem, AssistantItem, ToolResultItem]
    # The third request sees the developer message announcing `time`, after the new user message.
    assert [type(m) for m in third.messages] == [
        UserItem, AssistantItem, ToolResultItem, AssistantItem, UserItem, ContextItem
    ]
    assert first.header.tools == (READ, GREP)
    assert third.header.tools == (READ, GREP, TIME)
    assert second.header_seq == first.header_seq
    assert third.header_seq > second.header_seq
    assert third.history.current == (READ, GREP, TIME)
    assert [u.additions for u in third.history.updates] == [(TIME,)]
    assert third.outcome.text == "answer to second"


def test_turns_and_steps_nest_items():
    log = LogBuilder()
    tool_turn(log, [READ], "read", "c1")
    view = reduce(log)

    (turn,) = view.turns
    assert not turn.open and turn.end_reason == "completed"
    assert [type(i) for i in turn.items] == [UserItem]
    first_step, second_step = turn.steps
    assert [type(i) for i in first_step.items] == [HeaderItem, AssistantItem, ToolCallItem, ToolResultItem]
    assert [r.index for r in first_step.requests] == [1]
    assert [r.index for r in second_step.requests] == [2]
    assert turn.requests == view.requests
    assert view.open_turn is None and view.open_step is None


def test_failed_request_and_retry_count_as_requests_in_the_same_step():
    log = LogBuilder()
    log.start_turn()
    log.start_step()
    log.header_for([READ])
    log.request_error("RATE_LIMIT")
    log.retry(1)
    log.assistant("finally")
    view = reduce(log)

    assert [r.index for r in view.requests] == [1, 2]
    failed, succeeded = view.requests
    assert failed.failed and isinstance(failed.outcome, RequestErrorItem)
    assert not succeeded.failed
    # A retry is sent with the same messages as the failed attempt.
    assert failed.messages == succeeded.messages
    step = view.open_step
    assert step is not None and [type(i) for i in step.items][-3:] == [RequestErrorItem, RetryItem, AssistantItem]


def test_compaction_starts_a_new_message_list_and_keeps_earlier_windows():
    log = LogBuilder()
    log.simple_turn([READ], "one")
    log.simple_turn([READ], "two")
    summary = log.compaction("we talked")
    log.start_turn("three")
    log.start_step()
    log.header_for([READ], new_sequence=True)
    log.assistant("after")
    view = reduce(log)

    before, also_before, after = view.requests
    assert [m.text for m in also_before.messages if isinstance(m, UserItem)] == ["one", "two"]
    assert isinstance(after.messages[0], SummaryItem) and after.messages[0].seq == summary.seq
    assert [m.text for m in after.messages if isinstance(m, UserItem)] == ["three"]
    assert after.history.sequence == 1 and after.history.updates == ()
    assert len(before.messages) == 1


def test_context_items_carry_the_developer_message():
    log = LogBuilder()
    log.simple_turn([READ, GREP], "one")
    log.simple_turn([READ, TIME], "two", system="Be brief.")
    view = reduce(log)

    contexts = [i for i in view.items if isinstance(i, ContextItem)]
    assert [c.is_tool_change for c in contexts] == [True, False]
    change = contexts[0].message
    assert [a.name for a in change.additions] == ["time"] and change.removals == ("grep",)
    assert contexts[1].message.text == "Be brief."


def test_any_split_into_increments_gives_the_same_view():
    log = LogBuilder()
    tool_turn(log, [READ, GREP], "read", "c1")
    log.simple_turn([READ, TIME], "two")
    log.compaction()
    log.simple_turn([READ, TIME, GREP], "three", new_sequence=True)
    whole = reduce(log)

    for split in range(len(log.events) + 1):
        view = SessionView(log.header)
        for event in log.events[:split]:
            view.apply(event)
        # Reading the view between increments must not change what the rest produces.
        _ = (view.requests, view.history, view.messages)
        for event in log.events[split:]:
            view.apply(event)
        assert view.requests == whole.requests
        assert view.turns == whole.turns
        assert view.items == whole.items
        assert view.history == whole.history


def test_design_worked_example_reduces_to_the_expected_snapshot_at_every_request():
    """docs/architecture.md §8: h0 [read, grep]; +time (d1); −grep (d2); +grep unchanged (d3)."""
    log = LogBuilder()
    log.simple_turn([READ, GREP], "h0")
    log.simple_turn([READ, GREP, TIME], "d1")
    log.simple_turn([READ, TIME], "d2")
    log.simple_turn([READ, TIME, GREP], "d3")
    view = reduce(log)
    contexts = [i for i in view.items if isinstance(i, ContextItem)]
    d1, d2, d3 = (c.seq for c in contexts)
    first_header_seq = view.requests[0].header_seq

    expected = [
        # (current, [(seq, additions, removals)])
        ((READ, GREP), []),
        ((READ, GREP, TIME), [(d1, (TIME,), ())]),
        ((READ, TIME), [(d1, (TIME,), ()), (d2, (), ("grep",))]),
        ((READ, TIME, GREP), [(d1, (TIME,), ()), (d2, (), ("grep",)), (d3, (GREP,), ())]),
    ]
    assert len(view.requests) == len(expected)
    for request, (current, updates) in zip(view.requests, expected):
        history = request.history
        assert history.sequence == 0
        assert history.initial == (READ, GREP)
        assert history.declared == (READ, GREP, TIME)[: 2 + (len(updates) > 0)]
        assert history.current == current
        assert history.start_seq == first_header_seq
        assert [(u.seq, u.additions, u.removals) for u in history.updates] == updates
        assert history.last_seq == request.seq - 1


@pytest.mark.parametrize(
    "cls", [UserItem, AssistantItem, ToolCallItem, ToolResultItem, ContextItem, HeaderItem, RequestErrorItem, RetryItem, SummaryItem]
)
def test_an_item_made_without_its_init_is_the_one_its_init_makes(cls) -> None:  # type: ignore[no-untyped-def]
    """The item makers set the slots directly (`view_items._constructors`): the item equals, hashes, prints
    and stays frozen as one made by the dataclass's own `__init__`."""
    values = [f"value {number}" for number in range(len(dataclasses.fields(cls)))]
    (make,) = view_items._constructors(cls)
    made, expected = make(*values), cls(*values)

    assert type(made) is cls and made == expected and hash(made) == hash(expected) and repr(made) == repr(expected)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.seq = 1

"""Per-route projection (docs/architecture.md §8): the worked example at every request on every mode, the seed's
prompt-plus-addition scenario (seed 000), fallbacks, prompt placement and the edge cases between."""

from __future__ import annotations

import copy
from dataclasses import replace
from itertools import pairwise

import pytest

from app.llm.projection import (
    MISSING_UPDATE,
    NO_HISTORY,
    ProjectedRequest,
    describe_fallback,
    project_request,
    project_tool_updates,
)
from app.llm.routes import DEFAULT_BETA_HEADER, DEFAULT_TOOL_UPDATE_BETA, Route, load_catalog
from app.session.tool_history import EMPTY_HISTORY
from app.session.view import SessionView
from app.session.view_items import ContextItem
from tests.support.builder import LogBuilder, tool

READ, GREP, TIME = tool("read"), tool("grep"), tool("time")
PROMPT = "You are helpful."
BETA = (DEFAULT_BETA_HEADER, DEFAULT_TOOL_UPDATE_BETA)

CATALOG = load_catalog()
IN_HISTORY = CATALOG.get("anthropic/claude-sonnet")
ADDITION_ONLY = CATALOG.get("deepseek/deepseek-flash")
OPENAI = CATALOG.get("openai/gpt")
NONE_ON_DEEPSEEK = replace(ADDITION_ONLY, id="deepseek/none", tool_update="none")


def view_of(log: LogBuilder) -> SessionView:
    view = SessionView(log.header)
    for event in log.events:
        view.apply(event)
    return view


def developer_seqs(log: LogBuilder) -> list[int]:
    return [e.seq for e in log.events if e.type == "developer/message"]


def declared(projected: ProjectedRequest) -> list[tuple[str, str, bool]]:
    return [(d.tool.name, d.state, d.defer_loading) for d in projected.declarations]


def blocks(projected: ProjectedRequest) -> list[tuple[int, str, str | None, int]]:
    """(position, kind, tool name, developer message seq) of every block, in order."""
    return [
        (group.position, block.kind, block.name, block.seq)
        for group in projected.groups
        for block in group.blocks
    ]


def non_deferred(projected: ProjectedRequest) -> list[object]:
    return [d.tool for d in projected.declarations if not d.defer_loading]


def assert_keeps_prefix(previous: ProjectedRequest, current: ProjectedRequest) -> None:
    assert non_deferred(current) == non_deferred(previous)
    assert current.system == previous.system
    assert current.conversation[: len(previous.conversation)] == previous.conversation
    assert current.groups[: len(previous.groups)] == previous.groups


# --- the worked example: h0 [read, grep]; +time (d1); −grep (d2); +grep unchanged (d3) ------------


@pytest.fixture(scope="module")
def worked_example() -> tuple[SessionView, list[int]]:
    log = LogBuilder()
    for tools in ([READ, GREP], [READ, GREP, TIME], [READ, TIME], [READ, TIME, GREP]):
        log.simple_turn(tools, system=PROMPT)
    return view_of(log), developer_seqs(log)


def test_worked_example_in_history(worked_example):
    view, (d1, d2, d3) = worked_example
    projected = [project_request(request, IN_HISTORY) for request in view.requests]
    initial = [("read", "initial", False), ("grep", "initial", False)]
    time_added = ("time", "added", True)
    assert declared(projected[0]) == initial
    assert declared(projected[1]) == [*initial, time_added]
    assert declared(projected[2]) == [
        ("read", "initial", False),
        ("grep", "retained-removed", False),
        time_added,
    ]
    assert declared(projected[3]) == [*initial, time_added]
    # Each update sits right after the user message of its turn: positions 3, 5, 7.
    assert blocks(projected[0]) == []
    assert blocks(projected[1]) == [(3, "tool_addition", "time", d1)]
    assert blocks(projected[2]) == [*blocks(projected[1]), (5, "tool_removal", "grep", d2)]
    assert blocks(projected[3]) == [*blocks(projected[2]), (7, "tool_addition", "grep", d3)]
    assert [p.beta for p in projected] == [None, BETA, BETA, BETA]
    for previous, current in pairwise(projected):
        assert_keeps_prefix(previous, current)
    assert {p.system for p in projected} == {PROMPT}
    assert {p.fallback for p in projected} == {None}


def test_worked_example_addition_only(worked_example):
    view, (d1, _d2, _d3) = worked_example
    projected = [project_request(request, ADDITION_ONLY) for request in view.requests]
    assert declared(projected[0]) == [("read", "initial", False), ("grep", "initial", False)]
    assert declared(projected[1]) == [
        ("read", "initial", False),
        ("grep", "initial", False),
        ("time", "added", True),
    ]
    assert declared(projected[2]) == [("read", "initial", False), ("time", "added", True)]
    assert declared(projected[3]) == declared(projected[1])
    # Only the deferred tool's addition: no removal, and grep is declared up front again.
    assert [blocks(p) for p in projected[1:]] == [[(3, "tool_addition", "time", d1)]] * 3
    assert [p.beta for p in projected] == [None, BETA, BETA, BETA]
    assert_keeps_prefix(projected[0], projected[1])
    assert non_deferred(projected[2]) != non_deferred(projected[1])  # the prefix breaks at d2…
    assert non_deferred(projected[3]) != non_deferred(projected[2])  # …and when grep returns


@pytest.mark.parametrize("route", [OPENAI, NONE_ON_DEEPSEEK], ids=lambda r: r.id)
def test_worked_example_none(worked_example, route):
    view, _ = worked_example
    projected = [project_request(request, route) for request in view.requests]
    assert [[name for name, _, _ in declared(p)] for p in projected] == [
        ["read", "grep"],
        ["read", "grep", "time"],
        ["read", "time"],
        ["read", "time", "grep"],
    ]
    assert all(not d.defer_loading for p in projected for d in p.declarations)
    assert declared(projected[1])[2] == ("time", "added", False)
    assert all(p.groups == () and p.beta is None and p.fallback is None for p in projected)


def test_a_request_projects_with_its_own_snapshot_not_the_latest(worked_example):
    view, _ = worked_example
    second = view.requests[1]
    latest = project_tool_updates(second.messages, view.history, IN_HISTORY)
    assert latest.fallback == MISSING_UPDATE  # the latest snapshot knows updates it never saw
    assert project_request(second, IN_HISTORY) == project_tool_updates(
        second.messages, second.history, IN_HISTORY
    )


# --- seed 000: an appended prompt arriving together with a deferred tool addition -----------------


def seed_scenario() -> SessionView:
    log = LogBuilder()
    log.start_turn("read the README, then tell me the time")
    log.start_step()
    log.header_for([READ], system=PROMPT)
    log.assistant("", calls=[("call-1", "read", '{"path": "README.md"}')])
    log.tool_round("call-1", "read", "# toolscope")
    log.end_step()
    log.start_step()
    # The read enabled a plugin: its tool asks to be deferred, and its instructions are appended.
    log.header_for([READ, tool("time", defer=True)], system=PROMPT + "\nTell the time in UTC.")
    log.assistant("It is noon.")
    log.end_step()
    log.end_turn()
    return view_of(log)


def test_seed_appended_prompt_with_deferred_addition_keeps_the_first_request():
    view = seed_scenario()
    first, second = (project_request(r, IN_HISTORY) for r in view.requests)
    assert first.groups == () and first.beta is None
    assert second.conversation[: len(first.conversation)] == first.conversation
    assert second.system == first.system == PROMPT
    assert non_deferred(second) == non_deferred(first) == [READ]
    (group,) = second.groups
    assert group.position == len(second.conversation) >= len(first.conversation)
    assert [(b.kind, b.name, b.text) for b in group.blocks] == [
        ("tool_addition", "time", None),
        ("text", None, PROMPT + "\nTell the time in UTC."),
    ]
    assert declared(second)[1] == ("time", "added", True)
    assert second.beta == BETA


def test_seed_scenario_on_a_top_prompt_route_moves_the_new_text_to_the_top():
    view = seed_scenario()
    first, second = (project_request(r, ADDITION_ONLY) for r in view.requests)
    assert second.system == PROMPT + "\nTell the time in UTC." != first.system
    assert [b.kind for g in second.groups for b in g.blocks] == ["tool_addition"]


# --- fallbacks ------------------------------------------------------------------------------------


def test_without_a_snapshot_the_header_tools_are_declared():
    log = LogBuilder()
    log.simple_turn([READ, tool("time", defer=True)], system=PROMPT)
    request = view_of(log).requests[0]
    for history in (None, EMPTY_HISTORY):
        projected = project_tool_updates(
            request.messages, history, IN_HISTORY, header=request.header
        )
        assert declared(projected) == [
            ("read", "initial", False),
            ("time", "explicit-deferred", True),
        ]
        assert (projected.system, projected.groups, projected.beta) == (PROMPT, (), None)
        assert projected.fallback == NO_HISTORY
    bare = project_tool_updates(request.messages, None, IN_HISTORY)
    assert (bare.declarations, bare.system, bare.fallback) == ((), "", NO_HISTORY)
    assert project_tool_updates(request.messages, None, OPENAI).fallback is None


def test_messages_missing_an_update_fall_back_to_the_current_tools(worked_example):
    view, (d1, _d2, _d3) = worked_example
    last = view.requests[-1]
    cut = [m for m in last.messages if not (isinstance(m, ContextItem) and m.seq == d1)]
    for route in (IN_HISTORY, ADDITION_ONLY):
        projected = project_tool_updates(cut, last.history, route)
        assert projected.fallback == MISSING_UPDATE
        assert declared(projected) == [
            ("read", "initial", False),
            ("time", "added", False),
            ("grep", "initial", False),
        ]
        assert projected.groups == () and projected.beta is None
    assert project_tool_updates(cut, last.history, OPENAI).fallback is None


def test_fallback_reasons_have_descriptions():
    assert "history" in describe_fallback(NO_HISTORY)
    assert "auxiliary" in describe_fallback(MISSING_UPDATE)
    assert describe_fallback("from-the-future") == "from-the-future"


# --- sequences, rebuilds, prompts, groups ---------------------------------------------------------


def test_updates_of_an_earlier_sequence_vanish_from_the_history():
    log = LogBuilder()
    log.simple_turn([READ])
    log.simple_turn([READ, GREP])
    log.simple_turn([READ, GREP], new_sequence=True)
    log.simple_turn([READ, GREP, TIME])
    view = view_of(log)
    third, fourth = (project_request(r, IN_HISTORY) for r in view.requests[2:])
    assert declared(third) == [("read", "initial", False), ("grep", "initial", False)]
    assert third.groups == () and third.beta is None
    assert [b[1:3] for b in blocks(fourth)] == [("tool_addition", "time")]
    assert len(fourth.conversation) == 7  # the earlier turns stay: only the blocks are gone


def test_a_redefinition_rebuilds_and_drops_earlier_blocks():
    log = LogBuilder()
    log.simple_turn([READ, GREP])
    log.simple_turn([READ])
    log.simple_turn([READ, tool("grep", "grep, rewritten")])
    projected = project_request(view_of(log).requests[-1], IN_HISTORY)
    assert declared(projected) == [("read", "initial", False), ("grep", "initial", False)]
    assert projected.groups == ()


def test_a_tool_asking_for_deferred_loading():
    log = LogBuilder()
    log.simple_turn([READ, tool("time", defer=True)])
    request = view_of(log).requests[0]
    for route in (IN_HISTORY, ADDITION_ONLY):
        assert declared(project_request(request, route))[1] == ("time", "explicit-deferred", True)
    for route in (OPENAI, NONE_ON_DEEPSEEK):
        assert declared(project_request(request, route))[1] == ("time", "initial", False)


def test_addition_only_never_names_a_tool_it_no_longer_declares():
    log = LogBuilder()
    log.simple_turn([READ])
    log.simple_turn([READ, TIME])
    log.simple_turn([READ])
    projected = project_request(view_of(log).requests[-1], ADDITION_ONLY)
    assert declared(projected) == [("read", "initial", False)]
    assert projected.groups == () and projected.beta is None


def test_instructions_updates_follow_the_route_prompt_mode():
    log = LogBuilder()
    log.simple_turn([READ], system=PROMPT)
    log.simple_turn([READ], system="Answer in French.")
    (text_seq,) = developer_seqs(log)
    request = view_of(log).requests[-1]
    in_history = project_request(request, IN_HISTORY)
    assert in_history.system == PROMPT
    assert [
        (g.position, [(b.kind, b.text, b.seq) for b in g.blocks]) for g in in_history.groups
    ] == [(3, [("text", "Answer in French.", text_seq)])]
    assert in_history.beta == BETA
    for route in (
        ADDITION_ONLY,
        OPENAI,
        # A `none` route never has blocks, whatever its prompt mode says.
        replace(NONE_ON_DEEPSEEK, system_prompt="in-history"),
    ):
        projected = project_request(request, route)
        assert (projected.system, projected.groups, projected.beta) == (
            "Answer in French.",
            (),
            None,
        )


def test_an_update_yields_its_additions_then_its_removals_in_message_order():
    log = LogBuilder()
    log.simple_turn([READ, GREP, tool("write")])
    log.simple_turn([TIME, READ, tool("fetch")])  # −grep −write +time +fetch in one message
    (update_seq,) = developer_seqs(log)
    projected = project_request(view_of(log).requests[-1], IN_HISTORY)
    assert blocks(projected) == [
        (3, "tool_addition", "time", update_seq),
        (3, "tool_addition", "fetch", update_seq),
        (3, "tool_removal", "grep", update_seq),
        (3, "tool_removal", "write", update_seq),
    ]


def test_updates_recorded_at_one_place_share_one_group():
    # A failed request, then the tools change before the retry: no conversation message between.
    log = LogBuilder()
    log.start_turn()
    log.start_step()
    log.header_for([READ])
    log.assistant("", calls=[("call-1", "read", "{}")])
    log.tool_round("call-1", "read")
    log.end_step()
    log.start_step()
    log.header_for([READ, GREP])
    log.request_error()
    log.retry()
    log.header_for([READ, GREP, TIME], system="Retry rules.")
    log.assistant()
    log.end_step()
    log.end_turn()
    view = view_of(log)
    failed, retried = (project_request(r, IN_HISTORY) for r in view.requests[1:])
    (group,) = retried.groups
    assert group.position == 3 == len(retried.conversation)
    assert [(b.kind, b.name or b.text) for b in group.blocks] == [
        ("tool_addition", "grep"),
        ("tool_addition", "time"),
        ("text", "Retry rules."),
    ]
    assert failed.groups[0].blocks == group.blocks[:1]


def test_the_beta_header_can_be_switched_off():
    log = LogBuilder()
    log.simple_turn([READ])
    log.simple_turn([READ, GREP])
    request = view_of(log).requests[-1]
    quiet = replace(IN_HISTORY, beta_header="")
    projected = project_request(request, quiet)
    assert projected.groups and projected.beta is None


def test_the_openai_sdk_route_never_sends_updates_even_when_misconfigured(worked_example):
    view, _ = worked_example
    forced = copy.copy(OPENAI)
    object.__setattr__(forced, "tool_update", "in-history")  # past the check, as a bug could
    projected = project_request(view.requests[-1], forced)
    assert [name for name, _, _ in declared(projected)] == ["read", "time", "grep"]
    assert not any(d.defer_loading for d in projected.declarations)
    assert (projected.groups, projected.beta) == ((), None)


def test_routes_are_plain_inputs():
    route = Route(
        id="custom/x", dialect="offline", model="m", base_url="http://x", tool_update="in-history"
    )
    log = LogBuilder()
    log.simple_turn([READ])
    log.simple_turn([READ, GREP])
    projected = project_request(view_of(log).requests[-1], route)
    assert projected.route_id == "custom/x"
    # `top` prompts by default; blocks still flow on an in-history tool mode.
    assert [b[1:3] for b in blocks(projected)] == [("tool_addition", "grep")]

"""Properties of the projection over drawn session logs (tests/support/histories.py).

Two notions are defined here, at the projection level:
- *availability*: what a provider lets the model call once it applied the request — every declared
  tool that is not deferred, then each block in order: an addition makes its tool available, a
  removal takes it away;
- *keeping the prefix*: same non-deferred declarations in order, same top system text, and the
  previous request's conversation and blocks, in their rendered order, a prefix of the new one's.
  Blocks count one by one, so an update added to a group that ends the previous request (a retry
  after the tools changed) extends the prefix rather than breaking it.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.llm.projection import (
    MISSING_UPDATE,
    ProjectedRequest,
    project_request,
    project_tool_updates,
)
from app.llm.routes import Route, load_catalog
from app.session.view import ModelRequest
from app.session.view_items import ContextItem
from tests.support.histories import GeneratedLog, session_logs

CATALOG = load_catalog()
_offline = CATALOG.get("offline/demo")
ROUTES: tuple[Route, ...] = (
    *CATALOG,
    replace(_offline, id="variant/in-history-top", system_prompt="top"),
    replace(_offline, id="variant/addition-only-in-history", tool_update="addition-only"),
    replace(_offline, id="variant/none", tool_update="none"),
)
IN_HISTORY_PROMPTS = [r for r in ROUTES if r.tool_update == "in-history" and r.system_in_history]

PROPERTY = settings(max_examples=80, deadline=None)


def non_deferred(projected: ProjectedRequest) -> list[object]:
    return [d.tool for d in projected.declarations if not d.defer_loading]


def rendered(projected: ProjectedRequest) -> list[tuple[str, object]]:
    """Conversation messages and blocks in the order a provider reads them."""
    blocks_at = {group.position: group.blocks for group in projected.groups}
    order: list[tuple[str, object]] = []
    for position in range(len(projected.conversation) + 1):
        order += [("block", block) for block in blocks_at.get(position, ())]
        if position < len(projected.conversation):
            order.append(("message", projected.conversation[position]))
    return order


def keeps_prefix(previous: ProjectedRequest, current: ProjectedRequest) -> bool:
    before = rendered(previous)
    return (
        non_deferred(current) == non_deferred(previous)
        and current.system == previous.system
        and rendered(current)[: len(before)] == before
    )


def available(projected: ProjectedRequest) -> set[str]:
    loaded = {d.tool.name for d in projected.declarations if not d.defer_loading}
    for group in projected.groups:
        for block in group.blocks:
            if block.kind == "tool_addition":
                loaded.add(block.name)
            elif block.kind == "tool_removal":
                loaded.discard(block.name)
    return loaded


def added_in_sequence(request: ModelRequest, name: str) -> bool:
    return any(tool.name == name for update in request.history.updates for tool in update.additions)


@PROPERTY
@given(session_logs())
def test_in_history_keeps_the_prefix_until_the_declarations_are_rebuilt(log: GeneratedLog):
    requests = log.view().requests
    for route in IN_HISTORY_PROMPTS:
        for previous, current in pairwise(requests):
            before, after = previous.history, current.history
            if (before.sequence, before.start_seq) != (after.sequence, after.start_seq):
                continue  # a new sequence, or a retained tool changed its definition
            assert keeps_prefix(project_request(previous, route), project_request(current, route))


@PROPERTY
@given(session_logs())
def test_declarations_follow_the_route_mode(log: GeneratedLog):
    for request in log.view().requests:
        history = request.history
        for route in ROUTES:
            tools = [d.tool for d in project_request(request, route).declarations]
            if not route.sends_tool_updates:
                assert tools == list(history.current)
            elif route.tool_update == "in-history":
                assert tools == list(history.declared)
            else:
                assert tools == [t for t in history.declared if t.name in history.current_names]


@PROPERTY
@given(session_logs())
def test_blocks_only_name_declared_tools(log: GeneratedLog):
    for request in log.view().requests:
        for route in ROUTES:
            projected = project_request(request, route)
            names = {d.tool.name for d in projected.declarations}
            for group in projected.groups:
                assert group.blocks
                for block in group.blocks:
                    assert (block.kind == "text") == (block.name is None)
                    assert block.kind == "text" or block.name in names
            assert (projected.beta is not None) == bool(projected.groups)
            if not route.sends_tool_updates:
                assert projected.groups == ()
                assert not any(d.defer_loading for d in projected.declarations)


@PROPERTY
@given(session_logs())
def test_current_tools_are_available_and_removed_ones_are_not(log: GeneratedLog):
    for request in log.view().requests:
        current = request.history.current
        for route in ROUTES:
            projected = project_request(request, route)
            declared = {d.tool.name: d for d in projected.declarations}
            loaded = available(projected)
            assert loaded <= request.history.current_names
            for tool in current:
                assert declared[tool.name].tool == tool
                if not (tool.defer_loading and route.sends_tool_updates):
                    assert tool.name in loaded
                    continue
                # It asked to be deferred: declared so, and made available by its addition.
                assert declared[tool.name].defer_loading
                if added_in_sequence(request, tool.name):
                    assert tool.name in loaded


@pytest.mark.slow(seconds=8)
@PROPERTY
@given(session_logs())
def test_projection_depends_only_on_snapshot_messages_and_route(log: GeneratedLog):
    requests = log.view().requests
    first = {(r.index, route.id): project_request(r, route) for r in requests for route in ROUTES}
    for request in reversed(requests):
        for route in ROUTES:
            expected = first[request.index, route.id]
            assert project_request(request, route) == expected
            copied = project_tool_updates(
                copy.deepcopy(list(request.messages)), copy.deepcopy(request.history), route
            )
            assert copied == expected


@PROPERTY
@given(session_logs(), st.data())
def test_a_request_missing_an_update_falls_back_to_the_current_tools(log: GeneratedLog, data):
    requests = [r for r in log.view().requests if r.history.updates]
    if not requests:
        return
    request = data.draw(st.sampled_from(requests))
    dropped = data.draw(st.sampled_from(request.history.updates)).message_id
    cut = [
        m for m in request.messages if not (isinstance(m, ContextItem) and m.message.id == dropped)
    ]
    for route in ROUTES:
        projected = project_tool_updates(cut, request.history, route)
        assert [d.tool for d in projected.declarations] == list(request.history.current)
        assert projected.groups == () and projected.beta is None
        assert projected.fallback == (MISSING_UPDATE if route.sends_tool_updates else None)

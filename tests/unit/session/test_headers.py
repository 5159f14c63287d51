"""docs/architecture.md §7's header rules as plain functions: canonical form, equality, and the developer
messages a change yields."""

from __future__ import annotations

from app.session.events import RequestHeaderData, ToolDefinition
from app.session.headers import (
    canonical_header,
    headers_equal,
    instructions_message,
    name_diff,
    needs_new_header,
    tool_registry_message,
)
from tests.support.builder import tool

READ, GREP, TIME = tool("read"), tool("grep"), tool("time")


def header(tools=(READ, GREP), system="Be brief.", sequence=0, **changes) -> RequestHeaderData:  # type: ignore[no-untyped-def]
    values = dict(
        reason="change", sequence=sequence, route="offline/demo", model="m", system=system,
        tools=tuple(tools), config={"temperature": 0, "max_tokens": 10},
    )
    values.update(changes)
    return RequestHeaderData(**values)


def test_canonical_form_ignores_key_order_but_not_tool_order_or_json_types():
    reordered = ToolDefinition(
        name="read", description=READ.description, parameters=dict(reversed(list(READ.parameters.items())))
    )
    assert headers_equal(header(tools=(READ, GREP)), header(tools=(reordered, GREP)))
    assert not headers_equal(header(tools=(READ, GREP)), header(tools=(GREP, READ)))
    one = header(config={"temperature": 1})
    true = header(config={"temperature": True})
    assert not headers_equal(one, true)
    assert canonical_header(header(config={"b": 1, "a": 2})) == canonical_header(header(config={"a": 2, "b": 1}))


def test_reason_and_sequence_are_not_content_but_a_new_sequence_forces_a_header():
    assert headers_equal(header(reason="initial"), header(reason="resume"))
    assert needs_new_header(None, header())
    assert not needs_new_header(header(), header(reason="resume"))
    assert needs_new_header(header(), header(sequence=1))
    for changed in (header(route="other"), header(model="m2"), header(system="New."), header(config={}), header(tools=(READ,))):
        assert needs_new_header(header(), changed)


def test_name_diff_keeps_each_side_in_order():
    assert name_diff([READ, GREP], [TIME, READ, tool("fetch")]) == (["time", "fetch"], ["grep"])
    assert name_diff([READ], [READ]) == ([], [])


def test_one_tool_registry_message_for_name_changes_with_the_new_header_seq():
    update = tool_registry_message(header(tools=(READ, GREP)), header(tools=(READ, TIME)), 17, "d1")
    assert update is not None
    assert [(a.name, a.header_seq) for a in update.additions] == [("time", 17)]
    assert update.removals == ("grep",) and update.id == "d1"


def test_no_tool_registry_message_for_the_first_header_or_changed_definitions_only():
    assert tool_registry_message(None, header(), 0, "d1") is None
    changed = ToolDefinition(name="read", description="Reads better.", parameters={})
    assert tool_registry_message(header(tools=(READ, GREP)), header(tools=(changed, GREP)), 5, "d1") is None


def test_an_instructions_message_only_for_a_changed_text_after_the_first_request():
    assert instructions_message(None, header(), 0, "d1") is None
    assert instructions_message(header(), header(tools=(READ,)), 3, "d1") is None
    update = instructions_message(header(), header(system="Be thorough."), 3, "d2")
    assert update is not None and (update.text, update.header_seq) == ("Be thorough.", 3)

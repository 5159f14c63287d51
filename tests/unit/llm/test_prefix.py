"""docs/architecture.md §8's prefix rule on wire bodies: what keeps a provider's cached prefix, where it breaks."""

from __future__ import annotations

import pytest

from app.llm.prefix import PrefixResult, json_pointer, prefix_kept


def chat_tool(name: str, *, deferred: bool = False, description: str | None = None) -> dict:
    tool = {
        "type": "function",
        "function": {"name": name, "description": description or f"The {name} tool.", "parameters": {}},
    }
    if deferred:
        tool["defer_loading"] = True
    return tool


def anthropic_tool(name: str, *, deferred: bool = False) -> dict:
    tool = {"name": name, "description": f"The {name} tool.", "input_schema": {"type": "object"}}
    if deferred:
        tool["defer_loading"] = True
    return tool


def chat_body(tools, messages, system: str | None = "You are helpful.") -> dict:
    top = [{"role": "system", "content": system}] if system is not None else []
    body = {"model": "deepseek-flash", "messages": top + list(messages), "stream": True}
    if tools:
        body["tools"] = list(tools)
    return body


def anthropic_body(tools, messages, system: str | None = "You are helpful.") -> dict:
    body = {"model": "claude", "max_tokens": 1024, "messages": list(messages), "stream": True}
    if system is not None:
        body["system"] = system
    if tools:
        body["tools"] = list(tools)
    return body


U1 = {"role": "user", "content": "hello"}
A1 = {"role": "assistant", "content": "hi"}
U2 = {"role": "user", "content": "more"}
ADD_TIME = {
    "role": "system",
    "content": [{"type": "tool_addition", "tool": {"type": "tool_reference", "name": "time"}}],
}
KEPT = PrefixResult(kept=True, first_difference=None)


def broken(pointer: str) -> PrefixResult:
    return PrefixResult(kept=False, first_difference=pointer)


# --- deepseek-chat -------------------------------------------------------------------------------


def test_a_grown_conversation_keeps_the_prefix():
    tools = [chat_tool("read")]
    assert prefix_kept(chat_body(tools, [U1]), chat_body(tools, [U1, A1, U2]), "deepseek-chat") == KEPT


def test_a_deferred_addition_keeps_the_prefix():
    before = chat_body([chat_tool("read")], [U1])
    after = chat_body([chat_tool("read"), chat_tool("time", deferred=True)], [U1, A1, U2, ADD_TIME])
    assert prefix_kept(before, after, "deepseek-chat") == KEPT


def test_dropping_a_deferred_declaration_keeps_the_prefix():
    before = chat_body([chat_tool("read"), chat_tool("time", deferred=True)], [U1])
    after = chat_body([chat_tool("read")], [U1, A1])
    assert prefix_kept(before, after, "deepseek-chat") == KEPT


def test_a_non_deferred_addition_breaks_at_its_index():
    before = chat_body([chat_tool("read"), chat_tool("grep")], [U1])
    tools = [chat_tool("read"), chat_tool("time", deferred=True), chat_tool("grep"), chat_tool("ls")]
    after = chat_body(tools, [U1])
    assert prefix_kept(before, after, "deepseek-chat") == broken("/tools/3")


def test_a_removed_declaration_breaks_where_the_next_one_sits():
    before = chat_body([chat_tool("read"), chat_tool("grep"), chat_tool("time")], [U1])
    after = chat_body([chat_tool("read"), chat_tool("time")], [U1])
    assert prefix_kept(before, after, "deepseek-chat") == broken("/tools/1")


def test_a_missing_trailing_declaration_points_one_past_the_end():
    before = chat_body([chat_tool("read"), chat_tool("grep")], [U1])
    after = chat_body([chat_tool("read"), chat_tool("time", deferred=True)], [U1])
    assert prefix_kept(before, after, "deepseek-chat") == broken("/tools/2")


def test_a_changed_definition_breaks():
    before = chat_body([chat_tool("read")], [U1])
    after = chat_body([chat_tool("read", description="Reads better.")], [U1])
    assert prefix_kept(before, after, "deepseek-chat") == broken("/tools/0")


def test_reordered_declarations_break():
    before = chat_body([chat_tool("read"), chat_tool("grep")], [U1])
    after = chat_body([chat_tool("grep"), chat_tool("read")], [U1])
    assert prefix_kept(before, after, "deepseek-chat") == broken("/tools/0")


@pytest.mark.parametrize(("before", "after"), [("Old.", "New."), ("Old.", None), (None, "New.")])
def test_a_changed_top_system_text_breaks_at_the_first_message(before, after):
    assert prefix_kept(chat_body([], [U1], before), chat_body([], [U1, A1], after), "deepseek-chat") == broken(
        "/messages/0"
    )


def test_a_changed_message_is_pointed_at_with_the_system_message_counted():
    before = chat_body([], [U1, A1, U2])
    after = chat_body([], [U1, {"role": "assistant", "content": "hello"}, U2])
    assert prefix_kept(before, after, "deepseek-chat") == broken("/messages/2")


def test_an_update_inserted_into_earlier_history_breaks_there():
    before = chat_body([], [U1, A1])
    after = chat_body([], [U1, ADD_TIME, A1, U2])
    assert prefix_kept(before, after, "deepseek-chat") == broken("/messages/2")


def test_a_shorter_conversation_points_one_past_its_end():
    before = chat_body([], [U1, A1, U2])
    after = chat_body([], [U1])
    assert prefix_kept(before, after, "deepseek-chat") == broken("/messages/2")


def test_without_a_top_system_message_indexes_start_at_zero():
    assert prefix_kept(chat_body([], [U1], None), chat_body([], [U2], None), "deepseek-chat") == broken(
        "/messages/0"
    )


def test_declarations_are_compared_before_the_system_text_and_messages():
    before = chat_body([chat_tool("read")], [U1], "Old.")
    after = chat_body([chat_tool("grep")], [U2], "New.")
    assert prefix_kept(before, after, "deepseek-chat") == broken("/tools/0")


@pytest.mark.parametrize("dialect", ["openai-sdk", "offline"])
def test_the_other_chat_wire_routes_share_the_layout(dialect):
    result = prefix_kept(chat_body([], [U1], "Old."), chat_body([], [U1], "New."), dialect)
    assert result == broken("/messages/0")


# --- anthropic-messages ------------------------------------------------------------------------


def test_anthropic_system_text_is_its_own_field():
    before = anthropic_body([anthropic_tool("read")], [U1], "Old.")
    after = anthropic_body([anthropic_tool("read")], [U1, A1], "New.")
    assert prefix_kept(before, after, "anthropic-messages") == broken("/system")


def test_anthropic_messages_count_from_zero():
    before = anthropic_body([], [U1, A1])
    after = anthropic_body([], [U1, ADD_TIME, A1])
    assert prefix_kept(before, after, "anthropic-messages") == broken("/messages/1")


def test_anthropic_deferred_addition_and_in_history_update_keep_the_prefix():
    before = anthropic_body([anthropic_tool("read")], [U1])
    tools = [anthropic_tool("read"), anthropic_tool("time", deferred=True)]
    after = anthropic_body(tools, [U1, ADD_TIME, A1])
    assert prefix_kept(before, after, "anthropic-messages") == KEPT


# --- pointers ------------------------------------------------------------------------------------


def test_json_pointer_escapes_per_rfc_6901():
    assert json_pointer("tools", 1) == "/tools/1"
    assert json_pointer("a/b", "m~n", "") == "/a~1b/m~0n/"
    assert json_pointer("~1") == "/~01"

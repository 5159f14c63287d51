"""The deepseek-chat body: every message kind, update groups at their positions, config mapping."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.llm.deepseek.body import SUMMARY_PREFIX, build_chat_request
from app.llm.dispatch import build_wire
from app.llm.routes import load_catalog
from app.llm.projection import BlockGroup, Declaration, ProjectedRequest, UpdateBlock
from app.session.events import (
    InstructionsUpdate,
    ReasoningContent,
    TextContent,
    ToolCallContent,
    ToolDefinition,
)
from app.session.view_items import AssistantItem, ContextItem, SummaryItem, ToolResultItem, UserItem

BETA = ("anthropic-beta", "mid-conversation-tool-changes-2026-07-01")


def tool(name: str) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=f"The {name} tool.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}},
    )


def declared(name: str, *, deferred: bool = False) -> Declaration:
    return Declaration(tool=tool(name), state="added" if deferred else "initial", defer_loading=deferred)


def user(seq: int, text: str = "hello") -> UserItem:
    return UserItem(seq=seq, id=f"u{seq}", text=text)


def assistant(seq: int, *parts) -> AssistantItem:
    finish = "tool-calls" if any(isinstance(p, ToolCallContent) for p in parts) else "stop"
    return AssistantItem(
        seq=seq, turn=1, step=1, route="deepseek/deepseek-flash", model="deepseek-flash",
        content=tuple(parts), usage=None, finish=finish, interrupted=False,
    )


def result(seq: int, call_id: str, content: str = "done", *, error: bool = False) -> ToolResultItem:
    return ToolResultItem(
        seq=seq, turn=1, step=1, call_id=call_id, name="read", content=content, is_error=error, error=None
    )


def projected(
    conversation=(), *, system="You are helpful.", declarations=(), groups=(), beta=None
) -> ProjectedRequest:
    return ProjectedRequest(
        route_id="deepseek/deepseek-flash",
        system=system,
        declarations=tuple(declarations),
        conversation=tuple(conversation),
        groups=tuple(groups),
        beta=beta,
        fallback=None,
    )


def build(request: ProjectedRequest, **config):
    return build_chat_request(request, model="deepseek-flash", config=config)


def test_minimal_body_streams_with_usage_and_system_first():
    wire = build(projected([user(1)]))
    assert wire.body == {
        "model": "deepseek-flash",
        "messages": [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "hello"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert wire.headers == {}
    assert wire.group_indexes == ()


def test_empty_system_text_sends_no_system_message():
    wire = build(projected([user(1)], system=""))
    assert wire.body["messages"] == [{"role": "user", "content": "hello"}]


def test_tools_are_functions_and_defer_loading_appears_only_when_true():
    wire = build(projected([user(1)], declarations=[declared("read"), declared("time", deferred=True)]))
    assert wire.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "The read tool.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        },
        {
            "type": "function",
            "function": {
                "name": "time",
                "description": "The time tool.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
            "defer_loading": True,
        },
    ]


def test_every_message_kind():
    conversation = [
        SummaryItem(seq=0, summary="We read the README.", up_to_seq=0, sequence=1),
        user(1, "read it again"),
        assistant(
            2,
            ReasoningContent(text="The user wants "),
            ReasoningContent(text="the file."),
            ToolCallContent(call_id="call_1", name="read", arguments='{"path": "README.md"}'),
            ToolCallContent(call_id="call_2", name="read", arguments="{}"),
        ),
        result(3, "call_1", "# toolscope"),
        result(4, "call_2", "missing path", error=True),
        assistant(5, TextContent(text="It is "), TextContent(text="a README.")),
    ]
    messages = build(projected(conversation, system="")).body["messages"]
    assert messages == [
        {"role": "user", "content": SUMMARY_PREFIX + "We read the README."},
        {"role": "user", "content": "read it again"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "The user wants the file.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "README.md"}'},
                },
                {"id": "call_2", "type": "function", "function": {"name": "read", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "# toolscope"},
        {"role": "tool", "tool_call_id": "call_2", "content": "missing path"},
        {"role": "assistant", "content": "It is a README."},
    ]


def test_tool_call_turn_content_is_never_null():
    call = ToolCallContent(call_id="call_1", name="read", arguments="{}")
    message = build(projected([user(1), assistant(2, call)])).body["messages"][-1]
    assert message["content"] == ""
    assert "reasoning_content" not in message


@pytest.mark.parametrize(
    ("route_key", "fields"),
    [
        ({}, {"reasoning_content": "Look first."}),  # DeepSeek's thinking mode wants it back
        ({"reasoning_history": "reasoning"}, {"reasoning": "Look first."}),  # OpenRouter, vLLM
        ({"reasoning_history": "none"}, {}),  # Groq answers 400 to either field
    ],
)
def test_past_reasoning_goes_back_in_the_field_the_route_names(route_key, fields):
    route = load_catalog([{"id": "x/chat", "dialect": "deepseek-chat", "model": "m", "base_url": "http://h", **route_key}]).get("x/chat")
    call = ToolCallContent(call_id="call_1", name="read", arguments="{}")
    reasoned = assistant(2, ReasoningContent(text="Look first."), call)
    for wire in (build_wire(projected([user(1), reasoned]), route, {}), build_wire(projected([user(1), reasoned]), replace(route, dialect="openai-sdk"), {})):
        message = wire.body["messages"][-1]
        assert {key: message[key] for key in ("reasoning_content", "reasoning") if key in message} == fields


def test_arguments_that_are_not_a_json_object_go_back_as_an_empty_object():
    # A call the output limit cut off keeps its partial arguments in the log; servers that parse the
    # history (vLLM's chat templates) would refuse them.
    calls = [ToolCallContent(call_id=f"call_{n}", name="write", arguments=text) for n, text in enumerate(['{"path": "b.txt", "content": "ha', "", "[1]", '{"a": 1}'])]
    message = build(projected([user(1), assistant(2, *calls)])).body["messages"][-1]
    assert [c["function"]["arguments"] for c in message["tool_calls"]] == ["{}", "{}", "{}", '{"a": 1}']


def test_summary_prefix_is_fixed_english():
    # The model reads it: it must not follow the UI language.
    assert SUMMARY_PREFIX.isascii()
    assert SUMMARY_PREFIX.strip()


def test_groups_sit_before_their_position_and_at_the_end():
    call = ToolCallContent(call_id="call_1", name="read", arguments="{}")
    conversation = [user(1), assistant(2, call), result(3, "call_1"), user(5, "now use time")]
    groups = [
        BlockGroup(
            position=3,
            blocks=(
                UpdateBlock(kind="tool_addition", seq=4, name="time"),
                UpdateBlock(kind="tool_removal", seq=4, name="grep"),
                UpdateBlock(kind="text", seq=4, text="Be brief."),
            ),
        ),
        BlockGroup(position=4, blocks=(UpdateBlock(kind="tool_addition", seq=6, name="grep"),)),
    ]
    wire = build(projected(conversation, groups=groups, beta=BETA))
    messages = wire.body["messages"]
    assert [m["role"] for m in messages] == [
        "system", "user", "assistant", "tool", "system", "user", "system",
    ]
    assert messages[4] == {
        "role": "system",
        "content": [
            {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "time"}},
            {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "grep"}},
            {"type": "text", "text": "Be brief."},
        ],
    }
    assert messages[6] == {
        "role": "system",
        "content": [{"type": "tool_addition", "tool": {"type": "tool_reference", "name": "grep"}}],
    }
    assert wire.group_indexes == (4, 6)


def test_beta_header_only_with_update_blocks():
    with_blocks = projected(
        [user(1)],
        groups=[BlockGroup(position=1, blocks=(UpdateBlock(kind="tool_addition", seq=2, name="time"),))],
        beta=BETA,
    )
    assert build(with_blocks).headers == {BETA[0]: BETA[1]}
    # A beta named by the route but no blocks in this request: nothing to opt into.
    assert build(projected([user(1)], beta=BETA)).headers == {}


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({}, {}),
        ({"temperature": 0.2, "max_tokens": 4096}, {"temperature": 0.2, "max_tokens": 4096}),
        ({"reasoning_effort": "max"}, {"thinking": {"type": "enabled"}, "reasoning_effort": "max"}),
        ({"reasoning_effort": "off"}, {"thinking": {"type": "disabled"}}),
        ({"api_base": "ignored"}, {}),
    ],
)
def test_config_settings(config, expected):
    body = build(projected([user(1)]), **config).body
    settings = {
        key: value
        for key, value in body.items()
        if key not in ("model", "messages", "stream", "stream_options")
    }
    assert settings == expected


def test_a_developer_message_in_the_conversation_is_refused():
    stray = ContextItem(seq=2, message=InstructionsUpdate(id="d1", text="x", header_seq=0))
    with pytest.raises(TypeError):
        build(projected([user(1), stray]))


def test_openai_sdk_routes_send_openai_settings_with_the_same_messages():
    from app.llm.dispatch import build_wire
    from app.llm.routes import load_catalog

    catalog = load_catalog()
    projected = ProjectedRequest(
        route_id="openai/gpt",
        system="Be brief.",
        declarations=(),
        conversation=(UserItem(seq=0, id="u1", text="hi"),),
        groups=(),
        beta=None,
        fallback=None,
    )
    config = {"temperature": 0.2, "max_tokens": 100, "reasoning_effort": "low"}
    openai_body = build_wire(projected, catalog.get("openai/gpt"), config).body
    deepseek_body = build_wire(projected, catalog.get("deepseek/deepseek-flash"), config).body
    assert openai_body["messages"] == deepseek_body["messages"]
    assert {k: openai_body[k] for k in ("temperature", "max_completion_tokens", "reasoning_effort")} == {
        "temperature": 0.2, "max_completion_tokens": 100, "reasoning_effort": "low",
    }
    assert "max_tokens" not in openai_body and "thinking" not in openai_body
    assert deepseek_body["thinking"] == {"type": "enabled"} and deepseek_body["max_tokens"] == 100

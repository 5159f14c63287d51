"""The anthropic-messages body, checked against the official SDK's beta request types.

Every body a test here builds goes through `assert_valid_anthropic_body`: pydantic validation with
`anthropic.types.beta.message_create_params.MessageCreateParamsStreaming`, then a check that the
validated copy still holds every key we sent (the SDK's TypedDicts silently drop keys they do not
know, so validation alone would not notice a misspelt or invented field). The installed SDK knows
`role: "system"` messages, `tool_addition`/`tool_removal` blocks with `tool_reference` tools, and
`defer_loading`, so nothing of our bodies escapes the oracle except the inside of `input_schema`
(see `tests/support/oracles.py`).
"""

from __future__ import annotations

import typing
from typing import Any

import pytest
from anthropic.types.anthropic_beta_param import AnthropicBetaParam

from app.llm.anthropic.body import (
    DEFAULT_MAX_TOKENS,
    WirePlacementError,
    build_messages_request,
)
from app.llm.deepseek.body import SUMMARY_PREFIX, WireRequest
from app.llm.projection import BlockGroup, Declaration, ProjectedRequest, UpdateBlock
from app.llm.routes import DEFAULT_TOOL_UPDATE_BETA
from app.session.events import ReasoningContent, TextContent, ToolCallContent, ToolDefinition
from app.session.view_items import AssistantItem, SummaryItem, ToolResultItem, UserItem
from tests.support.oracles import assert_valid_anthropic_body

KNOWN_BETAS = typing.get_args(typing.get_args(AnthropicBetaParam)[1])
BETA = ("anthropic-beta", DEFAULT_TOOL_UPDATE_BETA)
MAX = DEFAULT_MAX_TOKENS


def build(request: ProjectedRequest, **config: Any) -> WireRequest:
    wire = build_messages_request(request, model="claude-sonnet-4-5", config=config)
    assert_valid_anthropic_body(wire.body)
    for name, value in wire.headers.items():
        assert name == "anthropic-beta" and value in KNOWN_BETAS
    return wire


def test_the_oracle_refuses_what_it_does_not_know():
    body = build(projected([user(1)])).body
    with pytest.raises(AssertionError, match="/messages/0/reasoning_content"):
        message = {**body["messages"][0], "reasoning_content": "x"}
        assert_valid_anthropic_body({**body, "messages": [message]})
    with pytest.raises(Exception, match="tool_reference"):
        bad = {"type": "tool_addition", "tool": {"type": "tool_ref", "name": "x"}}
        assert_valid_anthropic_body(
            {**body, "messages": [*body["messages"], {"role": "system", "content": [bad]}]}
        )


# --- fixtures ------------------------------------------------------------------------------------


def tool(name: str) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=f"The {name} tool.",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
            "additionalProperties": False,
        },
    )


def declared(name: str, *, deferred: bool = False) -> Declaration:
    return Declaration(tool=tool(name), state="added" if deferred else "initial", defer_loading=deferred)


def user(seq: int, text: str = "hello") -> UserItem:
    return UserItem(seq=seq, id=f"u{seq}", text=text)


def assistant(seq: int, *parts) -> AssistantItem:
    finish = "tool-calls" if any(isinstance(p, ToolCallContent) for p in parts) else "stop"
    return AssistantItem(
        seq=seq, turn=1, step=1, route="anthropic/claude", model="claude-sonnet-4-5",
        content=tuple(parts), usage=None, finish=finish, interrupted=False,
    )


def call(call_id: str, arguments: str = "{}") -> ToolCallContent:
    return ToolCallContent(call_id=call_id, name="read", arguments=arguments)


def result(seq: int, call_id: str, content: str = "done", *, error: bool = False) -> ToolResultItem:
    return ToolResultItem(
        seq=seq, turn=1, step=1, call_id=call_id, name="read", content=content, is_error=error, error=None
    )


def add(seq: int, name: str) -> UpdateBlock:
    return UpdateBlock(kind="tool_addition", seq=seq, name=name)


def projected(
    conversation=(), *, system="You are helpful.", declarations=(), groups=(), beta=None
) -> ProjectedRequest:
    return ProjectedRequest(
        route_id="anthropic/claude",
        system=system,
        declarations=tuple(declarations),
        conversation=tuple(conversation),
        groups=tuple(groups),
        beta=beta,
        fallback=None,
    )


# --- bodies --------------------------------------------------------------------------------------


def test_minimal_body():
    wire = build(projected([user(1)]))
    assert wire.body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "system": "You are helpful.",
        "messages": [{"role": "user", "content": "hello"}],
        "stream": True,
    }
    assert wire.headers == {}


@pytest.mark.parametrize("lifetime", ["5m", "1h"])
def test_asking_for_prompt_caching_adds_one_top_level_field_and_leaves_the_rest_as_it_was(lifetime):
    """The API moves the request-level breakpoint to the last block itself: the messages and
    tools the prefix checker compares stay as they were, so the cost estimate reads the same."""
    request = projected([user(1), assistant(2, TextContent(text="Hi."), call("c1")), result(3, "c1")], declarations=[declared("read_file")])
    plain = build(request).body
    cached = build_messages_request(request, model="claude-sonnet-4-5", config={}, cache_write=lifetime).body
    assert_valid_anthropic_body(cached)
    assert cached.pop("cache_control") == {"type": "ephemeral", "ttl": lifetime}
    assert cached == plain


def test_empty_system_text_is_left_out():
    assert "system" not in build(projected([user(1)], system="")).body


def test_tools_carry_input_schema_and_defer_loading_only_when_true():
    wire = build(projected([user(1)], declarations=[declared("read"), declared("time", deferred=True)]))
    assert wire.body["tools"] == [
        {"name": "read", "description": "The read tool.", "input_schema": tool("read").parameters},
        {
            "name": "time",
            "description": "The time tool.",
            "input_schema": tool("time").parameters,
            "defer_loading": True,
        },
    ]


def test_every_message_kind():
    conversation = [
        SummaryItem(seq=0, summary="We read the README.", up_to_seq=0, sequence=1),
        user(1, "read two files"),
        assistant(
            2,
            ReasoningContent(text="Two reads."),
            TextContent(text="Reading."),
            call("call_1", '{"path": "README.md"}'),
            call("call_2", '{"path": "LICENSE"}'),
        ),
        result(3, "call_1", "# toolscope"),
        result(4, "call_2", "no such file", error=True),
        assistant(5, TextContent(text="Done.")),
        user(6, "thanks"),
    ]
    messages = build(projected(conversation)).body["messages"]
    assert messages == [
        {"role": "user", "content": SUMMARY_PREFIX + "We read the README."},
        {"role": "user", "content": "read two files"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "README.md"}},
                {"type": "tool_use", "id": "call_2", "name": "read", "input": {"path": "LICENSE"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "# toolscope"},
                {
                    "type": "tool_result",
                    "tool_use_id": "call_2",
                    "content": "no such file",
                    "is_error": True,
                },
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
        {"role": "user", "content": "thanks"},
    ]


def test_reasoning_never_reaches_this_wire():
    turn = assistant(2, ReasoningContent(text="hmm"), TextContent(text="Hi."))
    body = build(projected([user(1), turn])).body
    assert body["messages"][-1] == {"role": "assistant", "content": [{"type": "text", "text": "Hi."}]}


def test_an_assistant_turn_with_nothing_to_carry_is_left_out():
    conversation = [user(1), assistant(2, ReasoningContent(text="hmm")), user(3, "again")]
    assert [m["role"] for m in build(projected(conversation)).body["messages"]] == ["user", "user"]


@pytest.mark.parametrize("arguments", ['{"path": ', "[1, 2]", ""])
def test_tool_use_input_that_is_not_a_json_object_becomes_empty(arguments):
    conversation = [user(1), assistant(2, call("call_1", arguments)), result(3, "call_1")]
    tool_use = build(projected(conversation)).body["messages"][1]["content"][0]
    assert tool_use["input"] == {}


def test_an_empty_tool_result_sends_no_content():
    conversation = [user(1), assistant(2, call("call_1")), result(3, "call_1", "")]
    assert build(projected(conversation)).body["messages"][-1]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_1"}
    ]


def test_groups_become_system_messages_at_their_positions():
    conversation = [user(1), assistant(2, call("call_1")), result(3, "call_1"), user(5, "and now?")]
    groups = [
        BlockGroup(
            position=3,
            blocks=(
                add(4, "time"),
                UpdateBlock(kind="tool_removal", seq=4, name="grep"),
                UpdateBlock(kind="text", seq=4, text="Answer in French."),
            ),
        ),
        BlockGroup(position=4, blocks=(add(6, "grep"),)),
    ]
    wire = build(projected(conversation, groups=groups, beta=BETA))
    messages = wire.body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "system", "user", "system"]
    assert messages[3] == {
        "role": "system",
        "content": [
            {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "time"}},
            {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "grep"}},
            {"type": "text", "text": "Answer in French."},
        ],
    }
    assert wire.group_indexes == (3, 5)
    assert wire.headers == {"anthropic-beta": DEFAULT_TOOL_UPDATE_BETA}


def test_beta_header_only_with_update_blocks():
    assert build(projected([user(1)], beta=BETA)).headers == {}


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({}, {"max_tokens": MAX}),
        ({"max_tokens": 1024, "temperature": 0.3}, {"max_tokens": 1024}),
        ({"reasoning_effort": "high"}, {"max_tokens": MAX, "output_config": {"effort": "high"}}),
        ({"reasoning_effort": "minimal"}, {"max_tokens": MAX, "output_config": {"effort": "low"}}),
        ({"reasoning_effort": "off"}, {"max_tokens": MAX, "thinking": {"type": "disabled"}}),
    ],
)
def test_config_settings(config, expected):
    body = build(projected([user(1)]), **config).body
    settings = {k: v for k, v in body.items() if k not in ("model", "system", "messages", "stream")}
    assert settings == expected


# --- placement -----------------------------------------------------------------------------------


def placed(conversation, position: int) -> ProjectedRequest:
    group = BlockGroup(position=position, blocks=(add(9, "time"),))
    return projected(conversation, groups=[group], beta=BETA)


def test_a_system_message_never_opens_the_conversation():
    with pytest.raises(WirePlacementError, match="open") as raised:
        build_messages_request(placed([user(1)], 0), model="m", config={})
    assert raised.value.index == 0


def test_a_system_message_follows_a_user_turn():
    with pytest.raises(WirePlacementError, match="follow a user turn") as raised:
        conversation = [user(1), assistant(2, TextContent(text="Hi."))]
        build_messages_request(placed(conversation, 2), model="m", config={})
    assert raised.value.index == 2


@pytest.mark.parametrize("position", [2, 3])
def test_a_system_message_never_separates_tool_use_from_tool_result(position):
    # 2: right after the tool_use; 3: after one result of two, which is after a user turn.
    conversation = [
        user(1),
        assistant(2, call("call_1"), call("call_2")),
        result(3, "call_1"),
        result(4, "call_2"),
    ]
    with pytest.raises(WirePlacementError, match="between tool_use and tool_result.*call_2"):
        build_messages_request(placed(conversation, position), model="m", config={})


def test_after_all_tool_results_is_a_valid_place():
    conversation = [
        user(1),
        assistant(2, call("call_1"), call("call_2")),
        result(3, "call_1"),
        result(4, "call_2"),
    ]
    messages = build(placed(conversation, 4)).body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "system"]
    assert len(messages[2]["content"]) == 2


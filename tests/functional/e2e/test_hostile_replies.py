"""Replies a provider or gateway may send that once broke the turn (issue 8, items 6 and 7), through
the real `toolscope run`, `run --session` and `inspect`:

- tool arguments nested a thousand levels deep on an `anthropic-messages` route: the call gets an
  error result the model reads, every later request builds, `inspect` shows every route;
- a gateway that names every call `call_0`: each call gets an id of its own in the log and in every
  request sent later, each answered exactly once.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from typing import Any

import pytest

from tests.functional.e2e.harness import (
    KEY_ENV,
    TOOLSCOPE,
    RouteSpec,
    RunResult,
    Workbench,
    answer,
    calls,
    events_of,
    of_type,
    request_bodies,
    run,
    toolscope_run,
)
from tests.functional.llm.sse_server import Reply, SSEServer
from tests.support.oracles import assert_valid_anthropic_body, calls_and_answers

DEEP_ARGUMENTS = '{"path": ' + "[" * 1000 + "]" * 1000 + "}"


def toolscope_inspect(bench: Workbench, session: str) -> dict[str, Any]:
    result = subprocess.run(
        [str(TOOLSCOPE), "--lang", "en", "inspect", session, "--json"],
        cwd=bench.workspace, env=bench.environment(), capture_output=True, text=True, encoding="utf-8", timeout=60,
    )
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    return json.loads(result.stdout)


def assert_each_call_answered_once(body: dict[str, Any], dialect: str) -> None:
    """What real providers check: every call id in the history is unique and answered exactly once."""
    asked, answered = calls_and_answers(body, dialect)
    assert len(set(asked)) == len(asked), asked
    assert Counter(answered) == Counter(asked), (asked, answered)


# --- deeply nested arguments on the anthropic-messages wire --------------------------------------------


def anthropic_reply(*blocks: dict[str, Any], stop_reason: str) -> Reply:
    """A Messages stream: each block `{"text": …}` or `{"id", "name", "arguments"}`."""
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"message": {"id": "msg_1", "usage": {"input_tokens": 50, "output_tokens": 1}}}),
    ]
    for index, block in enumerate(blocks):
        if "text" in block:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": block["arguments"]}
        events += [
            ("content_block_start", {"index": index, "content_block": start}),
            ("content_block_delta", {"index": index, "delta": delta}),
            ("content_block_stop", {"index": index}),
        ]
    events += [
        ("message_delta", {"delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 9}}),
        ("message_stop", {}),
    ]
    body = "".join(f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n" for kind, fields in events)
    return Reply(pieces=[body.encode()])


def write_anthropic_config(bench: Workbench, base_url: str) -> None:
    route = {
        "id": "e2e/anthropic",
        "dialect": "anthropic-messages",
        "model": "e2e-model",
        "base_url": base_url,
        "api_key_env": KEY_ENV,
    }
    lines = ['[defaults]', 'route = "e2e/anthropic"', "", "[[routes]]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in route.items()]
    bench.config.write_text("\n".join(lines) + "\n", encoding="utf-8")


async def deep_arguments_then_two_turns(bench: Workbench) -> tuple[RunResult, RunResult, list[dict[str, Any]]]:
    replies = (
        anthropic_reply({"id": "toolu_deep", "name": "read_file", "arguments": DEEP_ARGUMENTS}, stop_reason="tool_use"),
        anthropic_reply({"text": "The arguments were too deep; I will not try again."}, stop_reason="end_turn"),
        anthropic_reply({"text": "Yes, this session still works."}, stop_reason="end_turn"),
    )
    async with SSEServer(*replies) as server:
        write_anthropic_config(bench, server.base_url)
        first = await toolscope_run(bench, "Read the file.")
        second = await toolscope_run(bench, "--session", bench.only_session().stem, "Still there?")
    return first, second, request_bodies(server)


@pytest.mark.timeout(120)
def test_deeply_nested_arguments_get_an_error_result_and_every_later_request_builds(bench: Workbench) -> None:
    first, second, bodies = run(deep_arguments_then_two_turns(bench))
    assert first.returncode == 0 and "Traceback" not in first.stderr, first.stderr
    assert second.returncode == 0 and "Traceback" not in second.stderr, second.stderr
    assert "this session still works" in second.stdout
    assert len(bodies) == 3

    # The model reads why its call failed, next to its call carried as an empty input.
    history = bodies[1]["messages"]
    assert history[1]["content"][0] == {"type": "tool_use", "id": "toolu_deep", "name": "read_file", "input": {}}
    (result,) = history[2]["content"]
    assert result["tool_use_id"] == "toolu_deep" and result["is_error"] is True
    assert "nesting deeper than 200 levels" in result["content"]
    for body in bodies:
        assert_valid_anthropic_body(body)

    # The log keeps the arguments exactly as the model sent them.
    (call,) = of_type(events_of(bench.only_session()), "tool/call")
    assert call.data.arguments == DEEP_ARGUMENTS

    report = toolscope_inspect(bench, bench.only_session().stem)
    for request in report["requests"]:
        for route_id, route in request["routes"].items():
            assert route["error"] is None and route["body"] is not None, route_id
            if route_id.startswith("anthropic/") or route_id == "e2e/anthropic":
                assert_valid_anthropic_body(route["body"])


# --- a gateway that always answers call_0 -----------------------------------------------------------------


async def call_0_every_time(bench: Workbench) -> tuple[RunResult, RunResult, list[dict[str, Any]]]:
    replies = (
        # Two calls of one reply with the same id, then a later step reusing it.
        calls(("call_0", "read_file", '{"path": "a.txt"}'), ("call_0", "read_file", '{"path": "b.txt"}')),
        calls(("call_0", "read_file", '{"path": "b.txt"}')),
        answer("a.txt says alpha, b.txt says beta."),
        # The next run of the same session: the gateway starts from call_0 again.
        calls(("call_0", "read_file", '{"path": "a.txt"}')),
        answer("Still alpha."),
    )
    async with SSEServer(*replies) as server:
        bench.write_config(server.base_url, [RouteSpec("e2e/deepseek")])
        first = await toolscope_run(bench, "Read a.txt and b.txt.")
        second = await toolscope_run(bench, "--session", bench.only_session().stem, "Once more?")
    return first, second, request_bodies(server)


@pytest.mark.timeout(120)
def test_repeated_call_ids_get_fresh_ones_used_in_the_log_and_every_later_request(bench: Workbench) -> None:
    (bench.workspace / "a.txt").write_text("alpha\n", encoding="utf-8")
    (bench.workspace / "b.txt").write_text("beta\n", encoding="utf-8")
    first, second, bodies = run(call_0_every_time(bench))
    assert first.returncode == 0 and "Traceback" not in first.stderr, first.stderr
    assert second.returncode == 0 and "Traceback" not in second.stderr, second.stderr
    assert "Still alpha." in second.stdout

    events = events_of(bench.only_session())
    in_messages = [part.call_id for e in of_type(events, "assistant/message") for part in e.data.content if part.type == "tool-call"]
    called = [e.data.call_id for e in of_type(events, "tool/call")]
    answered = {e.data.call_id: e.data for e in of_type(events, "tool/result")}
    assert len(in_messages) == 4 and len(set(in_messages)) == 4 and in_messages[0] == "call_0"
    assert called == in_messages and set(answered) == set(in_messages)
    # Each result is the one of its own call.
    contents = [answered[call_id].content for call_id in in_messages]
    assert ["alpha" in contents[0], "beta" in contents[1], "beta" in contents[2], "alpha" in contents[3]] == [True] * 4
    assert not any(result.is_error for result in answered.values())

    # What was sent after each reply: the logged ids, each answered exactly once.
    assert len(bodies) == 5
    for body in bodies:
        assert_each_call_answered_once(body, "deepseek-chat")
    assert [call["id"] for message in bodies[4]["messages"] for call in message.get("tool_calls", [])] == in_messages

    # And what every route of the catalog would send for each request of this session.
    report = toolscope_inspect(bench, bench.only_session().stem)
    dialects = {route.id: route.dialect for route in _catalog(bench)}
    for request in report["requests"]:
        for route_id, route in request["routes"].items():
            assert route["error"] is None, route_id
            assert_each_call_answered_once(route["body"], dialects[route_id])
            if dialects[route_id] == "anthropic-messages":
                assert_valid_anthropic_body(route["body"])


def _catalog(bench: Workbench) -> Any:
    from app.config import load_config
    from app.llm.routes import load_catalog

    return load_catalog(load_config(bench.config).routes)

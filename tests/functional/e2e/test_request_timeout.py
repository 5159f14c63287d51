"""A stream of nothing but SSE keep-alive comments (issue 8, item 14): the idle timeout rightly
never fires, so the route's `request_timeout` ends the request as `TIMEOUT`, on every networked
dialect, through the real `toolscope run` against the loopback server."""

from __future__ import annotations

import json

import pytest

from tests.functional.e2e.harness import KEY_ENV, Workbench, events_of, of_type, run, toolscope_run
from tests.functional.llm.sse_server import Reply, SSEServer

REQUEST_TIMEOUT = 1
COMMENTS_ONLY = Reply(pieces=[b": keep-alive\n\n"] * 40, delay=0.1)
"""Four seconds of comments (then the server closes): four times the request timeout."""

DIALECTS = {
    "deepseek-chat": ("e2e/deepseek", "addition-only", "/chat/completions"),
    "anthropic-messages": ("e2e/anthropic", "in-history", "/v1/messages"),
    "openai-sdk": ("e2e/openai", "none", "/chat/completions"),
}


def write_config(bench: Workbench, base_url: str, dialect: str) -> str:
    route_id, tool_update, _path = DIALECTS[dialect]
    table = {
        "id": route_id,
        "dialect": dialect,
        "model": "e2e-model",
        "base_url": base_url,
        "api_key_env": KEY_ENV,
        "tool_update": tool_update,
        "request_timeout": REQUEST_TIMEOUT,
        "max_retries": 0,
    }
    lines = ["[defaults]", f"route = {json.dumps(route_id)}", "", "[[routes]]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in table.items()]
    bench.config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return route_id


@pytest.mark.timeout(60)
@pytest.mark.parametrize("dialect", list(DIALECTS))
def test_keep_alive_comments_alone_end_at_the_request_timeout(bench: Workbench, dialect: str) -> None:
    async def scenario():
        async with SSEServer(COMMENTS_ONLY) as server:
            write_config(bench, server.base_url, dialect)
            result = await toolscope_run(bench, "Answer me.")
            return result, [received.path for received in server.received]

    result, paths = run(scenario(), limit=40)
    assert paths == [DIALECTS[dialect][2]]
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert f"did not finish within {REQUEST_TIMEOUT} s" in result.stderr
    events = events_of(bench.only_session())
    (error,) = of_type(events, "agent/request-error")
    assert error.data.failure.code == "TIMEOUT"
    assert of_type(events, "turn/end")[-1].data.reason == "error"


def test_request_timeout_must_be_a_positive_number(bench: Workbench) -> None:
    write_config(bench, "http://127.0.0.1:9", "deepseek-chat")
    bench.config.write_text(bench.config.read_text().replace("request_timeout = 1", 'request_timeout = "soon"'))
    result = run(toolscope_run(bench, "hi"))
    assert result.returncode == 2 and "'request_timeout' must be a positive number" in result.stderr

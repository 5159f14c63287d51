"""The offline model sees only the tools a provider would, and calls only those."""

from __future__ import annotations

import json
import os

import anyio
import httpx
import pytest
from markdown_it import MarkdownIt

from app.llm.offline.model import OfflineRequestError, available_tools, plan_reply
from app.llm.offline.transport import OfflineTransport
from app.tools.builtins import builtin_tools
from app.tools.file_tools import Workspace

BETA = ("anthropic-beta", "mid-conversation-tool-changes-2026-07-01")


def function(name: str, *, defer: bool = False, params: dict | None = None) -> dict:
    entry = {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": params
            or {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
    if defer:
        entry["defer_loading"] = True
    return entry


def blocks(*pairs: tuple[str, str]) -> dict:
    return {
        "role": "system",
        "content": [{"type": kind, "tool": {"type": "tool_reference", "name": name}} for kind, name in pairs],
    }


def test_deferred_tools_become_available_only_through_an_addition_block():
    body = {"tools": [function("read_file"), function("time", defer=True)], "messages": []}
    assert available_tools(body, beta=False).available == ["read_file"]
    body["messages"] = [{"role": "user", "content": "hi"}, blocks(("tool_addition", "time"))]
    assert available_tools(body, beta=True).available == ["read_file", "time"]


def test_removal_blocks_take_tools_away_in_message_order():
    body = {
        "tools": [function("read_file"), function("grep")],
        "messages": [
            {"role": "user", "content": "a"},
            blocks(("tool_removal", "grep")),
            {"role": "user", "content": "b"},
            blocks(("tool_addition", "grep"), ("tool_removal", "read_file")),
        ],
    }
    assert available_tools(body, beta=True).available == ["grep"]


def test_blocks_without_the_beta_header_or_for_undeclared_tools_are_refused():
    body = {"tools": [function("read_file")], "messages": [blocks(("tool_addition", "read_file"))]}
    with pytest.raises(OfflineRequestError, match="beta"):
        available_tools(body, beta=False)
    body["messages"] = [blocks(("tool_addition", "ghost"))]
    with pytest.raises(OfflineRequestError, match="ghost"):
        available_tools(body, beta=True)


def test_calls_a_named_tool_with_the_argument_mapped_to_its_string_parameter():
    body = {"tools": [function("read_file")], "messages": [{"role": "user", "content": "use read_file on README.md"}]}
    reply = plan_reply(body, beta=False)
    (call,) = reply.calls
    assert call.name == "read_file" and json.loads(call.arguments) == {"path": "README.md"}
    assert call.call_id == "call_1_1"


WRITE_FILE = function(
    "write_file",
    params={
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
)


def ask(text: str, *tools: dict):  # type: ignore[no-untyped-def]
    return plan_reply({"tools": list(tools), "messages": [{"role": "user", "content": text}]}, beta=False)


def test_a_tool_that_takes_more_gets_the_rest_after_with():
    (call,) = ask("use write_file on notes.txt with hello, with love", WRITE_FILE).calls
    assert json.loads(call.arguments) == {"path": "notes.txt", "content": "hello, with love"}
    (call,) = ask("use read_file on a with b.txt", function("read_file")).calls
    assert json.loads(call.arguments) == {"path": "a with b.txt"}


def test_a_request_that_leaves_out_what_the_tool_needs_is_answered_with_the_form_it_takes():
    """`use write_file on notes.txt`, the form the greeting suggested, ended in INVALID_ARGUMENTS."""
    reply = ask("use write_file on notes.txt", WRITE_FILE)
    assert reply.calls == ()
    assert "`use write_file on PATH with CONTENT`" in reply.text
    assert "use write_file on notes.txt with hello" in ask("hi", WRITE_FILE).text


def test_never_calls_a_tool_it_was_not_given():
    body = {
        "tools": [function("read_file"), function("time", defer=True)],
        "messages": [{"role": "user", "content": "use time for Europe/Paris"}],
    }
    reply = plan_reply(body, beta=False)
    assert reply.calls == ()
    assert "`time`" in reply.text and "not among my tools" in reply.text


def test_parallel_requests_and_json_arguments():
    body = {
        "tools": [function("read_file"), function("calc", params={"type": "object", "properties": {"expression": {"type": "string"}}})],
        "messages": [{"role": "user", "content": 'use read_file on a.txt and use calc with {"expression": "1+2"}'}],
    }
    calls = plan_reply(body, beta=False).calls
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("read_file", {"path": "a.txt"}),
        ("calc", {"expression": "1+2"}),
    ]


def test_summarises_tool_results():
    body = {
        "tools": [function("read_file")],
        "messages": [
            {"role": "user", "content": "use read_file on a.txt"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "line one\nline two"},
        ],
    }
    reply = plan_reply(body, beta=False)
    assert reply.calls == ()
    assert "`read_file`** returned 17 characters" in reply.text and "line two" in reply.text


def test_plain_questions_get_markdown_listing_the_visible_tools():
    body = {"tools": [function("read_file"), function("time", defer=True)], "messages": [{"role": "user", "content": "hello"}]}
    text = plan_reply(body, beta=False).text
    assert "offline demo model" in text and "`read_file`" in text and "`time`" not in text


def _inline_tokens(markdown: str) -> list:
    """What the chat's Markdown widget (markdown-it, CommonMark) makes of `markdown`, inline level."""
    return [child for token in MarkdownIt("commonmark").parse(markdown) for child in token.children or ()]


def test_names_and_paths_in_the_tool_listing_are_code_spans_not_emphasis(tmp_path):
    described = {"type": "function", "function": {"name": "odd`name", "description": "Reads *.py under src/my_pkg.", "parameters": {}}}
    tools = [
        {"type": "function", "function": {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)}}
        for tool in builtin_tools(Workspace(tmp_path))
    ]
    body = {"tools": [*tools, described], "messages": [{"role": "user", "content": "hello"}]}
    tokens = _inline_tokens(plan_reply(body, beta=False).text)
    assert not [token for token in tokens if token.type in ("strong_open", "em_open")][1:]  # only "offline demo model"
    spans = {token.content for token in tokens if token.type == "code_inline"}
    assert {"__pycache__", "node_modules", "search_text", "odd`name", "*.py", "src/my_pkg"} <= spans
    texts = "".join(token.content for token in tokens if token.type == "text")
    assert "__pycache__" not in texts and "directories end with '/'" in texts


def test_a_tool_result_with_a_fence_stays_inside_its_code_block():
    body = {
        "tools": [function("read_file")],
        "messages": [
            {"role": "user", "content": "use read_file on a.md"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "before\n```\n**not bold**\n````"},
        ],
    }
    tokens = MarkdownIt("commonmark").parse(plan_reply(body, beta=False).text)
    (block,) = [token for token in tokens if token.type == "fence"]
    assert block.content == "before\n```\n**not bold**\n````\n"


def test_replies_are_deterministic():
    body = {"tools": [function("read_file")], "messages": [{"role": "user", "content": "use read_file on x"}]}
    assert plan_reply(body, beta=False) == plan_reply(json.loads(json.dumps(body)), beta=False)


async def _post(transport: OfflineTransport, body: dict, headers: dict | None = None) -> httpx.Response:
    async with httpx.AsyncClient(transport=transport, base_url="http://offline.invalid") as client:
        response = await client.post("/chat/completions", json=body, headers=headers or {})
        await response.aread()
        return response


@pytest.mark.anyio
async def test_transport_streams_sse_chunks_with_usage_and_done():
    transport = OfflineTransport(BETA, delay=0)
    body = {"model": "offline-demo", "tools": [function("read_file")], "messages": [{"role": "user", "content": "use read_file on x"}]}
    response = await _post(transport, body)
    assert response.status_code == 200
    events = [line[6:] for line in response.text.split("\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    usage = chunks[-1]["usage"]
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert usage["prompt_cache_hit_tokens"] == 0
    calls = [d for c in chunks if c["choices"] for d in (c["choices"][0]["delta"].get("tool_calls") or [])]
    assert calls[0]["id"] == "call_1_1" and calls[0]["function"]["name"] == "read_file"
    assert "".join(d["function"]["arguments"] for d in calls) == '{"path": "x"}'


@pytest.mark.anyio
async def test_transport_reports_cache_hits_for_a_kept_prefix():
    transport = OfflineTransport(BETA, delay=0)
    first = {"tools": [function("read_file")], "messages": [{"role": "user", "content": "hello there"}]}
    await _post(transport, first)
    second = {"tools": first["tools"], "messages": first["messages"] + [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "again"}]}
    response = await _post(transport, second)
    usage = [json.loads(l[6:]) for l in response.text.split("\n") if l.startswith("data: {")][-1]["usage"]
    assert usage["prompt_cache_hit_tokens"] > 0


@pytest.mark.anyio
async def test_a_tool_declared_up_front_breaks_the_cache_of_every_message_after_the_tools():
    transport = OfflineTransport(BETA, delay=0)
    messages = [{"role": "user", "content": "hello there, " * 40}]
    await _post(transport, {"tools": [function("read_file")], "messages": messages})
    response = await _post(transport, {"tools": [function("read_file"), function("grep")], "messages": messages})
    usage = [json.loads(l[6:]) for l in response.text.split("\n") if l.startswith("data: {")][-1]["usage"]
    assert 0 < usage["prompt_cache_hit_tokens"] < usage["prompt_tokens"] // 4


@pytest.mark.anyio
async def test_transport_refuses_bad_requests_like_a_provider():
    transport = OfflineTransport(BETA, delay=0)
    body = {"tools": [function("read_file", defer=True)], "messages": [blocks(("tool_addition", "read_file"))]}
    refused = await _post(transport, body)
    assert refused.status_code == 400 and "beta" in refused.json()["error"]["message"]
    accepted = await _post(transport, body, {BETA[0]: BETA[1]})
    assert accepted.status_code == 200
    async with httpx.AsyncClient(transport=transport, base_url="http://offline.invalid") as client:
        assert (await client.post("/chat/completions", content=b"{not json")).status_code == 400
        assert (await client.get("/models")).status_code == 404


@pytest.mark.anyio
async def test_the_simulated_cache_outlives_the_transport_as_a_providers_does(tmp_path):
    cache = tmp_path / "cache" / "offline-prompt"
    messages = [{"role": "user", "content": "hello there, " * 40}]
    await _post(OfflineTransport(BETA, delay=0, cache_file=cache), {"tools": [function("read_file")], "messages": messages})
    assert cache.stat().st_mode & 0o777 == 0o600
    later = {"tools": [function("read_file")], "messages": [*messages, {"role": "user", "content": "again"}]}
    response = await _post(OfflineTransport(BETA, delay=0, cache_file=cache), later)
    usage = [json.loads(l[6:]) for l in response.text.split("\n") if l.startswith("data: {")][-1]["usage"]
    assert usage["prompt_cache_hit_tokens"] > usage["prompt_tokens"] // 2


@pytest.mark.anyio
async def test_a_fifo_or_foreign_text_in_the_cache_file_serves_nothing_and_never_blocks(tmp_path):
    body = {"tools": [function("read_file")], "messages": [{"role": "user", "content": "hello there, " * 40}]}
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    foreign = tmp_path / "foreign"
    foreign.write_bytes(b"\xff\xfe not a prompt")
    for path in (fifo, foreign):
        with anyio.fail_after(5):
            response = await _post(OfflineTransport(BETA, delay=0, cache_file=path), body)
        usage = [json.loads(l[6:]) for l in response.text.split("\n") if l.startswith("data: {")][-1]["usage"]
        assert usage["prompt_cache_hit_tokens"] == 0, path.name

"""Tool changes end to end (docs/architecture.md §7, §8; seed 000): a real MCP server swaps its tools in the
middle of a call, and the real `toolscope run` logs the change once, says so on stderr, and sends
it in the very next request the way each route can carry it."""

from __future__ import annotations

import json

import pytest

from app.agent.notices import tool_change_notice
from app.session.events import Event
from tests.functional.e2e.harness import (
    KEY,
    RouteSpec,
    RunResult,
    Workbench,
    answer,
    calls,
    declared,
    events_of,
    of_type,
    request_bodies,
    run,
    toolscope_run,
    update_blocks,
)
from tests.functional.llm.sse_server import SSEServer
from tests.support.mcp_http import http_tools_server

SWAP = "lab__swap_tools"
ADDED = "lab__late"
REMOVED = "lab__echo"
BETA_HEADER = "anthropic-beta"
BETA_VALUE = "mid-conversation-tool-changes-2026-07-01"
ROUTES = {
    "addition-only": RouteSpec("e2e/addition-only", tool_update="addition-only"),
    "in-history": RouteSpec("e2e/in-history", tool_update="in-history", system_prompt="in-history"),
    "none": RouteSpec("e2e/none", tool_update="none"),
}
RELIST_DELAY = 0.5
"""The MCP server answers `tools/list` this late after the swap, so the re-list is still in flight
when the swap call returns: a loop that did not settle would send the old tools one request late."""


pytestmark = pytest.mark.usefixtures("english")


TRANSPORTS = {  # name: (over HTTP, the server's arguments)
    "stdio": (False, ()),  # 2026-07-28: the change comes through subscriptions/listen
    "stdio-legacy": (False, ("--legacy",)),  # 2025-11-25: the change comes as a notification
    "http": (True, ()),
    "http-legacy": (True, ("--legacy",)),
}
TOKEN_ENV = "LAB_MCP_TOKEN"
TOKEN = "e2e-lab-token-5f1c"


async def swap_then_call_the_removed_tool(
    bench: Workbench, route: RouteSpec, transport: str = "stdio"
) -> tuple[RunResult, SSEServer]:
    replies = (
        calls(("call-swap", SWAP, "{}")),
        calls(("call-echo", REMOVED, '{"text": "still there?"}')),
        answer("The echo tool is gone, so I stopped there."),
    )
    prompt = ("--route", route.id, "Swap the lab tools, then echo a word.")
    async with SSEServer(*replies) as server:
        over_http, server_args = TRANSPORTS[transport]
        if not over_http:
            bench.write_config(server.base_url, list(ROUTES.values()), mcp_relist_delay=RELIST_DELAY, mcp_args=server_args)
            return await toolscope_run(bench, *prompt), server
        with http_tools_server(TOKEN, "--relist-delay", str(RELIST_DELAY), *server_args) as url:
            bench.write_config(server.base_url, list(ROUTES.values()))
            table = f"[mcp.servers.lab]\nurl = {json.dumps(url)}\nbearer_token_env = {json.dumps(TOKEN_ENV)}\n"
            bench.config.write_text(table + "\n" + bench.config.read_text(encoding="utf-8"), encoding="utf-8")
            return await toolscope_run(bench, *prompt, env={TOKEN_ENV: TOKEN}), server


def tool_names(header: Event) -> list[str]:
    return [tool.name for tool in header.data.tools]


def result_for(events: tuple[Event, ...], call_id: str) -> Event:
    (result,) = [e for e in of_type(events, "tool/result") if e.data.call_id == call_id]
    return result


def message_calling(events: tuple[Event, ...], call_id: str) -> Event:
    (message,) = [
        e
        for e in of_type(events, "assistant/message")
        if any(getattr(part, "call_id", None) == call_id for part in e.data.content)
    ]
    return message


@pytest.mark.slow(seconds=9)
@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("transport", "mode"),
    [
        *(("stdio", mode) for mode in ROUTES),
        *(
            (transport, mode)
            for transport in ("stdio-legacy", "http", "http-legacy")
            for mode in ("addition-only", "in-history")
        ),
    ],
)
def test_a_swap_during_a_call_is_logged_once_and_sent_in_the_next_request(
    bench: Workbench, transport: str, mode: str
) -> None:
    route = ROUTES[mode]
    result, server = run(swap_then_call_the_removed_tool(bench, route, transport))
    assert result.returncode == 0, result.stderr
    events = events_of(bench.only_session())

    # The log does not depend on the route: two headers, one developer message between them.
    headers = of_type(events, "request/header")
    assert [header.data.reason for header in headers] == ["initial", "change"]
    before, after = headers
    assert {SWAP, REMOVED} <= set(tool_names(before)) and ADDED not in tool_names(before)
    assert ADDED in tool_names(after) and REMOVED not in tool_names(after)
    (update,) = of_type(events, "developer/message")
    assert update.data.source == "tool-registry"
    assert [(a.name, a.header_seq) for a in update.data.additions] == [(ADDED, after.seq)]
    assert update.data.removals == (REMOVED,)
    assert events[update.seq - 1] is after, "the message belongs to the header just before it"

    # Not one request late: the changed header precedes the request that answers the swap.
    assert result_for(events, "call-swap").seq < after.seq < message_calling(events, "call-echo").seq

    # The removed tool fails as UNKNOWN_TOOL and the turn still completes.
    echo = result_for(events, "call-echo")
    assert echo.data.is_error and echo.data.error is not None and echo.data.error.code == "UNKNOWN_TOOL"
    assert [len(of_type(events, kind)) for kind in ("assistant/message", "agent/request-error")] == [3, 0]
    assert of_type(events, "turn/end")[-1].data.reason == "completed"

    # stderr carries the notice exactly as the chat words it, after the server's revision.
    over_http, server_args = TRANSPORTS[transport]
    revision = "2025-11-25" if "--legacy" in server_args else "2026-07-28"
    connected = f"MCP server “lab”: 8 tools, {'HTTP' if over_http else 'stdio'}, revision {revision}."
    assert connected in result.stderr
    assert "\n".join(tool_change_notice(update.data).lines()) in result.stderr

    # The wire: the first request knows nothing of the change; the second carries it per route.
    bodies = request_bodies(server)
    assert len(bodies) == 3
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in server.received)
    first, second = bodies[0], bodies[1]
    assert update_blocks(first) == [] and BETA_HEADER not in server.received[0].headers
    assert REMOVED in declared(first) and ADDED not in declared(first)
    beta_sent = server.received[1].headers.get(BETA_HEADER)
    tools = declared(second)
    if mode == "addition-only":
        assert update_blocks(second) == [("tool_addition", ADDED)]
        assert tools[ADDED].get("defer_loading") is True
        assert REMOVED not in tools
        assert beta_sent == BETA_VALUE
    elif mode == "in-history":
        assert update_blocks(second) == [("tool_addition", ADDED), ("tool_removal", REMOVED)]
        assert tools[ADDED].get("defer_loading") is True
        assert REMOVED in tools and "defer_loading" not in tools[REMOVED]
        assert beta_sent == BETA_VALUE
    else:
        assert update_blocks(second) == []
        assert ADDED in tools and "defer_loading" not in tools[ADDED]
        assert REMOVED not in tools
        assert beta_sent is None
    # The last request keeps the second's prefix and answers the call to the removed tool.
    last = bodies[2]
    assert last["tools"] == second["tools"]
    assert last["messages"][: len(second["messages"])] == second["messages"]
    assert [m["tool_call_id"] for m in last["messages"] if m["role"] == "tool"] == ["call-swap", "call-echo"]

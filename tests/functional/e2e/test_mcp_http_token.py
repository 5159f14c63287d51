"""A Streamable HTTP MCP server's bearer token end to end (issue 26 item 1, docs/security.md "The
MCP bearer token"): the real `toolscope run` against the loopback model and the real tools server
over HTTP. With the right token the server's mid-call tool change goes through (one changed
header, one developer message); with a wrong one the server is a problem in words. Either way no
run of the token reaches the log, stdout, stderr, `inspect` or an export.
"""

from __future__ import annotations

import json

import pytest

from tests.functional.e2e.harness import RouteSpec, Workbench, answer, calls, events_of, of_type, run, toolscope_run
from tests.functional.e2e.test_placeholder_keys import key_leaks, reports
from tests.functional.llm.sse_server import SSEServer
from tests.support.mcp_http import http_tools_server

TOKEN = "mcp-Qw7Rt2Yu9Io4Pa6Sd1Fg8Hj3Kl5Zx0Cv"
TOKEN_ENV = "LAB_MCP_TOKEN"

pytestmark = pytest.mark.usefixtures("english")


def configure(bench: Workbench, base_url: str, url: str) -> None:
    bench.write_config(base_url, [RouteSpec("e2e/local")])
    server = (
        f"[mcp.servers.lab]\nurl = {json.dumps(url)}\nbearer_token_env = {json.dumps(TOKEN_ENV)}\n"
        'headers = { X-Client = "toolscope-tests" }\n'
    )
    bench.config.write_text(bench.config.read_text(encoding="utf-8") + "\n" + server, encoding="utf-8")


@pytest.mark.slow(seconds=10)
@pytest.mark.timeout(90)
@pytest.mark.parametrize("sent", ["right", "wrong"])
def test_the_bearer_token_never_shows_and_a_refused_one_is_the_servers_problem(
    bench: Workbench, sent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = TOKEN if sent == "right" else TOKEN[::-1]
    replies = (
        calls(("swap", "lab__swap_tools", "{}")) if sent == "right" else answer("No lab today."),
        calls(("late", "lab__late", '{"n": 21}')),
        answer("Done: 42."),
    )

    async def scenario():
        with http_tools_server(TOKEN, "--relist-delay", "0.2") as url:
            async with SSEServer(*replies) as model:
                configure(bench, model.base_url, url)
                return await toolscope_run(bench, "Unlock the lab.", env={TOKEN_ENV: token}), url

    result, url = run(scenario())
    assert result.returncode == 0, result.stderr
    session = bench.only_session()
    events = events_of(session)
    if sent == "right":
        assert [header.data.reason for header in of_type(events, "request/header")] == ["initial", "change"]
        (update,) = of_type(events, "developer/message")
        assert [addition.name for addition in update.data.additions] == ["lab__late"]
        assert update.data.removals == ("lab__echo",)
        assert "Done: 42." in result.stdout
    else:
        assert "Traceback" not in result.stderr
        assert f"MCP server “lab” could not start. the server refused the credentials (HTTP 401): {url}" in result.stderr
        assert "No lab today." in result.stdout

    shown = {"log": session.read_text(encoding="utf-8"), "stdout": result.stdout, "stderr": result.stderr}
    monkeypatch.setenv(TOKEN_ENV, token)
    shown |= reports(bench, "sk-unused", session, monkeypatch)
    for where, output in shown.items():
        assert not key_leaks(token, output), f"the token leaked in {where}"

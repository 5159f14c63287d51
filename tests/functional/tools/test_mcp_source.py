"""MCP servers as tool sources, against real stdio servers built with the `mcp` SDK.

The servers live in `tests/support/mcp_servers/` and run under `sys.executable`. Starting one
costs the `mcp` import (about a second), so each test starts as few as it needs.
"""

from __future__ import annotations

import json
import socket
import string
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from app.tools.approval import AutoApprover
from app.tools.mcp_source import (
    McpServerSource,
    McpServerSpec,
    McpTimeouts,
    RestartPolicy,
    mcp_tool_name,
)
from app.tools.registry import ToolRegistry
from app.tools.source_state import ProblemKind, ServerState
from app.tools.tool import ToolContext, ToolErrorCode, ToolOutcome
from tests.support.mcp_http import http_tools_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

SERVERS = Path(__file__).resolve().parents[2] / "support" / "mcp_servers"
CONTEXT = ToolContext(AutoApprover(approve_all=False))
FAST = McpTimeouts(request=15, call=10)


def tools_server(name: str = "demo", *args: str, restart: bool = False) -> McpServerSpec:
    return McpServerSpec(name, sys.executable, [str(SERVERS / "tools_server.py"), *args], restart=restart)


def names(registry: ToolRegistry) -> list[str]:
    return [definition.name for definition in registry.definitions()]


async def call(registry: ToolRegistry, name: str, **arguments) -> ToolOutcome:
    return await registry.execute(name, json.dumps(arguments), CONTEXT)


def running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def wait_until(condition: Callable[[], bool], seconds: float = 20) -> None:
    with anyio.fail_after(seconds):
        while not condition():
            await anyio.sleep(0.02)


DEMO_TOOLS = [  # sorted by the server's own names, not in the order it lists them
    "demo__crash",
    "demo__echo",
    "demo__fail",
    mcp_tool_name("demo", "files.read"),
    "demo__picture",
    "demo__pid",
    "demo__slow",
    "demo__swap_tools",
]


@pytest.mark.slow(seconds=8)
async def test_tools_are_listed_callable_deterministic_and_their_process_ends_on_stop():
    registry = ToolRegistry(mcp_servers=[McpServerSource(tools_server(), timeouts=McpTimeouts(request=15, call=1))])
    async with registry:
        assert names(registry) == DEMO_TOOLS
        assert registry.mcp_servers()[0].state is ServerState.RUNNING
        echo = registry.definitions()[DEMO_TOOLS.index("demo__echo")]
        assert echo.description == "Return the text unchanged."
        assert echo.parameters["required"] == ["text"]
        assert registry.is_read_only("demo__echo") and not registry.is_read_only("demo__crash")

        assert (await call(registry, "demo__echo", text="hi there")).content == "hi there"
        assert (await call(registry, "demo__picture")).content == "a picture:\n[image: image/png, 66 bytes]"
        assert (await call(registry, mcp_tool_name("demo", "files.read"))).content == "read"

        failed = await call(registry, "demo__fail")
        assert failed.is_error and failed.error_code == ToolErrorCode.TOOL_FAILED
        assert "the disk is on fire" in failed.content

        invalid = await call(registry, "demo__echo", text=3)
        assert invalid.error_code == ToolErrorCode.INVALID_ARGUMENTS

        slow = await call(registry, "demo__slow", seconds=5)
        assert slow.error_code == ToolErrorCode.TOOL_TIMEOUT and "within 1 s" in slow.content

        pid = int((await call(registry, "demo__pid")).content)
        assert running(pid)

        # Switched off and on at run time: a new process, the very same definitions.
        definitions = registry.definitions()
        await registry.stop_mcp_server("demo")
        assert names(registry) == [] and registry.mcp_servers()[0].state is ServerState.STOPPED
        assert not running(pid)
        await registry.start_mcp_server("demo")
        assert registry.definitions() == definitions
        pid = int((await call(registry, "demo__pid")).content)
    assert names(registry) == []
    assert registry.mcp_servers()[0].state is ServerState.STOPPED
    assert not running(pid)
    assert registry.problems() == ()


async def test_a_server_that_reorders_its_list_declares_the_same_order_and_changes_nothing():
    """Every `tools/list` of this server rotates its tools; a `list_changed` that changes nothing
    else is then no tool change: the same definitions, in the same order, and no change announced
    (so no header, no developer message: the loop writes those only on a change)."""
    registry = ToolRegistry(mcp_servers=[McpServerSource(tools_server("demo", "--reorder"), timeouts=FAST)])
    notices: list[list[str]] = []
    registry.on_change(lambda definitions: notices.append([d.name for d in definitions]))
    async with registry:
        first = registry.definitions()
        assert names(registry) == ["demo__announce", *DEMO_TOOLS]
        notices.clear()
        for _ in range(3):
            assert (await call(registry, "demo__announce")).content == "announced"
            await registry.settle()
            assert registry.definitions() == first
        assert notices == []


async def test_a_change_announced_during_a_call_is_visible_after_settle():
    """The key guarantee: the server swaps tools and sends tools/list_changed during the call, and
    answers the re-list only 0.5 s later — settle() must wait for that re-list."""
    server = McpServerSource(tools_server("demo", "--relist-delay", "0.5"), timeouts=FAST)
    registry = ToolRegistry(mcp_servers=[server])
    notices: list[list[str]] = []
    registry.on_change(lambda definitions: notices.append([d.name for d in definitions]))
    async with registry:
        assert "demo__echo" in names(registry)
        outcome = await call(registry, "demo__swap_tools")
        assert outcome.content == "swapped"
        assert "demo__echo" in names(registry)  # the re-list is still in flight

        await registry.settle()
        assert "demo__echo" not in names(registry)
        assert "demo__late" in names(registry)
        assert notices[-1] == names(registry)

        assert (await call(registry, "demo__late", n=21)).content == "42"
        gone = await call(registry, "demo__echo", text="x")
        assert gone.error_code == ToolErrorCode.UNKNOWN_TOOL

        await registry.settle()  # nothing pending: returns at once
        with anyio.fail_after(1):
            await registry.settle()


async def test_a_server_that_exits_loses_its_tools_and_is_not_restarted_by_default():
    registry = ToolRegistry(mcp_servers=[McpServerSource(tools_server(), timeouts=FAST)])
    async with registry:
        crashed = await call(registry, "demo__crash")
        assert crashed.is_error and crashed.error_code == ToolErrorCode.TOOL_FAILED
        assert names(registry) == []  # removed before the failed call even returned
        assert registry.mcp_servers()[0].state is ServerState.STOPPED
        await wait_until(lambda: bool(registry.problems()))
        assert [problem.kind for problem in registry.problems()] == [ProblemKind.MCP_EXITED]
        assert (await call(registry, "demo__echo", text="x")).error_code == ToolErrorCode.UNKNOWN_TOOL


async def test_a_server_that_exits_is_restarted_with_backoff_when_configured():
    policy = RestartPolicy(max_attempts=3, initial_delay=0.05, max_delay=1.0, stable_after=600)
    source = McpServerSource(tools_server(restart=True), timeouts=FAST, restart_policy=policy)
    registry = ToolRegistry(mcp_servers=[source])
    async with registry:
        first_pid = int((await call(registry, "demo__pid")).content)
        await call(registry, "demo__crash")
        assert names(registry) == []
        assert registry.mcp_servers()[0].state is ServerState.RESTARTING

        await wait_until(lambda: registry.mcp_servers()[0].state is ServerState.RUNNING)
        assert names(registry) == DEMO_TOOLS
        second_pid = int((await call(registry, "demo__pid")).content)
        assert second_pid != first_pid and not running(first_pid)
        restarting = [p for p in registry.problems() if p.kind is ProblemKind.MCP_RESTARTING]
        assert [(p.attempt, p.max_attempts, p.delay) for p in restarting] == [(1, 3, 0.05)]
    assert not running(second_pid)


def test_restart_delays_double_up_to_the_cap():
    policy = RestartPolicy(initial_delay=1, max_delay=30)
    assert [policy.delay(n) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]


async def test_a_server_that_keeps_failing_is_given_up_after_bounded_attempts():
    spec = McpServerSpec("broken", sys.executable, [str(SERVERS / "crash_at_start.py")], restart=True)
    policy = RestartPolicy(max_attempts=2, initial_delay=0.01, max_delay=0.02)
    registry = ToolRegistry(mcp_servers=[McpServerSource(spec, timeouts=FAST, restart_policy=policy)])
    async with registry:
        await wait_until(lambda: registry.mcp_servers()[0].state is ServerState.FAILED)
        kinds = [problem.kind for problem in registry.problems()]
        assert kinds == [
            ProblemKind.MCP_START_FAILED,
            ProblemKind.MCP_RESTARTING,
            ProblemKind.MCP_START_FAILED,
            ProblemKind.MCP_RESTARTING,
            ProblemKind.MCP_START_FAILED,
            ProblemKind.MCP_GAVE_UP,
        ]
        assert [p.delay for p in registry.problems() if p.kind is ProblemKind.MCP_RESTARTING] == [0.01, 0.02]


async def test_servers_that_cannot_start_are_reported_and_the_rest_goes_on(tmp_path):
    missing = McpServerSpec("missing", str(tmp_path / "no-such-server"))
    crashing = McpServerSpec("crashing", sys.executable, [str(SERVERS / "crash_at_start.py")])
    registry = ToolRegistry(
        plugins=[],
        mcp_servers=[McpServerSource(missing, timeouts=FAST), McpServerSource(crashing, timeouts=FAST)],
    )
    reported = []
    registry.on_problem(reported.append)
    async with registry:
        assert [status.state for status in registry.mcp_servers()] == [ServerState.FAILED, ServerState.FAILED]
        assert names(registry) == []
    problems = {problem.source: problem for problem in reported}
    assert problems["missing"].kind is ProblemKind.MCP_START_FAILED
    assert "command not found" in problems["missing"].message()
    assert problems["crashing"].kind is ProblemKind.MCP_START_FAILED
    assert "fatal: cannot open the configuration file" in problems["crashing"].message()
    assert problems["crashing"].message().startswith("MCP server “crashing” could not start.")


def test_mcp_names_are_namespaced_sanitised_and_deterministic():
    assert mcp_tool_name("git", "status") == "git__status"
    dotted = mcp_tool_name("git", "files.read")
    assert dotted.startswith("git__files_read_") and len(dotted) == len("git__files_read_") + 8
    assert dotted != mcp_tool_name("git", "files_read") == "git__files_read"
    assert dotted == mcp_tool_name("git", "files.read")
    long = mcp_tool_name("server", "x" * 100)
    assert len(long) == 64 and long != mcp_tool_name("server", "x" * 101)
    for name in (dotted, long, mcp_tool_name("my server", "工具")):
        assert len(name) <= 64 and all(c.isascii() and (c.isalnum() or c in "_-") for c in name)


# --- transports and revisions


TOKEN = "ts-test-token-7f3a9c1e5b2d4086a1c3e5f7b9d1f3a5"
TOKEN_ENV = "TOOLSCOPE_TEST_MCP_TOKEN"
MODERN, LEGACY = "2026-07-28", "2025-11-25"


def http_spec(url: str, *, restart: bool = False) -> McpServerSpec:
    return McpServerSpec("demo", url=url, bearer_token_env=TOKEN_ENV, restart=restart)


async def a_change_during_a_call_is_visible_after_settle(source: McpServerSource) -> ToolRegistry:
    registry = ToolRegistry(mcp_servers=[source])
    async with registry:
        assert names(registry) == DEMO_TOOLS
        assert (await call(registry, "demo__swap_tools")).content == "swapped"
        await registry.settle()
        assert "demo__echo" not in names(registry) and "demo__late" in names(registry)
        assert (await call(registry, "demo__late", n=21)).content == "42"
        assert (await call(registry, "demo__echo", text="x")).error_code == ToolErrorCode.UNKNOWN_TOOL
        status = registry.mcp_servers()[0]
    assert registry.problems() == ()
    return status


@pytest.mark.parametrize(("args", "revision"), [((), MODERN), (("--legacy",), LEGACY)])
async def test_an_http_server_with_a_bearer_token_changes_tools_mid_call_on_each_revision(
    args, revision, monkeypatch
):
    """The server answers its re-list 0.5 s late; on 2026-07-28 the change is heard through
    `subscriptions/listen`, on the legacy revision through `notifications/tools/list_changed`."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with http_tools_server(TOKEN, "--relist-delay", "0.5", *args) as url:
        status = await a_change_during_a_call_is_visible_after_settle(McpServerSource(http_spec(url), timeouts=FAST))
    assert (status.transport, status.revision) == ("http", revision)


@pytest.mark.parametrize(("args", "revision"), [((), MODERN), (("--legacy",), LEGACY)])
async def test_a_stdio_server_changes_tools_mid_call_on_each_revision(args, revision):
    source = McpServerSource(tools_server("demo", "--relist-delay", "0.5", *args), timeouts=FAST)
    status = await a_change_during_a_call_is_visible_after_settle(source)
    assert (status.transport, status.revision) == ("stdio", revision)


async def test_a_refused_token_is_the_servers_problem_retried_with_backoff_and_never_shown(monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, "wrong-" + TOKEN)
    policy = RestartPolicy(max_attempts=1, initial_delay=0.01, max_delay=0.01)
    with http_tools_server(TOKEN) as url:
        source = McpServerSource(http_spec(url, restart=True), timeouts=FAST, restart_policy=policy)
        registry = ToolRegistry(mcp_servers=[source])
        async with registry:
            await wait_until(lambda: registry.mcp_servers()[0].state is ServerState.FAILED)
            assert names(registry) == []
    problems = registry.problems()
    assert [problem.kind for problem in problems] == [
        ProblemKind.MCP_START_FAILED,
        ProblemKind.MCP_RESTARTING,
        ProblemKind.MCP_START_FAILED,
        ProblemKind.MCP_GAVE_UP,
    ]
    refused = problems[0].message()
    assert refused == f"MCP server “demo” could not start. the server refused the credentials (HTTP 401): {url}"
    for problem in problems:
        assert TOKEN not in problem.message() and "Traceback" not in problem.message()


async def test_a_missing_token_variable_is_named_without_connecting(monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    registry = ToolRegistry(mcp_servers=[McpServerSource(http_spec("http://127.0.0.1:9/mcp"), timeouts=FAST)])
    async with registry:
        assert registry.mcp_servers()[0].state is ServerState.FAILED
    assert [problem.message() for problem in registry.problems()] == [
        f"MCP server “demo” could not start. the bearer token variable {TOKEN_ENV} is not set"
    ]


@pytest.fixture(scope="module")
def guarded_server_url() -> Iterator[str]:
    with http_tools_server(TOKEN) as url:
        yield url


TOKENS = st.text(alphabet=string.ascii_letters + string.digits + "-._~+/", min_size=16, max_size=64)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(token=TOKENS)
def test_property_a_refused_token_never_reaches_a_problem(guarded_server_url, token, monkeypatch) -> None:
    """The server quotes the header it got in its 401 answer; the problem still never holds it."""
    assume(token != TOKEN)
    monkeypatch.setenv(TOKEN_ENV, token)

    async def start() -> tuple[str, ...]:
        registry = ToolRegistry(mcp_servers=[McpServerSource(http_spec(guarded_server_url), timeouts=FAST)])
        async with registry:
            return tuple(problem.message() for problem in registry.problems())

    (message,) = anyio.run(start)
    assert "HTTP 401" in message and token not in message


async def test_a_server_quoting_the_accepted_token_split_across_lines_never_shows_a_run_of_it(monkeypatch):
    """The reason is the server's own text here: redacted as the API key is, not by exact match."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with http_tools_server(TOKEN, "--quote-accepted-token") as url:
        registry = ToolRegistry(mcp_servers=[McpServerSource(http_spec(url), timeouts=FAST)])
        async with registry:
            pass
    (message,) = (problem.message() for problem in registry.problems())
    assert message.startswith("MCP server “demo” could not start. unauthorized: Bearer") and "[redacted]" in message
    assert not any(TOKEN[start : start + 12] in "".join(message.split()) for start in range(len(TOKEN) - 11))


@pytest.mark.slow(seconds=12)
async def test_an_unreachable_or_silent_http_server_is_a_problem_in_words(monkeypatch):
    """The silent one costs about 10 s whatever the timeout: the SDK gives each of its two timed-out
    requests (the discover probe, then initialize) 5 s to write its cancellation."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()  # connections wait in the backlog, never answered
    urls = {name: f"http://127.0.0.1:{sock.getsockname()[1]}/mcp" for name, sock in (("closed", closed), ("silent", silent))}
    with closed, silent:
        registry = ToolRegistry(
            mcp_servers=[
                McpServerSource(McpServerSpec(name, url=url), timeouts=McpTimeouts(request=0.5, call=0.5))
                for name, url in urls.items()
            ]
        )
        async with registry:
            assert [status.state for status in registry.mcp_servers()] == [ServerState.FAILED] * 2
    messages = {problem.source: problem.message() for problem in registry.problems()}
    assert messages == {
        "closed": f"MCP server “closed” could not start. cannot connect: {urls['closed']}",
        "silent": "MCP server “silent” could not start. the server did not answer in time",
    }


async def test_a_2026_server_without_the_listen_stream_keeps_running_with_its_tools():
    """Its changes cannot be heard (2026-07-28 has no notification outside the stream), but a
    refused `subscriptions/listen` is no lost server: the tools stay and calls go on."""
    registry = ToolRegistry(mcp_servers=[McpServerSource(tools_server("demo", "--no-listen"), timeouts=FAST)])
    async with registry:
        assert (await call(registry, "demo__echo", text="still here")).content == "still here"
        await registry.settle()
        status = registry.mcp_servers()[0]
        assert (status.state, status.revision) == (ServerState.RUNNING, MODERN)
        assert names(registry) == DEMO_TOOLS
    assert registry.problems() == ()


@pytest.mark.parametrize("args", [(), ("--legacy",)], ids=["2026-07-28", "legacy"])
async def test_an_http_server_that_goes_away_loses_its_tools_and_is_retried(args, monkeypatch):
    """On 2026-07-28 the listen stream tells at once; on the legacy revision the next call does."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    policy = RestartPolicy(max_attempts=1, initial_delay=0.01, max_delay=0.01)
    with http_tools_server(TOKEN, *args) as url:
        registry = ToolRegistry(mcp_servers=[McpServerSource(http_spec(url, restart=True), timeouts=FAST, restart_policy=policy)])
        async with registry:
            assert names(registry) == DEMO_TOOLS
            await call(registry, "demo__crash")
            await wait_until(lambda: registry.mcp_servers()[0].state is ServerState.FAILED)
            assert names(registry) == []
    kinds = [problem.kind for problem in registry.problems()]
    assert kinds[0] is ProblemKind.MCP_EXITED and kinds[-1] is ProblemKind.MCP_GAVE_UP

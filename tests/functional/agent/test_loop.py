"""The agent loop over real session files, the real registry and the offline model (real adapter,
SSE framing, translator and projection); scripted model clients only where a failure mode is the
point of the test."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.agent.loop import Agent, AgentListener, CompactionError, CompactionSettings
from app.llm.deepseek.body import WireRequest, build_chat_request
from app.llm.dispatch import build_wire
from app.llm.errors import AUTH, MALFORMED_TOOL_CALL, SERVER, Failure
from app.llm.projection import project_request
from app.llm.routes import load_catalog
from app.llm.stream import BlockDelta, BlockEnd, BlockStart, Finish, StreamEvent, UsageReport
from app.session.session import Session
from app.session.store import SessionStore
from app.tools.approval import AutoApprover
from app.tools.builtins import builtin_tools
from app.tools.file_tools import Workspace
from app.tools.plugins import available_plugins
from app.tools.registry import ToolRegistry
from tests.functional.e2e.harness import answer as gateway_answer
from tests.functional.e2e.harness import calls as gateway_calls
from tests.functional.llm.sse_server import SSEServer
from tests.support.oracles import calls_and_answers

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "README.md").write_text("# Demo\n\nHello from the readme.\n")
    return root


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions")


def registry_for(workspace: Path, plugins: tuple[str, ...] = ()) -> ToolRegistry:
    return ToolRegistry(
        builtins=builtin_tools(Workspace(workspace)),
        plugins=available_plugins(),
        enabled_plugins=plugins,
    )


def agent_for(writer, registry, route="offline/demo", *, routes=(), **kwargs) -> Agent:  # type: ignore[no-untyped-def]
    """An agent on the catalog with `routes` overrides applied, never sleeping between retries."""
    kwargs.setdefault("sleep", _no_sleep)
    return Agent(
        writer,
        registry,
        load_catalog(routes),
        route,
        approver=AutoApprover(False),
        system="You are a test assistant.",
        **kwargs,
    )


async def _no_sleep(_seconds: float) -> None:
    await asyncio.sleep(0)


def types_of(path: Path) -> list[str]:
    return [event.type for event in Session.open(path).events]


# --- the offline model, end to end ---------------------------------------------------------------


async def test_a_plain_turn_logs_header_request_and_answer(store, workspace):
    with store.create(workspace) as writer:
        result = await agent_for(writer, registry_for(workspace)).run_turn("hello")
        path = writer.path
    assert result.reason == "completed" and "offline demo model" in result.text
    assert types_of(path) == [
        "turn/start", "user/message", "step/start", "request/header", "assistant/message", "step/end", "turn/end",
    ]


async def test_a_named_tool_is_called_and_its_result_summarised(store, workspace):
    with store.create(workspace) as writer:
        result = await agent_for(writer, registry_for(workspace)).run_turn("use read_file on README.md")
        view = writer.session.view()
    assert result.reason == "completed"
    assert "Hello from the readme." in result.text
    (turn,) = view.turns
    assert len(turn.steps) == 2
    call_step = turn.steps[0]
    call = call_step.requests[0].outcome.tool_calls[0]
    assert call.name == "read_file" and json.loads(call.arguments) == {"path": "README.md"}
    results = [item for item in call_step.items if type(item).__name__ == "ToolResultItem"]
    assert not results[0].is_error and "Hello from the readme." in results[0].content


async def test_header_is_appended_only_when_it_changes(store, workspace):
    registry = registry_for(workspace)
    with store.create(workspace) as writer:
        agent = agent_for(writer, registry)
        await agent.run_turn("hello")
        await agent.run_turn("hello again")
        assert types_of(writer.path).count("request/header") == 1
        registry.enable_plugin("calculator")
        await agent.run_turn("use calculate on 6*7")
        view = writer.session.view()
    headers = [i for i in view.items if type(i).__name__ == "HeaderItem"]
    assert [h.header.reason for h in headers] == ["initial", "change"]
    (context,) = [i for i in view.items if type(i).__name__ == "ContextItem"]
    assert [(a.name, a.header_seq) for a in context.message.additions] == [("calculate", headers[1].seq)]
    # The offline route receives the addition as an in-history block, so it can call the tool.
    assert "42" in view.turns[-1].steps[-1].requests[-1].outcome.text


async def test_a_removed_plugin_tool_is_not_offered_and_the_turn_goes_on(store, workspace):
    registry = registry_for(workspace, plugins=("calculator",))
    with store.create(workspace) as writer:
        agent = agent_for(writer, registry)
        await agent.run_turn("hello")
        registry.disable_plugin("calculator")
        result = await agent.run_turn("use calculate on 1+1")
    assert result.reason == "completed"
    assert "not among my tools" in result.text


async def test_continuing_a_session_appends_a_resume_header_only_if_something_changed(store, workspace):
    with store.create(workspace) as writer:
        await agent_for(writer, registry_for(workspace)).run_turn("hello")
        path = writer.path
    with store.open_writer(path) as writer:
        await agent_for(writer, registry_for(workspace)).run_turn("same tools")
    with store.open_writer(path) as writer:
        await agent_for(writer, registry_for(workspace, plugins=("clock",))).run_turn("more tools")
        view = writer.session.view()
    headers = [i.header.reason for i in view.items if type(i).__name__ == "HeaderItem"]
    assert headers == ["initial", "resume"]
    assert [t.number for t in view.turns] == [1, 2, 3]


async def test_compaction_writes_a_summary_and_starts_a_new_sequence(store, workspace):
    with store.create(workspace) as writer:
        agent = agent_for(writer, registry_for(workspace))
        await agent.run_turn("hello")
        summary = await agent.compact()
        await agent.run_turn("after compaction")
        view = writer.session.view()
    assert summary.sequence == 1 and summary.summary
    last = view.requests[-1]
    assert last.header.sequence == 1 and last.history.sequence == 1
    assert type(last.messages[0]).__name__ == "SummaryItem"


async def test_automatic_compaction_when_the_context_share_is_used(store, workspace):
    routes = [{"id": "offline/demo", "context_window": 100, "max_output_tokens": 50}]
    with store.create(workspace) as writer:
        agent = agent_for(
            writer,
            registry_for(workspace),
            routes=routes,
            compaction=CompactionSettings(auto=True, share=0.1),
        )
        await agent.run_turn("hello")
        await agent.run_turn("and again")
        types = types_of(writer.path)
    assert "compaction/summary" in types
    assert types.index("compaction/summary") > types.index("turn/end")


# --- scripted clients: failures, retries, cancellation, unknown tools -----------------------------


class ScriptedClient:
    """A model client whose replies are given as stream-event lists, one per request; the wire body
    is still built by the real deepseek-chat builder so tests can look at what would be sent."""

    def __init__(self, replies: list[list[StreamEvent]], *, stall_after: int | None = None) -> None:
        self.replies = list(replies)
        self.bodies: list[WireRequest] = []
        self.stall_after = stall_after

    def build(self, projected, header):  # type: ignore[no-untyped-def]
        return build_chat_request(projected, model="scripted", config=header.config)

    async def stream(self, wire: WireRequest) -> AsyncIterator[StreamEvent]:
        self.bodies.append(wire)
        for index, event in enumerate(self.replies.pop(0)):
            if self.stall_after is not None and index == self.stall_after:
                await asyncio.Event().wait()
            yield event

    async def aclose(self) -> None:
        pass


def text_reply(text: str) -> list[StreamEvent]:
    return [
        BlockStart(0, "text"),
        BlockDelta(0, text),
        BlockEnd(0),
        UsageReport(10, 5, 0, 0),
        Finish("stop"),
    ]


def call_reply(*calls: tuple[str, str, str]) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    for index, (call_id, name, arguments) in enumerate(calls):
        events += [
            BlockStart(index, "tool-call", call_id, name),
            BlockDelta(index, arguments),
            BlockEnd(index, call_id, name, arguments),
        ]
    return events + [Finish("tool-calls")]


def failure(code: str, **extra) -> list[StreamEvent]:  # type: ignore[no-untyped-def]
    return [Finish("error", Failure(code=code, message=f"{code} happened", **extra))]


def scripted_agent(writer, workspace, client, **kwargs):  # type: ignore[no-untyped-def]
    return agent_for(writer, registry_for(workspace), connect_route=lambda route: client, **kwargs)


async def test_retryable_failures_are_logged_and_retried_in_the_same_step(store, workspace):
    client = ScriptedClient([failure(SERVER), failure(MALFORMED_TOOL_CALL), text_reply("fine")])
    with store.create(workspace) as writer:
        result = await scripted_agent(writer, workspace, client).run_turn("hi")
        view = writer.session.view()
    assert result.reason == "completed" and result.text == "fine"
    assert [r.failed for r in view.requests] == [True, True, False]
    retries = [i for i in view.items if type(i).__name__ == "RetryItem"]
    assert [(r.retry, r.turn, r.step) for r in retries] == [(1, 1, 1), (2, 1, 1)]
    assert len([i for i in view.items if type(i).__name__ == "AssistantItem"]) == 1


async def test_a_non_retryable_failure_ends_the_turn_with_its_message(store, workspace):
    client = ScriptedClient([failure(AUTH, status=401)])
    with store.create(workspace) as writer:
        result = await scripted_agent(writer, workspace, client).run_turn("hi")
        view = writer.session.view()
    assert result.reason == "error" and result.failure.code == AUTH
    assert view.turns[0].end_reason == "error"
    assert not [i for i in view.items if type(i).__name__ == "RetryItem"]


async def test_retries_stop_at_the_policy_maximum(store, workspace):
    client = ScriptedClient([failure(SERVER)] * 3)
    with store.create(workspace) as writer:
        agent = scripted_agent(writer, workspace, client, routes=[{"id": "offline/demo", "max_retries": 2}])
        result = await agent.run_turn("hi")
    assert result.reason == "error" and len(client.bodies) == 3


async def test_a_call_to_an_unknown_tool_fails_as_unknown_tool_and_the_turn_goes_on(store, workspace):
    client = ScriptedClient([call_reply(("c1", "grep", "{}")), text_reply("recovered")])
    with store.create(workspace) as writer:
        result = await scripted_agent(writer, workspace, client).run_turn("hi")
        view = writer.session.view()
    result_item = [i for i in view.items if type(i).__name__ == "ToolResultItem"][0]
    assert result_item.is_error and result_item.error.code == "UNKNOWN_TOOL"
    assert result.reason == "completed" and result.text == "recovered"


async def test_read_only_calls_run_together_and_results_keep_model_order(store, workspace):
    (workspace / "a.txt").write_text("A")
    (workspace / "b.txt").write_text("B")
    client = ScriptedClient(
        [
            call_reply(("c1", "read_file", '{"path": "a.txt"}'), ("c2", "read_file", '{"path": "b.txt"}')),
            text_reply("done"),
        ]
    )
    with store.create(workspace) as writer:
        await scripted_agent(writer, workspace, client).run_turn("hi")
        types = types_of(writer.path)
        view = writer.session.view()
    step_types = types[types.index("assistant/message") : types.index("step/end")]
    assert step_types == ["assistant/message", "tool/call", "tool/call", "tool/result", "tool/result"]
    results = [i for i in view.items if type(i).__name__ == "ToolResultItem"]
    assert [(r.call_id, r.content.strip()) for r in results] == [("c1", "A"), ("c2", "B")]


async def test_write_file_is_refused_without_approval(store, workspace):
    client = ScriptedClient(
        [call_reply(("c1", "write_file", '{"path": "x.txt", "content": "x"}')), text_reply("ok")]
    )
    with store.create(workspace) as writer:
        await scripted_agent(writer, workspace, client).run_turn("hi")
        view = writer.session.view()
    result_item = [i for i in view.items if type(i).__name__ == "ToolResultItem"][0]
    assert result_item.error.code == "APPROVAL_DENIED" and not (workspace / "x.txt").exists()


async def test_cancelling_mid_stream_keeps_the_visible_text_and_closes_the_turn(store, workspace):
    reply = [BlockStart(0, "text"), BlockDelta(0, "partial answer"), BlockDelta(0, " more")]
    client = ScriptedClient([reply + [BlockEnd(0), Finish("stop")]], stall_after=3)
    with store.create(workspace) as writer:
        agent = scripted_agent(writer, workspace, client)
        task = asyncio.create_task(agent.run_turn("hi"))
        while not client.bodies:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        path = writer.path
    view = Session.open(path).view()
    (assistant,) = [i for i in view.items if type(i).__name__ == "AssistantItem"]
    assert assistant.interrupted and assistant.finish == "aborted"
    assert assistant.text == "partial answer more"
    assert view.turns[0].end_reason == "aborted"
    # Reopening for writing finds nothing to repair.
    with store.open_writer(path) as writer:
        assert writer.repaired == ()


async def test_cancelling_during_a_tool_answers_every_call(store, workspace):
    client = ScriptedClient(
        [call_reply(("c1", "run_command", '{"command": "sleep 5"}'), ("c2", "read_file", '{"path": "README.md"}'))]
    )

    class SlowApprover:
        async def approve(self, request):  # type: ignore[no-untyped-def]
            await asyncio.Event().wait()
            return True

    with store.create(workspace) as writer:
        agent = agent_for(writer, registry_for(workspace), connect_route=lambda route: client)
        agent.approver = SlowApprover()
        task = asyncio.create_task(agent.run_turn("hi"))
        while "tool/call" not in types_of(writer.path):
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        path = writer.path
    view = Session.open(path).view()
    results = {i.call_id: i for i in view.items if type(i).__name__ == "ToolResultItem"}
    assert results["c1"].error.code == "ABORTED"
    assert results["c2"].error.code == "TOOL_NOT_STARTED"
    assert view.turns[0].end_reason == "aborted"


async def test_compacting_an_empty_session_is_refused_and_logs_nothing(store, workspace):
    with store.create(workspace) as writer:
        agent = agent_for(writer, registry_for(workspace))
        with pytest.raises(CompactionError):
            await agent.compact()
        assert writer.session.events == ()


async def test_the_compaction_request_is_not_streamed_to_listeners(store, workspace):
    from app.agent.loop import AgentListener

    class Recorder(AgentListener):
        def __init__(self) -> None:
            self.streamed: list[object] = []
            self.logged: list[str] = []

        def stream_event(self, event) -> None:  # type: ignore[no-untyped-def]
            self.streamed.append(event)

        def event_appended(self, event) -> None:  # type: ignore[no-untyped-def]
            self.logged.append(event.type)

    listener = Recorder()
    with store.create(workspace) as writer:
        agent = agent_for(writer, registry_for(workspace), listener=listener)
        await agent.run_turn("hello")
        streamed = len(listener.streamed)
        await agent.compact()
    assert streamed > 0 and len(listener.streamed) == streamed
    assert listener.logged[-1] == "compaction/summary"


# --- a gateway that repeats call ids, over a loopback server ---------------------------------------


class StreamRecorder(AgentListener):
    def __init__(self) -> None:
        self.ends: list[BlockEnd] = []

    def stream_event(self, event: StreamEvent) -> None:
        if isinstance(event, BlockEnd) and event.call_id is not None:
            self.ends.append(event)


async def test_repeated_call_ids_are_replaced_before_they_are_shown_logged_or_sent(store, workspace, monkeypatch):
    """docs/architecture.md §4: a provider's repeated id (here `call_0` for every call) gets a fresh one, the
    same on the screen, in the log and in every later request, on every dialect's history."""
    monkeypatch.setenv("TOOLSCOPE_LOOP_KEY", "sk-loop-test")
    readme = '{"path": "README.md"}'
    replies = (
        gateway_calls(("call_0", "read_file", readme), ("call_0", "list_dir", '{"path": "."}')),
        gateway_calls(("call_0", "read_file", readme)),
        gateway_answer("Read it."),
    )
    route = {"id": "loop/gateway", "dialect": "deepseek-chat", "model": "m", "api_key_env": "TOOLSCOPE_LOOP_KEY"}
    recorder = StreamRecorder()
    async with SSEServer(*replies) as server:
        routes = [{**route, "base_url": server.base_url}]
        with store.create(workspace) as writer:
            agent = agent_for(writer, registry_for(workspace), "loop/gateway", routes=routes, listener=recorder)
            result = await agent.run_turn("read the readme twice")
            await agent.aclose()
            view = writer.session.view()
        bodies = [json.loads(received.body) for received in server.received]
    assert result.reason == "completed"
    logged = [call.call_id for request in view.requests if request.outcome for call in request.outcome.tool_calls]
    assert logged[0] == "call_0" and len(set(logged)) == len(logged) == 3
    assert [end.call_id for end in recorder.ends] == logged
    sent = [call["id"] for message in bodies[-1]["messages"] for call in message.get("tool_calls", [])]
    answered = [message["tool_call_id"] for message in bodies[-1]["messages"] if message["role"] == "tool"]
    assert sent == answered == logged
    for route in load_catalog():
        body = build_wire(project_request(view.requests[-1], route), route, {}).body
        assert calls_and_answers(body, route.dialect) == (logged, logged), route.id

"""Live DeepSeek tests (seed 000): what the real API does with a native tool addition and a removal on
the catalog's `deepseek/deepseek-flash` route. Skipped unless DEEPSEEK_API_KEY is set (conftest).

Every request takes the app's own path: the header rules (`LogBuilder`, which applies
`app.session.headers`), the real writer, `Session.view()` and the tool-history snapshot, then
`project_tool_updates`, the route's body builder (`build_chat_request`, via `connect(route).build`)
and its adapter. Each request is sent exactly once: no retry policy runs, so a failure is the API's.

Cache readings are printed (run with `-s`). DeepSeek stores a cached prefix at the end of each
request's input and has counted hits in 64-token units, so "covers the previous request's prefix"
means: at least its prompt tokens less one 64-token unit. The first user message carries a
run-unique id, long enough that a hit that size cannot come from the system prompt and tools that
every run shares. How to run and what it costs: docs/live-tests.md.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

import pytest

from app.llm.deepseek.body import WireRequest
from app.llm.dispatch import connect
from app.llm.errors import INVALID_REQUEST
from app.llm.prefix import prefix_kept
from app.llm.projection import project_tool_updates
from app.llm.routes import Route, load_catalog
from app.llm.stream import BlockDelta, BlockEnd, BlockStart, Finish, StreamEvent, UsageReport, check_stream
from app.session.events import AssistantMessageData, ReasoningContent, TextContent, ToolDefinition, Usage
from app.session.store import SessionWriter
from tests.support.builder import LogBuilder, tool

pytestmark = pytest.mark.live

ROUTE_ID = "deepseek/deepseek-flash"
CACHE_UNIT = 64
CACHE_PERSIST_SECONDS = 3.0
"""Pause after the warm-up request: DeepSeek writes its prefix cache to disk within seconds."""

SYSTEM = "You are the assistant in an automated API test. Follow the user's instructions exactly and keep every answer short."
UPDATED_SYSTEM = SYSTEM + " From now on, answer in English only."
READ_FILE = tool("read_file", "Read a text file from the workspace.", path={"type": "string", "description": "Relative path."})
GREP = tool("grep", "Search the workspace for a regular expression.", pattern={"type": "string"})
CLOCK_NOW = tool("clock_now", "Return the current date and time (UTC, ISO 8601).")
BASE_TOOLS = [READ_FILE, GREP]


def route_with(system_prompt: str) -> Route:
    """The catalog's route, through the config path, with the given system_prompt mode."""
    return load_catalog([{"id": ROUTE_ID, "system_prompt": system_prompt}]).get(ROUTE_ID)


def unique_opening() -> str:
    """The first user message: about 300 tokens no other run ever sent."""
    run_id = uuid.uuid4().hex
    codes = " ".join(f"{run_id}-{n:02d}" for n in range(12))
    return f"Test run {run_id}. Keep these reference codes in mind: {codes}. Reply with exactly: OK"


def covered_prefix(previous_input: int) -> int:
    """The least cache hit that covers a previous prompt of `previous_input` tokens."""
    return max(0, (previous_input // CACHE_UNIT - 1) * CACHE_UNIT)


@dataclass(frozen=True)
class LiveReply:
    wire: WireRequest
    finish: Finish
    usage: UsageReport | None
    reasoning: str
    text: str
    calls: list[str]

    @classmethod
    def of(cls, wire: WireRequest, events: list[StreamEvent]) -> LiveReply:
        finish = check_stream(events)
        kinds = {e.index: e.kind for e in events if isinstance(e, BlockStart)}

        def joined(kind: str) -> str:
            return "".join(e.text for e in events if isinstance(e, BlockDelta) and kinds[e.index] == kind)

        return cls(
            wire=wire,
            finish=finish,
            usage=next((e for e in events if isinstance(e, UsageReport)), None),
            reasoning=joined("reasoning"),
            text=joined("text"),
            calls=[e.name for e in events if isinstance(e, BlockEnd) and kinds[e.index] == "tool-call"],
        )

    def describe(self) -> str:
        if self.finish.failure is not None:
            return f"{self.finish.failure.code}: {self.finish.failure.message}"
        return f"{self.finish.reason}, text {self.text!r}, calls {self.calls}, usage {self.usage}"


class LiveConversation:
    """One session, one turn of one step per `send`, logged and projected as the agent loop does."""

    def __init__(self, writer: SessionWriter, route: Route) -> None:
        self.writer = writer
        self.route = route
        self.log = LogBuilder(writer.id)
        self.client = connect(route)

    async def send(self, text: str, tools: list[ToolDefinition], *, system: str = SYSTEM) -> LiveReply:
        self.log.start_turn(text)
        self.log.start_step()
        self.log.header_for(tools, system=system, route=self.route.id, model=self.route.model)
        self._write_new_events()
        session = self.writer.session
        view = session.view()
        projected = project_tool_updates(view.messages, session.tool_history(), self.route)
        wire = self.client.build(projected, view.current_header)
        reply = LiveReply.of(wire, [event async for event in self.client.stream(wire)])
        print(f"\n[{self.route.id} · system_prompt={self.route.system_prompt}] {reply.describe()}")
        if reply.finish.reason == "stop":
            self._record(reply)
        return reply

    def _record(self, reply: LiveReply) -> None:
        """The answer joins the history the next request replays (reasoning kept, as the loop keeps it)."""
        content = (ReasoningContent(text=reply.reasoning),) if reply.reasoning else ()
        usage = reply.usage
        self.log.emit(
            "assistant/message",
            AssistantMessageData(
                turn=self.log.turn_number,
                step=self.log.step_number,
                route=self.route.id,
                model=self.route.model,
                content=(*content, TextContent(text=reply.text)),
                usage=Usage(input=usage.input, output=usage.output, cache_read=usage.cache_read, reasoning=usage.reasoning)
                if usage is not None
                else None,
                finish="stop",
            ),
        )
        self.log.end_step()
        self.log.end_turn()
        self._write_new_events()

    def _write_new_events(self) -> None:
        for event in self.log.events[self.writer.next_seq :]:
            written = self.writer.append(event.type, event.data)
            assert written.seq == event.seq

    async def aclose(self) -> None:
        await self.client.aclose()


def converse(
    writer: SessionWriter, route: Route, scenario: Callable[[LiveConversation], Awaitable[list[LiveReply]]]
) -> list[LiveReply]:
    """Run `scenario(conversation)` on a fresh event loop, closing the client afterwards."""

    async def main() -> list[LiveReply]:
        conversation = LiveConversation(writer, route)
        try:
            return await scenario(conversation)
        finally:
            await conversation.aclose()

    return asyncio.run(main())


def assert_answered(reply: LiveReply) -> None:
    assert reply.finish.reason != "error", reply.describe()
    assert reply.usage is not None, "DeepSeek always reports usage when include_usage is set"


def assert_answered_in_text(reply: LiveReply) -> None:
    """A base request must end in plain text: the next request replays it as history."""
    assert_answered(reply)
    assert reply.finish.reason == "stop", reply.describe()


def assert_native_addition(reply: LiveReply, route: Route) -> None:
    """What makes the request a native addition: `clock_now` declared deferred, announced by a
    `tool_addition` block in a system message, and the beta header sent."""
    tools = {t["function"]["name"]: t for t in reply.wire.body["tools"]}
    assert tools["clock_now"].get("defer_loading") is True
    assert not any(tools[name].get("defer_loading") for name in ("read_file", "grep"))
    blocks = [
        block
        for message in reply.wire.body["messages"]
        if message["role"] == "system" and isinstance(message["content"], list)
        for block in message["content"]
    ]
    assert {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "clock_now"}} in blocks
    assert reply.wire.headers == {route.beta_header: route.tool_update_beta}


async def warm_up_then_add(conversation: LiveConversation, *, system: str) -> list[LiveReply]:
    """The base request (it also warms the cache), then the first request after adding `clock_now`."""
    base = await conversation.send(unique_opening(), BASE_TOOLS)
    assert_answered_in_text(base)
    await asyncio.sleep(CACHE_PERSIST_SECONDS)
    added = await conversation.send("Reply with exactly: OK", [*BASE_TOOLS, CLOCK_NOW], system=system)
    return [base, added]


def check_cache(base: LiveReply, added: LiveReply, *, expect_prefix_kept: bool) -> None:
    """Print the cache reading; when the wire prefix is kept and the provider cached at all, the hit
    must cover the base request's prompt, which no shared-prompt hit alone can."""
    prefix = prefix_kept(base.wire.body, added.wire.body, "deepseek-chat")
    assert prefix.kept is expect_prefix_kept, prefix
    floor = covered_prefix(base.usage.input)
    print(
        f"cache: base input {base.usage.input} (hit {base.usage.cache_read}) → after the addition "
        f"hit {added.usage.cache_read} of {added.usage.input}; base prefix covered from {floor} tokens; "
        f"wire prefix kept: {prefix.kept}" + ("" if prefix.kept else f" (first difference {prefix.first_difference})")
    )
    if not prefix.kept:
        return
    if added.usage.cache_read == 0:
        print("cache: the provider reported no cache hit at all (best effort); prefix assertion not applicable")
        return
    assert floor > base.usage.cache_read, "the run-unique opening must outweigh any shared-prompt hit"
    assert added.usage.cache_read >= floor


def test_first_request_after_a_native_addition_with_unchanged_instructions(writer):
    route = route_with("top")
    base, added = converse(writer, route, partial(warm_up_then_add, system=SYSTEM))
    assert_native_addition(added, route)
    assert_answered(added)
    check_cache(base, added, expect_prefix_kept=True)


@pytest.mark.parametrize(
    ("system_prompt", "prefix_kept_on_the_wire"),
    [
        ("top", False),  # the catalog's mode: the new text replaces the top system message
        ("in-history", True),  # the new text travels as a text block beside the addition block
    ],
)
def test_first_request_after_a_native_addition_with_an_instruction_update(
    writer, system_prompt, prefix_kept_on_the_wire
):
    route = route_with(system_prompt)
    base, added = converse(writer, route, partial(warm_up_then_add, system=UPDATED_SYSTEM))
    assert_native_addition(added, route)
    assert_answered(added)
    check_cache(base, added, expect_prefix_kept=prefix_kept_on_the_wire)


def test_a_removed_tool_is_no_longer_available(writer):
    """Availability only: after removing `clock_now`, asking for it must not produce a call to it
    (or the API refuses the request). Cache retention is not required here."""
    route = route_with("top")

    async def scenario(conversation: LiveConversation) -> list[LiveReply]:
        base = await conversation.send(unique_opening(), [READ_FILE, CLOCK_NOW])
        assert_answered_in_text(base)
        asked = await conversation.send(
            "Call the clock_now tool now, with no arguments. If you have no such tool, reply with exactly: NO TOOL",
            [READ_FILE],
        )
        return [base, asked]

    base, asked = converse(writer, route, scenario)
    assert "clock_now" in [t["function"]["name"] for t in base.wire.body["tools"]]
    assert [t["function"]["name"] for t in asked.wire.body["tools"]] == ["read_file"]
    assert asked.wire.headers == {}  # addition-only routes send no removal block
    if asked.finish.failure is not None:
        assert asked.finish.failure.code == INVALID_REQUEST, asked.describe()
    else:
        assert "clock_now" not in asked.calls, asked.describe()

"""Conformance: every recorded provider stream in `../shared/real_streams` (issue 9), replayed byte
for byte by a loopback server through the real adapter and the agent loop, gives the assistant
message an independent assembly gives.

The independent assembly is the official SDKs' own accumulators on the same bytes, read by a
separate SSE parser: `openai`'s `ChatCompletionStreamState` for chat completions, `anthropic`'s
`accumulate_event` for Messages. Where those SDKs are silent, docs/architecture.md §9 and docs/streaming.md
decide, and the oracle says so in one line each: a tool-call fragment without `index` is the
array position; calls are numbered in the order they first appear; a call's identity is taken once (seed 004), not concatenated; reasoning is the
first field that carries it; a call the output limit cut short keeps its raw arguments and is
answered `ARGUMENTS_CUT_OFF`, never run.

The corpus is other projects' data and is not copied here: the hand-written fixtures of each
behaviour are in the translator and adapter tests. Without the folder, the test skips and says why.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from anthropic.lib.streaming._messages import accumulate_event
from openai._models import construct_type
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from app.agent.loop import ARGUMENTS_CUT_OFF, Agent
from app.llm.routes import load_catalog
from app.session.events import ReasoningContent, TextContent, ToolCallContent
from app.session.session import Session
from app.session.store import SessionStore
from app.tools.approval import AutoApprover
from app.tools.builtins import builtin_tools
from app.tools.file_tools import Workspace
from app.tools.plugins import available_plugins
from app.tools.registry import ToolRegistry
from tests.functional.llm.sse_server import Reply, SSEServer, split_every

REPO = Path(__file__).resolve().parents[3]
CORPUS = Path(os.environ.get("TOOLSCOPE_REAL_STREAMS") or REPO / ".." / "shared" / "real_streams")
"""Beside the clone, as in CI; `TOOLSCOPE_REAL_STREAMS` names it for a checkout elsewhere (a git
worktree)."""
KEY_ENV = "TOOLSCOPE_CORPUS_KEY"

STREAMS = sorted(CORPUS.glob("*/*.sse")) if CORPUS.is_dir() else []
ABSENT = pytest.mark.skip(reason=f"no recorded corpus at {CORPUS} (shared/real_streams beside the clone)")

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# --- the independent assembly -------------------------------------------------------------------


@dataclass
class Message:
    """What the comparison looks at: text, reasoning, each call, the finish."""

    text: str = ""
    reasoning: str = ""
    calls: list[tuple[str, str, Any]] = field(default_factory=list)
    """(id, name, parsed arguments — or the raw text of a call cut off mid-arguments)."""
    cut_off: list[str] = field(default_factory=list)
    finish: str = "stop"


def sse_events(raw: bytes) -> list[tuple[str, str]]:
    """(event, data) per dispatched event, by the WHATWG rules: `:` lines are comments, `data`
    lines join with newlines, a blank line dispatches."""
    events, name, data = [], "", []
    for line in re.split(r"\r\n|\r|\n", raw.decode("utf-8")):
        if not line:
            if data:
                events.append((name, "\n".join(data)))
            name, data = "", []
            continue
        if line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if key == "event":
            name = value
        elif key == "data":
            data.append(value)
    return events


def arguments_of(text: str, cut_off: bool) -> Any:
    if cut_off:
        return text
    return json.loads(text) if text.strip() else {}


def chat_oracle(raw: bytes) -> Message:
    state: ChatCompletionStreamState = ChatCompletionStreamState()
    numbers: dict[int, int] = {}
    for _name, data in sse_events(raw):
        if data == "[DONE]":
            break
        chunk = json.loads(data)
        for choice in chunk.get("choices") or []:
            for position, fragment in enumerate((choice.get("delta") or {}).get("tool_calls") or []):
                if fragment.get("index") is None:
                    fragment["index"] = position  # the SDK needs one; docs/streaming.md: the position
                if fragment["index"] in numbers:  # seed 004: identity once, never concatenated
                    fragment.pop("id", None)
                    (fragment.get("function") or {}).pop("name", None)
                # The SDK counts calls from 0; Anthropic's gateway starts at 1: number them in order.
                fragment["index"] = numbers.setdefault(fragment["index"], len(numbers))
        # Built the SDK's lenient way, as its client does (Azure sends `"object": ""`).
        state.handle_chunk(construct_type(type_=ChatCompletionChunk, value=chunk))
    # The snapshot, not the final completion: that one raises at `length`, which is a case here.
    choice = state.current_completion_snapshot.choices[0]
    extra = choice.message.model_extra or {}
    details = "".join(d.get("text") or "" for d in extra.get("reasoning_details") or [] if d.get("type") == "reasoning.text")
    truncated = choice.finish_reason == "length"
    message = Message(
        text=choice.message.content or "",
        reasoning=extra.get("reasoning_content") or extra.get("reasoning") or details,
    )
    for call in choice.message.tool_calls or []:
        cut = truncated and not _is_object(call.function.arguments)
        message.calls.append((call.id, call.function.name, arguments_of(call.function.arguments, cut)))
        if cut:
            message.cut_off.append(call.id)
    message.finish = "max-tokens" if truncated else "tool-calls" if message.calls else "stop"
    return message


def anthropic_oracle(raw: bytes) -> Message:
    snapshot = None
    buffers: dict[int, bytes] = {}
    stopped: set[int] = set()
    for _name, data in sse_events(raw):
        event = json.loads(data)
        if event["type"] in ("ping", "error"):
            continue
        if event["type"] == "content_block_stop":
            stopped.add(event["index"])
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=buffers)
    assert snapshot is not None
    truncated = snapshot.stop_reason in ("max_tokens", "model_context_window_exceeded")
    message = Message()
    for index, block in enumerate(snapshot.content):
        if block.type == "text":
            message.text += block.text
        elif block.type == "thinking":
            message.reasoning += block.thinking
        elif block.type == "tool_use":  # server tools ran at the provider: not the loop's calls
            cut = truncated and index not in stopped
            raw_arguments = buffers.get(index, b"").decode("utf-8")
            arguments = raw_arguments if cut else (block.input if not raw_arguments else json.loads(raw_arguments))
            message.calls.append((block.id, block.name, arguments))
            if cut:
                message.cut_off.append(block.id)
    message.finish = "max-tokens" if truncated else "tool-calls" if message.calls else "stop"
    return message


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


# --- the replay -----------------------------------------------------------------------------------


def is_anthropic(path: Path) -> bool:
    return path.parent.name == "anthropic"


ANTHROPIC_ANSWER = b"".join(
    f"event: {json.loads(data)['type']}\ndata: {data}\n\n".encode()
    for data in (
        '{"type": "message_start", "message": {"id": "msg_x", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}}',
        '{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}',
        '{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Done."}}',
        '{"type": "content_block_stop", "index": 0}',
        '{"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}',
        '{"type": "message_stop"}',
    )
)
CHAT_ANSWER = b'data: {"choices": [{"index": 0, "delta": {"content": "Done."}, "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n'


async def replay(path: Path, tmp_path: Path) -> tuple[Message, list[Any]]:
    """`path` served as the reply to the first request (cut into pieces of odd sizes, so reads end
    mid-line and mid-character), a short answer to any later one; one turn of the agent loop."""
    raw = path.read_bytes()
    follow_up = ANTHROPIC_ANSWER if is_anthropic(path) else CHAT_ANSWER
    workspace = tmp_path / "work"
    workspace.mkdir()
    registry = ToolRegistry(builtins=builtin_tools(Workspace(workspace)), plugins=available_plugins(), enabled_plugins=())
    async with SSEServer(Reply(pieces=split_every(raw, [701, 13, 4093])), Reply(pieces=[follow_up]), Reply(pieces=[follow_up])) as server:
        route = {
            "id": "corpus/replay",
            "dialect": "anthropic-messages" if is_anthropic(path) else "deepseek-chat",
            "model": "recorded",
            "base_url": server.base_url,
            "api_key_env": KEY_ENV,
            "max_retries": 0,
        }
        with SessionStore(tmp_path / "sessions").create(workspace) as writer:
            agent = Agent(writer, registry, load_catalog([route]), "corpus/replay", approver=AutoApprover(False), system="replay")
            try:
                await asyncio.wait_for(agent.run_turn("replay"), 30)
            finally:
                await agent.aclose()
            session_path = writer.path
    events = Session.open(session_path).events
    (first, *_) = [event.data for event in events if event.type == "assistant/message"]
    logged = Message(finish=first.finish)
    for part in first.content:
        if isinstance(part, TextContent):
            logged.text += part.text
        elif isinstance(part, ReasoningContent):
            logged.reasoning += part.text
        elif isinstance(part, ToolCallContent):
            logged.calls.append((part.call_id, part.name, part.arguments))
    results = {event.data.call_id: event.data for event in events if event.type == "tool/result"}
    for call_id, _name, _arguments in logged.calls:
        if results[call_id].error is not None and results[call_id].error.code == ARGUMENTS_CUT_OFF:
            logged.cut_off.append(call_id)
    logged.calls = [(i, n, arguments_of(a, i in logged.cut_off)) for i, n, a in logged.calls]
    return logged, [event.type for event in events]


@pytest.mark.parametrize(
    "path", STREAMS or [pytest.param(None, marks=ABSENT)], ids=lambda p: f"{p.parent.name}/{p.stem}" if p else "absent"
)
async def test_a_recorded_stream_logs_what_an_independent_assembly_gives(path, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-corpus-replay")
    expected = (anthropic_oracle if is_anthropic(path) else chat_oracle)(path.read_bytes())
    logged, types = await replay(path, tmp_path)
    assert logged == expected
    assert types[-1] == "turn/end" and "agent/request-error" not in types


@pytest.mark.skipif(not CORPUS.is_dir(), reason=ABSENT.kwargs["reason"])
def test_every_file_the_corpus_readme_lists_is_replayed():
    listed = set(re.findall(r"^\| `([^`]+)` \|", (CORPUS / "README.md").read_text(encoding="utf-8"), re.M))
    assert len(listed) == 39
    assert {f"{p.parent.name}/{p.stem}" for p in STREAMS} == listed

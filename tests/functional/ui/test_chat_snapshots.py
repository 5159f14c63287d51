"""Pictures of the chat (pytest-textual-snapshot), driven by the pilot as a user would.

Fixed terminal size, the cursor still, the offline model or a loopback server, retry countdowns
on a frozen clock: nothing in a picture depends on time, ids or paths.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.ui.messages import PromptSubmitted
from app.ui.widgets.conversation.approval import ApprovalPrompt
from app.ui.widgets.conversation.context_node import ContextNode
from app.ui.widgets.conversation.failure_nodes import RetryNode
from tests.functional.ui.chat_support import SIZE, Bench, cursor_blink_off, freeze_countdowns, make_bench, send, until
from tests.support.failing_provider import failing_provider

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def bench(monkeypatch) -> Iterator[Bench]:
    """A bench whose workspace path has the same length wherever and however the test runs.

    The system prompt names the workspace and the status line counts its tokens; under
    `tmp_path` the count moved with the run number (`pytest-9` → `pytest-10`) and with xdist's
    `popen-gw0/` folder."""
    root = Path(tempfile.mkdtemp(dir="/tmp", prefix="toolscope-snapshot-"))
    try:
        yield make_bench(root, monkeypatch)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_empty_chat(bench, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await until(pilot, lambda: pilot.app.registry is not None)
        await cursor_blink_off(pilot)

    assert snap_compare(bench.app(), terminal_size=SIZE, run_before=run_before)


def test_streamed_answer_with_a_tool_call(bench, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await send(pilot, "use read_file on README.md")
        await cursor_blink_off(pilot)

    assert snap_compare(bench.app(), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("expanded", [False, True], ids=["collapsed", "expanded"])
def test_single_tool_context_node(bench, snap_compare, expanded) -> None:
    """Expanded: the tool's source and its description."""

    async def run_before(pilot) -> None:
        await send(pilot, "hello")
        pilot.app.registry.enable_plugin("calculator")
        await send(pilot, "use calculate on 6*7")
        if expanded:
            node = pilot.app.chat.query_one(ContextNode)
            node.scroll_visible(top=True, animate=False, immediate=True)
            await pilot.pause()
            await pilot.click(ContextNode)
            node.scroll_visible(top=True, animate=False, immediate=True)
        await cursor_blink_off(pilot)

    assert snap_compare(bench.app(), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("expanded", [False, True], ids=["collapsed", "expanded"])
def test_multi_tool_context_node(bench, snap_compare, expanded) -> None:
    async def run_before(pilot) -> None:
        await send(pilot, "hello")
        pilot.app.registry.enable_plugin("clock")
        pilot.app.registry.enable_plugin("calculator")
        await send(pilot, "thanks")
        node = pilot.app.chat.query_one(ContextNode)
        node.scroll_visible(top=True, animate=False, immediate=True)
        await pilot.pause()
        if expanded:
            await pilot.click(ContextNode)
        node.scroll_visible(top=True, animate=False, immediate=True)
        await cursor_blink_off(pilot)

    assert snap_compare(bench.app(), terminal_size=SIZE, run_before=run_before)


@pytest.fixture
def rate_limited() -> Iterator[str]:
    """A loopback provider that answers every request with 429 and `Retry-After: 3`."""
    with failing_provider(429, "Rate limit reached, slow down", "rate_limit", {"retry-after": "3"}) as base_url:
        yield base_url


async def _never_wake(_seconds: float) -> None:
    """The retry's wait, which this picture never gets past."""
    await asyncio.Event().wait()


def test_error_with_a_retry_countdown(bench, rate_limited, snap_compare) -> None:
    route = bench.loopback_route(rate_limited)

    async def run_before(pilot) -> None:
        freeze_countdowns(pilot.app)
        await send(pilot, "hello", wait=False)
        await until(pilot, lambda: pilot.app.chat.query(RetryNode))
        await cursor_blink_off(pilot)

    app = bench.app(route, sleep=_never_wake)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_prompts_queued_while_a_turn_waits_for_approval(bench, snap_compare) -> None:
    """The queue above the composer (issue 24 item 1): the turn is held by its approval prompt, so
    the picture does not depend on how far a stream got."""

    async def run_before(pilot) -> None:
        await until(pilot, lambda: pilot.app.registry is not None)
        pilot.app.chat.composer.load_text("use write_file on notes.txt with hello")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(pilot.app.focused, ApprovalPrompt))
        for prompt in ("use list_dir", "use read_file on README.md and then summarise it\nin two lines"):
            pilot.app.post_message(PromptSubmitted(prompt))
        await until(pilot, lambda: len(pilot.app.chat.queued.prompts) == 2)
        await cursor_blink_off(pilot)
        await pilot.pause()

    assert snap_compare(bench.app(), terminal_size=SIZE, run_before=run_before)


def test_approval_prompt_with_the_diff_of_a_file(bench, snap_compare) -> None:
    prompt = 'use write_file with {"path": "README.md", "content": "# Demo project\\n\\nRewritten by the model.\\n"}'

    async def run_before(pilot) -> None:
        await until(pilot, lambda: pilot.app.registry is not None)
        pilot.app.chat.composer.load_text(prompt)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(pilot.app.focused, ApprovalPrompt))
        await pilot.pause()

    assert snap_compare(bench.app(), terminal_size=SIZE, run_before=run_before)


def test_the_same_chat_in_chinese(bench, chinese, snap_compare) -> None:
    async def run_before(pilot) -> None:
        await send(pilot, "hello")
        pilot.app.registry.enable_plugin("clock")
        await send(pilot, "use read_file on README.md")
        await cursor_blink_off(pilot)

    assert snap_compare(bench.app(), terminal_size=SIZE, run_before=run_before)

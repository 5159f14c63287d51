"""The chat driven by its pilot as a user would: prompts, tools, changes, cancel, approval, resume.

The model is the embedded offline one (real adapter, translator and projection) or a loopback
HTTP server; tool sources are the real built-ins, plugins and an MCP stdio server.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from textual import events
from textual.widgets import Static

from app.llm.projection import project_request
from app.session.events import ToolRegistryUpdate
from app.session.view_items import ContextItem
from app.ui.screens.help import HelpScreen
from app.ui.widgets.conversation import approval
from app.ui.widgets.conversation.approval import ApprovalPrompt
from app.ui.widgets.conversation.assistant_message import AssistantBlock
from app.ui.widgets.conversation.context_node import ContextBlock, ContextNode
from app.ui.widgets.conversation.tool_call import ToolCallBlock
from tests.functional.e2e.harness import TOOLS_SERVER
from tests.functional.ui.chat_support import (
    SIZE,
    blocks,
    cursor_blink_off,
    make_bench,
    paste,
    run,
    send,
    settle,
    submit,
    type_text,
    until,
)
from tests.support.screen import screen_cells, screen_rows, text_in
from tests.support.told import Told, turn_ends

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def bench(tmp_path, monkeypatch):
    return make_bench(tmp_path, monkeypatch)


def test_a_prompt_gets_its_answer_with_the_tool_call(bench) -> None:
    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "use read_file on README.md")
            assert blocks(app) == ["UserBlock", "AssistantBlock", "ToolCallBlock", "AssistantBlock"]
            call = app.chat.conversation.blocks[2]
            assert isinstance(call, ToolCallBlock) and call.status == "done"
            assert call.call.name == "read_file" and "Demo project" in call.result.content
            answer = app.chat.conversation.blocks[-1]
            assert isinstance(answer, AssistantBlock) and "read_file" in answer.text
        session = bench.only_session()
        assert session.view().turns[-1].end_reason == "completed"

    run(scenario())


def test_switching_a_plugin_on_gives_the_next_request_a_header_a_developer_message_and_a_node(bench) -> None:
    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "hello")
            app.registry.enable_plugin("calculator")
            await send(pilot, "use calculate on 6*7")
            assert blocks(app)[:4] == ["UserBlock", "AssistantBlock", "UserBlock", "ContextBlock"]
            assert str(app.chat.query_one(ContextNode).query_one(".summary").render()) == "▶ Tool added: calculate"
            calls = [block for block in app.chat.conversation.blocks if isinstance(block, ToolCallBlock)]
            assert [(call.call.name, call.status) for call in calls] == [("calculate", "done")]

        view = bench.only_session().view()
        headers = [request.header for request in view.requests]
        assert "calculate" not in [tool.name for tool in headers[0].tools]
        assert "calculate" in [tool.name for tool in headers[1].tools]
        (context,) = [item for item in view.items if isinstance(item, ContextItem)]
        assert isinstance(context.message, ToolRegistryUpdate)
        assert [addition.name for addition in context.message.additions] == ["calculate"]
        second = view.requests[1]
        for route_id, expected in (
            ("deepseek/deepseek-flash", [("tool_addition", "calculate")]),  # addition-only
            ("offline/demo", [("tool_addition", "calculate")]),  # in-history
        ):
            projected = project_request(second, app.catalog.get(route_id))
            assert [(block.kind, block.name) for group in projected.groups for block in group.blocks] == expected
            assert "calculate" not in [d.tool.name for d in projected.declarations if not d.defer_loading]

    run(scenario())


def test_an_mcp_server_changing_its_tools_mid_turn_shows_the_context_node(bench) -> None:
    bench.config_lines += [
        "[mcp.servers.lab]",
        f"command = {sys.executable!r}".replace("'", '"'),
        f'args = ["{TOOLS_SERVER}", "--relist-delay", "0.2"]',
        "",
    ]

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "use lab__swap_tools")
            contexts = [block for block in app.chat.conversation.blocks if isinstance(block, ContextBlock)]
            assert len(contexts) == 1
            node = app.chat.query_one(ContextNode)
            assert str(node.query_one(".summary").render()) == "▶ 1 tool added, 1 removed"
            assert not node.has_class("-expanded")
            node.focus()
            await pilot.press("enter")
            await pilot.pause()
            shown = " ".join(text_in(screen_rows(app), node.content_region).split())
            # Each tool, its source, and its description (the removed one's from the header before).
            assert "+ lab__late · MCP server lab Appears after swap_tools; doubles n." in shown
            assert "− lab__echo · MCP server lab Return the text unchanged." in shown

    run(scenario())


def test_a_single_tool_context_node_expands_to_its_description_and_source(bench) -> None:
    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "hello")
            app.registry.enable_plugin("calculator")
            await send(pilot, "use calculate on 6*7")
            node = app.chat.query_one(ContextNode)
            node.scroll_visible(top=True, animate=False, immediate=True)
            await pilot.pause()
            assert text_in(screen_rows(app), node.content_region).split("\n")[0].strip() == "▶ Tool added: calculate"
            node.focus()
            await pilot.press("enter")
            await pilot.pause()
            shown = " ".join(text_in(screen_rows(app), node.content_region).split())
            assert shown.startswith("▼ Tool added: calculate + calculate · plugin calculator Evaluate an arithmetic expression")
            await pilot.press("enter")
            await pilot.pause()
            assert " ".join(text_in(screen_rows(app), node.content_region).split()) == "▶ Tool added: calculate"

    run(scenario())


def test_escape_cancels_a_running_turn_and_keeps_the_partial_answer(bench, monkeypatch) -> None:
    monkeypatch.setenv("TOOLSCOPE_OFFLINE_DELAY", "0.05")

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "tell me about the tools you have", wait=False)
            await until(pilot, lambda: any(isinstance(b, AssistantBlock) and b.text for b in app.chat.conversation.blocks))
            await pilot.press("escape")
            await until(pilot, lambda: not app.turn_running)
            await settle(pilot)
            assert blocks(app)[-1] == "TurnEndBlock"
            answer = app.chat.conversation.blocks[-2]
            assert isinstance(answer, AssistantBlock) and answer.interrupted and answer.text
        view = bench.only_session().view()
        assert view.turns[-1].end_reason == "aborted"
        (reply,) = [request.outcome for request in view.requests]
        assert reply.interrupted and reply.finish == "aborted"

    run(scenario())


def test_the_greetings_write_file_form_reaches_the_approval_prompt_and_its_diff(bench) -> None:
    """`use write_file on notes.txt`, as the greeting suggested, failed with INVALID_ARGUMENTS:
    a new user never saw an approval prompt (issue 24, item 10)."""

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "use write_file on notes.txt with hello", wait=False)
            await until(pilot, lambda: isinstance(app.focused, ApprovalPrompt))
            prompt = app.chat.query_one(ApprovalPrompt)
            summary, detail = (str(prompt.query_one(part).render()) for part in (".summary", ".detail"))
            assert "write_file" in summary and "notes.txt" in summary, summary
            assert "hello" in detail, detail
            await pilot.press("y")
            await until(pilot, lambda: not app.turn_running)
        assert (bench.workspace / "notes.txt").read_text() == "hello"

    run(scenario())


@pytest.mark.parametrize(("key", "status", "ran"), [("y", "done", True), ("n", "failed", False)])
def test_a_command_waits_for_approval_and_runs_only_when_allowed(bench, key, status, ran) -> None:
    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "use run_command on touch made-by-tool", wait=False)
            await until(pilot, lambda: isinstance(app.focused, ApprovalPrompt))
            prompt = app.chat.query_one(ApprovalPrompt)
            assert "touch made-by-tool" in str(prompt.query_one(".detail").render())
            await pilot.press(key)
            await until(pilot, lambda: not app.turn_running)
            await settle(pilot)
            assert not app.chat.query(ApprovalPrompt)
            (call,) = [b for b in app.chat.conversation.blocks if isinstance(b, ToolCallBlock)]
            assert call.status == status
            if not ran:
                assert call.result.error.code == "APPROVAL_DENIED"
        assert (bench.workspace / "made-by-tool").exists() == ran

    run(scenario())


def test_keys_typed_as_a_prompt_appears_do_not_answer_it_and_a_click_does(bench, monkeypatch) -> None:
    """The prompt takes the focus from the composer: letters typed for the next prompt (`a` allows
    every later command) answer nothing until it has been on screen for `ANSWER_DELAY`."""
    monkeypatch.setattr(approval, "ANSWER_DELAY", 3600.0)

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "use run_command on touch typed-ahead", wait=False)
            await until(pilot, lambda: isinstance(app.focused, ApprovalPrompt))
            for key in ("a", "y", "n"):
                await pilot.press(key)
            await pilot.pause(0.2)
            prompt = app.chat.query_one(ApprovalPrompt)
            assert not prompt.block.decision.done() and app.turn_running
            await pilot.click("#once")
            await until(pilot, lambda: not app.turn_running)
        assert (bench.workspace / "typed-ahead").exists()

    run(scenario())


def test_allow_for_this_session_asks_once_per_tool_and_the_mouse_works_too(bench) -> None:
    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "use run_command on touch first", wait=False)
            await until(pilot, lambda: isinstance(app.focused, ApprovalPrompt))
            await pilot.click("#session")
            await until(pilot, lambda: not app.turn_running)
            await send(pilot, "use run_command on touch second")
            assert not app.chat.query(ApprovalPrompt)
        assert (bench.workspace / "first").exists() and (bench.workspace / "second").exists()

    run(scenario())


def test_overwriting_a_file_shows_the_diff_before_it_is_allowed(bench) -> None:
    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            prompt = 'use write_file with {"path": "README.md", "content": "# Demo project\\n\\nRewritten.\\n"}'
            app.chat.composer.load_text(prompt)
            await until(pilot, lambda: app.registry is not None)
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.focused, ApprovalPrompt))
            detail = str(app.chat.query_one(ApprovalPrompt).query_one(".detail").render())
            assert "-A small workspace for the chat tests." in detail and "+Rewritten." in detail
            await pilot.press("n")
            await until(pilot, lambda: not app.turn_running)
        assert "A small workspace" in (bench.workspace / "README.md").read_text()

    run(scenario())


def _shown(app, widget) -> bool:
    """Whether `widget` lies wholly within the conversation's visible region."""
    view = app.chat.conversation.region
    return view.contains_region(widget.region) and widget.region.height > 0


def test_each_approval_prompt_is_shown_at_the_end_of_a_conversation_taller_than_the_view(bench) -> None:
    """Focusing a prompt scrolled the conversation to where Textual thought it was before its layout
    and released the anchor: the second prompt of a long conversation was waiting off screen."""

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "use read_file on README.md")
            await send(pilot, "use read_file on README.md")
            for content in ("one\\n", "two\\n"):
                app.chat.composer.load_text(f'use write_file with {{"path": "notes.txt", "content": "{content}"}}')
                await pilot.press("enter")
                await until(pilot, lambda: isinstance(app.focused, ApprovalPrompt))
                prompt = app.chat.query_one(ApprovalPrompt)
                await until(pilot, lambda: prompt.region.height > 0)
                await pilot.pause(0.1)  # the turn waits for the answer: no settling of its worker
                conversation = app.chat.conversation
                assert conversation.max_scroll_y > 0 and conversation.following
                assert _shown(app, prompt)
                await pilot.press("y")
                await until(pilot, lambda: not app.turn_running)
                await settle(pilot)
                assert app.chat.conversation.following
        assert (bench.workspace / "notes.txt").read_text() == "two\n"

    run(scenario())


def test_a_prompt_sent_while_scrolled_up_brings_the_view_back_to_the_end(bench) -> None:
    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "use read_file on README.md")
            await send(pilot, "use read_file on README.md")
            conversation = app.chat.conversation
            conversation.scroll_home(animate=False, immediate=True)
            await pilot.pause()
            assert not conversation.following
            await send(pilot, "hello")
            assert conversation.following and conversation.scroll_y == conversation.max_scroll_y
            assert _shown(app, conversation.blocks[-1].widget)

    run(scenario())


def _rendering(app) -> list[tuple[object, ...]]:
    """Where the conversation is scrolled, then each block's widget: class, texts and heights."""
    conversation = app.chat.conversation
    children = [type(child).__name__ for child in conversation.children]
    shown: list[tuple[object, ...]] = [("scroll", conversation.scroll_y, conversation.virtual_size, children)]
    for block in conversation.blocks:
        widget = block.widget
        assert widget is not None
        texts = [str(node.render()) for node in widget.walk_children(with_self=True) if isinstance(node, Static)]
        heights = [child.region.height for child in widget.children]
        shown.append((type(widget).__name__, "\n".join(texts), widget.region.height, heights))
    return shown




def test_a_resumed_session_renders_as_it_did_live(bench) -> None:
    async def scenario() -> tuple[list[tuple[object, ...]], list[tuple[str, str]], Path]:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "use read_file on README.md")
            app.registry.enable_plugin("clock")
            await send(pilot, "use run_command on echo hi", wait=False)
            await until(pilot, lambda: isinstance(app.focused, ApprovalPrompt))
            await pilot.press("n")
            await until(pilot, lambda: not app.turn_running)
            await settle(pilot)
            live = _rendering(app)
            await cursor_blink_off(pilot)
            live_picture = screen_cells(app)
        (path,) = bench.sessions()
        return live, live_picture, path

    live, live_picture, path = run(scenario())

    async def resumed() -> tuple[list[tuple[object, ...]], list[tuple[str, str]]]:
        app = bench.app(session=path)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.writer is not None and app.chat.conversation.blocks)
            await settle(pilot)
            await cursor_blink_off(pilot)
            return _rendering(app), screen_cells(app)

    again, again_picture = run(resumed())
    assert again == live
    assert again_picture == live_picture

    kinds = [entry[0] for entry in live]
    assert {"UserMessage", "AssistantMessage", "ToolCallView", "ContextNode"} <= set(kinds)


def test_the_footer_is_built_again_only_when_the_keys_it_shows_change(bench) -> None:
    """Textual rebuilds the footer whenever the screen's bindings may have changed (a focus moving,
    widgets mounted); a rebuild that would show the same keys is skipped, one that would not is not."""
    from textual.widget import Widget

    from app.ui.footer import LocalizedFooter

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.registry is not None)
            await settle(pilot)
            footer = app.chat.query_one(LocalizedFooter)

            def entries() -> list[Widget]:
                return list(footer.walk_children())

            def shown() -> str:
                return text_in(screen_rows(app), footer.region)

            built, built_text = entries(), shown()
            assert "Send" in built_text  # the composer's Enter, shown while it has the focus
            app.chat.refresh_bindings()
            await settle(pilot)
            assert entries() == built  # the same widgets: nothing was built again
            app.set_focus(None)  # the composer's keys go from the footer
            await settle(pilot)
            assert "Send" not in shown()
            app.chat.composer.focus()
            await settle(pilot)
            assert shown() == built_text
            assert not set(entries()) & set(built)

    run(scenario())


def test_prompt_history_survives_the_session_and_up_recalls_it(bench) -> None:
    async def first() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "hello")

    run(first())

    async def second() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.chat.composer.prompt_history.prompts)
            await pilot.press("up")
            assert app.chat.composer.text == "hello"
            await pilot.press("down")
            assert app.chat.composer.text == ""

    run(second())


def test_ctrl_j_and_shift_enter_add_lines_and_enter_sends(bench) -> None:
    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await type_text(pilot, "one")
            await pilot.press("ctrl+j")
            await type_text(pilot, "two")
            await pilot.press("shift+enter")
            await type_text(pilot, "three")
            assert app.chat.composer.text == "one\ntwo\nthree"
            await until(pilot, lambda: app.registry is not None)
            ended = turn_ends(app)
            await pilot.press("enter")
            await until(pilot, lambda: ended() and not app.turn_running)
            await settle(pilot)
            assert app.chat.composer.text == ""
        (user,) = [item for item in bench.only_session().view().items if type(item).__name__ == "UserItem"]
        assert user.text == "one\ntwo\nthree"

    run(scenario())


def test_keys_arriving_in_one_burst_with_their_enter_are_sent(bench) -> None:
    """As a terminal delivers what was typed while the chat started (or what tmux sends): the
    keys and their Enter in one read, before the composer has handled the first of them."""

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.registry is not None)
            ended = turn_ends(app)
            for character in "hello":  # on the app's queue at once, as a driver puts one read
                app.post_message(events.Key(character, character))
            app.post_message(events.Key("enter", "\r"))
            await until(pilot, lambda: ended() and not app.turn_running)
            await settle(pilot)
            assert app.chat.composer.text == ""
        (user,) = [item for item in bench.only_session().view().items if type(item).__name__ == "UserItem"]
        assert user.text == "hello"

    run(scenario())


@pytest.mark.parametrize("newline", [("ctrl+j", "\n"), ("shift+enter", None)])
def test_a_new_line_and_the_letter_after_it_in_one_read_break_the_line_at_the_cursor(bench, newline) -> None:
    """tmux (and a fast typist) sends Ctrl+J and the next letter in one read: the line breaks where
    the cursor is and the letter follows (issue 24 item 11: the letter went in before the break,
    which ran only once its key had bubbled up to the app)."""
    key, character = newline

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await type_text(pilot, "hello world")
            await pilot.press("home", *["right"] * 5)
            app.post_message(events.Key(key, character))  # both on the app's queue at once
            app.post_message(events.Key("x", "x"))
            await until(pilot, lambda: "x" in app.chat.composer.text and "\n" in app.chat.composer.text)
            assert app.chat.composer.text == "hello\nx world"
            assert app.chat.composer.cursor_location == (1, 1)

    run(scenario())


def test_slash_lists_matching_commands_and_enter_runs_the_highlighted_one(bench) -> None:
    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await type_text(pilot, "hello")
            assert not app.chat.query("#completions")  # mounted with the first slash, not at start
            await pilot.press(*["backspace"] * 5)
            await type_text(pilot, "/he")
            completions = app.chat.query_one("#completions")
            assert completions.parent is app.chat and app.chat.children.index(completions) == (
                app.chat.children.index(app.chat.composer) - 1
            )  # just above the composer, where the list always was
            assert completions.visible
            assert [option.id for option in completions.options] == ["/help"]
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, HelpScreen))
            assert not bench.sessions()

    run(scenario())


def test_a_large_paste_is_one_placeholder_line_and_is_sent_whole(bench) -> None:
    from app.ui.widgets.composer import LARGE_PASTE_LINES

    # Ten times past the line bound (and the 4,000 characters): the paste's size changes nothing in
    # the composer's path, while each line sent costs the conversation's user block its layout.
    lines = 10 * LARGE_PASTE_LINES
    text = "\n".join(f"line {n} " + "x" * 60 for n in range(lines))

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await type_text(pilot, "count these: ")
            await paste(pilot, text)
            await until(pilot, lambda: "Pasted" in app.chat.composer.text)
            assert app.chat.composer.text == f"count these: [Pasted text #1: {lines} lines]"
            await submit(pilot)
        (user,) = [item for item in bench.only_session().view().items if type(item).__name__ == "UserItem"]
        assert user.text == "count these: " + text

    run(scenario())


@pytest.mark.parametrize("lines", [3, 200])
def test_line_breaks_pasted_as_cr_are_line_breaks(bench, lines: int) -> None:
    """tmux and xterm send a pasted text's line breaks as Enter's CR (CRLF from some sources): the
    prompt gets lines, short paste or large (placeholder) alike, and so does the session."""

    pasted = "\r".join(f"line {n}" for n in range(lines - 1)) + f"\r\nline {lines - 1}\r"  # a final break too
    expected = "\n".join(f"line {n}" for n in range(lines)) + "\n"

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await paste(pilot, pasted)
            if lines > 100:
                assert app.chat.composer.text == f"[Pasted text #1: {lines} lines]"
            else:
                assert app.chat.composer.text == expected
            await submit(pilot)
        (user,) = [item for item in bench.only_session().view().items if type(item).__name__ == "UserItem"]
        assert user.text == expected

    run(scenario())


def test_a_long_message_sent_shows_its_first_lines_until_expanded_and_at_most_a_bound(bench, monkeypatch) -> None:
    """A large paste is sent whole, but its block shows its first lines; expanded, at most
    `SHOWN_LINES` (laying out every line of a 50,000-line paste froze the chat for seconds)."""
    from textual.widgets import Static

    from app.ui.widgets.conversation import user_message
    from app.ui.widgets.conversation.user_message import COLLAPSED_LINES, UserMessage

    monkeypatch.setattr(user_message, "SHOWN_LINES", 50)
    text = "\n".join(f"line {n}" for n in range(120))

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await paste(pilot, text)
            await submit(pilot)
            message = app.chat.query_one(UserMessage)
            shown, more = message.query_one(".text", Static), message.query_one(".more", Static)

            def lines() -> int:
                return str(shown.render()).count("\n") + 1

            assert lines() == COLLAPSED_LINES and more.display
            assert "108 more lines (Enter or click to expand)" in str(more.render())
            message.focus()
            await pilot.press("enter")
            assert lines() == 50 and "70 more lines not shown here" in str(more.render())
            await pilot.click(message)
            assert lines() == COLLAPSED_LINES
        (user,) = [item for item in bench.only_session().view().items if type(item).__name__ == "UserItem"]
        assert user.text == text

    run(scenario())


def test_a_route_without_its_key_fails_in_a_node_not_a_traceback(bench, monkeypatch) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)

    async def scenario() -> None:
        app = bench.app("deepseek/deepseek-flash")
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "hello")
            assert blocks(app) == ["UserBlock", "ErrorBlock", "TurnEndBlock"]
            assert "DEEPSEEK_API_KEY" in str(app.chat.query_one("ErrorNode").render())
            assert app.is_running

    run(scenario())


def test_an_mcp_server_that_will_not_start_is_a_notification(bench) -> None:
    crash = Path(TOOLS_SERVER).with_name("crash_at_start.py")
    bench.config_lines += ["[mcp.servers.broken]", f'command = "{sys.executable}"', f'args = ["{crash}"]', ""]

    async def scenario() -> None:
        app, told = bench.app(), Told()
        async with app.run_test(size=SIZE, message_hook=told) as pilot:
            await until(pilot, told.notes)
            assert told.notes("broken")
            await send(pilot, "hello")
            assert blocks(app)[0] == "UserBlock"

    run(scenario())


def test_a_session_another_process_writes_opens_read_only(bench) -> None:
    from app.session.store import SessionStore

    writer = SessionStore(bench.home / "sessions").create(bench.workspace)
    try:

        async def scenario() -> None:
            app, told = bench.app(session=writer.path), Told()
            async with app.run_test(size=SIZE, message_hook=told) as pilot:
                await until(pilot, lambda: app.read_only is not None)
                await settle(pilot)
                assert app.chat.composer.disabled
                assert told.notes("read-only")

        run(scenario())
    finally:
        writer.close()


def _described(blocks: list) -> list[tuple[str, dict[str, object]]]:
    """What a block shows (its public state), to compare blocks built on different paths."""
    return [
        (type(block).__name__, {k: v for k, v in vars(block).items() if not k.startswith("_") and k != "widget"})
        for block in blocks
    ]


async def _resumed(app, pilot):  # type: ignore[no-untyped-def]
    """The conversation of a chat resuming a session, once its blocks are shown and settled."""
    await until(pilot, lambda: app.chat.conversation.blocks)
    await settle(pilot)
    return app.chat.conversation


@pytest.mark.slow(seconds=11)
def test_a_long_session_mounts_a_bounded_window_and_brings_earlier_messages_back_on_scroll(bench, monkeypatch) -> None:
    from app.session.resumed import merged_entries
    from app.session.session import Session
    from app.ui.widgets.conversation import pane as conversation_module
    from app.ui.widgets.conversation.pane import Conversation
    from benchmarks.sessions import write_large_session

    # A smaller window than the chat's, so that going back through all of the log takes seconds
    # (a block's widgets cost milliseconds to mount) and crosses many window and turn boundaries.
    WINDOW = 30
    monkeypatch.setattr(conversation_module, "WINDOW", WINDOW)
    sessions = bench.home / "sessions"
    sessions.mkdir(parents=True)
    path = sessions / "20260101-000000-window.jsonl"
    # 600 events: 40 turns, 237 blocks, of which the resume reads 51 (under the quarter asserted
    # below) and scrolling back mounts the rest in 5 windows.
    write_large_session(path, events=600)
    folded = Session.open(path).folded_view()
    ends = sorted((turn.end_seq, turn.end_reason or "") for turn in folded.turns if turn.end_seq is not None)
    whole = Conversation()  # every block of the log built at once, never mounted
    everything = [block for entry in merged_entries(folded.items, ends) for block in whole._blocks_of(entry, live=False)]

    def check_window(conversation: Conversation) -> None:
        low, high = conversation.mounted_range
        assert 0 < high - low <= WINDOW and len(conversation.children) == high - low
        assert conversation.blocks[low].widget is not None and conversation.blocks[high - 1].widget is not None

    async def scenario() -> None:
        app = bench.app(session=path)
        async with app.run_test(size=SIZE) as pilot:
            conversation = await _resumed(app, pilot)
            # Resumed from its end: a screenful is mounted, and only the last turns are read.
            low, high = conversation.mounted_range
            assert high == len(conversation.blocks) and conversation.virtual_size.height > conversation.size.height
            check_window(conversation)
            assert len(conversation.blocks) < len(everything) / 4
            first_shown = conversation.blocks[low]
            conversation.scroll_home(animate=False, immediate=True)
            # Blocks read from earlier turns come before the ones shown: compare blocks, not indexes.
            await until(pilot, lambda: conversation.blocks.index(first_shown) > conversation.mounted_range[0])
            await settle(pilot)
            check_window(conversation)
            while conversation.has_earlier:
                await conversation.show_earlier(WINDOW)
                await settle(pilot)  # and any scroll handler the new blocks set off
                check_window(conversation)
            assert conversation.mounted_range[0] == 0
            assert _described(conversation.blocks) == _described(everything)
            await app.chat.action_jump_to_end()
            await settle(pilot)
            assert conversation.mounted_range[1] == len(conversation.blocks)
            check_window(conversation)

    run(scenario())


def test_a_resumed_first_frame_shows_as_few_blocks_as_fill_the_view_with_their_text(bench, monkeypatch) -> None:
    """Each block mounted before the first frame costs its widgets' layout (a reply its Markdown
    parse): the first frame has the last blocks that fill the view and no more (the window follows
    after it, here held back), and their replies' text is in it."""
    from textual.widgets.markdown import MarkdownBlock

    from app.ui.widgets.conversation.assistant_message import AssistantMessage
    from app.ui.widgets.conversation.pane import Conversation
    from benchmarks.sessions import write_large_session

    async def window_held_back(conversation: Conversation) -> None:
        pass

    monkeypatch.setattr(Conversation, "_fill_window", window_held_back)
    resume = Conversation.resume
    replies_when_resumed: list[tuple[str, int]] = []

    async def resume_and_look(conversation: Conversation, *args: object) -> None:
        # What the screen is about to show once the resume returns (the chat ends its batch).
        await resume(conversation, *args)  # type: ignore[arg-type]
        for message in conversation.query(AssistantMessage):
            replies_when_resumed.append((message.block.text, len(message.query(MarkdownBlock))))

    monkeypatch.setattr(Conversation, "resume", resume_and_look)
    sessions = bench.home / "sessions"
    sessions.mkdir(parents=True)
    path = sessions / "20260101-000000-first.jsonl"
    write_large_session(path, events=800)

    async def scenario() -> None:
        app = bench.app(session=path)
        async with app.run_test(size=SIZE) as pilot:
            conversation = await _resumed(app, pilot)
            low, high = conversation.mounted_range
            assert high == len(conversation.blocks) and conversation.has_earlier
            assert conversation.virtual_size.height > conversation.size.height
            first = conversation.blocks[low].widget
            assert first is not None
            # Without its first block the rest would not fill the view (give or take a row a block:
            # their heights are estimated from their text, not laid out).
            rest = conversation.virtual_size.height - first.outer_size.height - first.styles.margin.top
            assert rest <= conversation.size.height + (high - low)

    run(scenario())
    # The replies in that frame show their text, not an empty place for it.
    assert replies_when_resumed and all(blocks for text, blocks in replies_when_resumed if text)


@pytest.mark.slow(seconds=8)
def test_ctrl_o_lists_the_sessions_and_resumes_the_chosen_one(bench) -> None:
    from app.ui.screens.session_picker import SessionPickerScreen

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "use list_dir on .")
        (first,) = bench.sessions()
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "hello")
            await pilot.press("ctrl+o")
            await until(pilot, lambda: isinstance(app.screen, SessionPickerScreen))
            table = app.screen.query_one("#picker-table")
            await until(pilot, lambda: table.row_count == 2)
            await type_text(pilot, "list_dir")
            await pilot.press("enter")
            await until(pilot, lambda: app.writer is not None and app.writer.path == first)
            await until(pilot, lambda: "ToolCallBlock" in blocks(app))

    run(scenario())


def test_quitting_while_a_resumed_session_is_read_leaves_cleanly(bench, monkeypatch) -> None:
    """The log is read in a thread; the chat quits meanwhile, and the reading ends while its screen
    is being removed: the app ends without an error. (Textual cancels the resuming worker before it
    goes on here, so this does not reach the chat's detached-screen guards.)"""
    import threading

    from app.session.resumed import ResumedLog
    from app.ui.screens.chat import ChatScreen
    from benchmarks.sessions import write_large_session

    sessions = bench.home / "sessions"
    sessions.mkdir(parents=True)
    path = sessions / "20260101-000000-quit.jsonl"
    write_large_session(path, events=300)
    reading, read = threading.Event(), threading.Event()
    screen_gone = threading.Event()
    original = ResumedLog.earlier

    def held_until_the_screen_goes(resumed: ResumedLog, items: int = 64) -> list:
        reading.set()
        screen_gone.wait(10)
        try:
            return original(resumed, items)
        finally:
            read.set()

    def on_unmount(screen: ChatScreen) -> None:
        screen_gone.set()
        read.wait(10)  # the reading is over before the screen's removal goes on

    monkeypatch.setattr(ResumedLog, "earlier", held_until_the_screen_goes)
    monkeypatch.setattr(ChatScreen, "on_unmount", on_unmount, raising=False)

    async def scenario() -> None:
        app = bench.app(session=path)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, reading.is_set)
            await pilot.press("ctrl+q")
        assert screen_gone.is_set() and read.is_set()
        assert app.return_code in (0, None)  # and `run_test` raised nothing the app raised

    run(scenario())


# --- prompts sent while a turn runs (issue 24, item 1) ---------------------------------------------


def user_texts(bench) -> list[str]:  # type: ignore[no-untyped-def]
    return [item.text for item in bench.only_session().view().items if type(item).__name__ == "UserItem"]


async def queued_behind_a_turn(pilot, monkeypatch, first: str, *queued: str) -> None:  # type: ignore[no-untyped-def]
    """Send `first` slowly, then each of `queued` while its turn runs."""
    monkeypatch.setenv("TOOLSCOPE_OFFLINE_DELAY", "0.2")  # the first turn outlasts the typing
    await send(pilot, first, wait=False)
    await until(pilot, lambda: pilot.app.turn_running)
    for prompt in queued:
        await send(pilot, prompt, wait=False)


def stream_fast(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The rest of the turn and the queued ones stream without waiting: the test has done its part."""
    monkeypatch.setenv("TOOLSCOPE_OFFLINE_DELAY", "0.002")


async def until_all_sent(pilot, limit: float = 60) -> None:  # type: ignore[no-untyped-def]
    await until(pilot, lambda: not pilot.app.turn_running and not pilot.app.chat.queued.prompts, limit=limit)
    await settle(pilot)


class TestPromptsSentDuringATurn:
    """A prompt sent while a turn runs was thrown away with a toast; it is queued, shown, and sent
    when the turn ends."""

    def test_a_prompt_sent_during_a_turn_is_queued_shown_and_sent_after_it(self, bench, monkeypatch) -> None:
        async def scenario() -> None:
            app = bench.app()
            async with app.run_test(size=SIZE) as pilot:
                await queued_behind_a_turn(pilot, monkeypatch, "hello", "use list_dir")
                queued = str(app.chat.queued.render())
                assert "1 prompt queued" in queued and "› use list_dir" in queued, queued
                await send(pilot, "use read_file on README.md", wait=False)
                stream_fast(monkeypatch)
                await until_all_sent(pilot)
                assert not app.chat.queued.display
            assert user_texts(bench) == ["hello", "use list_dir", "use read_file on README.md"]

        run(scenario())

    def test_up_in_an_empty_prompt_takes_the_last_queued_one_back_to_edit(self, bench, monkeypatch) -> None:
        async def scenario() -> None:
            app = bench.app()
            async with app.run_test(size=SIZE) as pilot:
                await queued_behind_a_turn(pilot, monkeypatch, "hello", "use list_dir", "a typo")
                await pilot.press("up")
                assert app.chat.composer.text == "a typo" and app.chat.queued.prompts == ["use list_dir"]
                app.chat.composer.load_text("")  # deleted
                stream_fast(monkeypatch)
                await until_all_sent(pilot)
            assert user_texts(bench) == ["hello", "use list_dir"]

        run(scenario())

    def test_escape_cancels_the_turn_and_keeps_the_queue(self, bench, monkeypatch) -> None:
        async def scenario() -> None:
            app = bench.app()
            async with app.run_test(size=SIZE) as pilot:
                await queued_behind_a_turn(pilot, monkeypatch, "tell me about the tools you have", "use list_dir")
                await pilot.press("escape")
                stream_fast(monkeypatch)
                await until_all_sent(pilot)
            assert user_texts(bench) == ["tell me about the tools you have", "use list_dir"]
            assert [turn.end_reason for turn in bench.only_session().view().turns] == ["aborted", "completed"]

        run(scenario())

    def test_quitting_with_a_queue_asks_first(self, bench, monkeypatch) -> None:
        async def scenario() -> None:
            app, told = bench.app(), Told()
            async with app.run_test(size=SIZE, message_hook=told) as pilot:
                await queued_behind_a_turn(pilot, monkeypatch, "tell me about the tools you have", "use list_dir")
                await pilot.press("ctrl+q")
                await pilot.pause()
                assert app.is_running
                assert told.notes("1 queued prompt would not be sent")
                await pilot.press("ctrl+q")
                await until(pilot, lambda: not app.is_running)

        run(scenario())

    @pytest.mark.slow(seconds=15)
    def test_thirty_prompts_sent_at_random_moments_each_reach_the_log_once_in_order(self, bench, monkeypatch) -> None:
        """Each prompt is put in the composer whole (as a paste) and sent with Enter, at random
        moments of the turns before it: while one streams, between its tool call and its answer,
        right as it ends."""
        monkeypatch.setenv("TOOLSCOPE_OFFLINE_DELAY", "0.002")
        rng = random.Random(24)
        prompts = [f"use list_dir on dir{number}" for number in range(30)]

        async def scenario() -> None:
            app = bench.app()
            async with app.run_test(size=SIZE) as pilot:
                await until(pilot, lambda: app.registry is not None)
                for prompt in prompts:
                    app.chat.composer.load_text(prompt)
                    await submit(pilot, wait=False)
                    await pilot.pause(rng.choice([0, 0, 0.005, 0.02, 0.05]))
                await until_all_sent(pilot, limit=100)
            assert user_texts(bench) == prompts

        run(scenario())

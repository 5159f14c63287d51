"""Text from outside is shown literally everywhere on the screen (issue 23 item 4; docs/security.md,
"The screen"): an MCP server's stderr and name, a provider's failure, a crafted session's tool names
and titles reach notifications, titles, labels and tables as the characters they are — no markup
is read, so none can crash the chat, style it, make a link or run an action when clicked.

The chat is the real app driven by its pilot with notifications on (`run_test` leaves them out by
default); MCP servers are real stdio processes (`hostile_server.py --fail --stderr TEXT`), the
provider a loopback server, sessions real files. What a user sees is read from the screen's cells.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from app.session.store import SessionStore
from app.terminal import printable, printable_line
from tests.functional.e2e.harness import TOOLS_SERVER, RouteSpec, Workbench, answer, json_error, toolscope_run
from tests.functional.e2e.harness import run as run_bounded
from tests.functional.llm.sse_server import SSEServer
from tests.functional.ui.chat_support import SIZE, Bench, blocks, make_bench, run, send, settle, until
from tests.support.screen import screen_rows, text_in

pytestmark = pytest.mark.timeout(120)

HOSTILE_SERVER = Path(TOOLS_SERVER).with_name("hostile_server.py")


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Bench:
    return make_bench(tmp_path, monkeypatch)


# --- the bench and the screen ---------------------------------------------------------------------


def toml_string(text: str) -> str:
    """`text` as a TOML basic string (JSON's escapes are TOML's; DEL must be escaped too)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def add_failing_server(bench: Bench, name: str, stderr: str) -> None:
    """An MCP server named `name` that writes `stderr` and exits before the handshake."""
    args = [str(HOSTILE_SERVER), "--fail", "--stderr", stderr]
    bench.config_lines += [
        f"[mcp.servers.{toml_string(name)}]",
        f"command = {toml_string(sys.executable)}",
        f"args = [{', '.join(toml_string(arg) for arg in args)}]",
        "",
    ]


def shown_by(app: Any, widgets: Any) -> list[str]:
    """What each widget's content region shows on the screen now."""
    rows = screen_rows(app)
    return [text_in(rows, widget.content_region) for widget in widgets]


def toasts(app: Any) -> list[str]:
    return shown_by(app, app.screen.query("Toast"))


def squashed(text: str) -> str:
    """`text` without whitespace: a toast or a cell wraps lines where its width says."""
    return "".join(text.split())


def shows(texts: list[str], expected: str) -> bool:
    return any(squashed(expected) in squashed(text) for text in texts)


def find(app: Any, text: str) -> tuple[int, int] | None:
    """The screen cell where `text` starts (on one row), or None."""
    for y, row in enumerate(screen_rows(app)):
        chars = [char for char, _style in row]
        for x in range(len(chars)):
            if "".join(chars[x : x + len(text)]) == text:
                return x, y
    return None


def write_session(
    sessions: Path, *, prompt: str = "hi", tool: str = "read_file", result_name: str | None = None
) -> Path:
    """A real session file: one turn with one tool call to `tool`. With `result_name`, its
    tool/result names that tool instead, which the reader refuses (an invariant error quoting it)."""
    with SessionStore(sessions).create("/w") as writer:
        writer.append("turn/start", {"turn": 1})
        writer.append("user/message", {"id": "u-1", "text": prompt})
        writer.append("step/start", {"turn": 1, "step": 1})
        step = {"turn": 1, "step": 1}
        call = {"type": "tool-call", "callId": "c1", "name": tool, "arguments": "{}"}
        writer.append("assistant/message", {**step, "route": "offline/demo", "model": "demo", "content": [call], "finish": "tool-calls"})
        writer.append("tool/call", {**step, "callId": "c1", "name": tool, "arguments": "{}"})
        writer.append("tool/result", {**step, "callId": "c1", "name": tool, "content": "done", "isError": False})
        writer.append("step/end", {"turn": 1, "step": 1})
        writer.append("turn/end", {"turn": 1, "reason": "completed"})
        path = writer.session.path
    if result_name is not None:
        def named(name: str) -> bytes:
            return b'"callId":"c1","name":' + json.dumps(name).encode() + b',"content"'

        assert named(tool) in path.read_bytes()
        path.write_bytes(path.read_bytes().replace(named(tool), named(result_name)))
    return path


def assert_literal(app: Any, regions: list[str], expected: str) -> None:
    """`expected` (printable) is on the screen in one of `regions`, whatever the wrapping."""
    assert shows(regions, expected), f"{expected!r} not shown literally in {regions!r}"


async def toasts_shown(pilot: Any, count: int) -> list[str]:
    """What `count` notifications show, once they are on the screen."""
    await until(pilot, lambda: len(pilot.app.screen.query("Toast")) == count)
    await settle(pilot)
    return toasts(pilot.app)


async def cleared(pilot: Any) -> None:
    """No notification on the screen any more (a toast lies over what is under it)."""
    pilot.app.clear_notifications()
    await until(pilot, lambda: not pilot.app.screen.query("Toast"))


def assert_inert(app: Any, widgets: Any) -> None:
    """Nothing in these widgets does anything when clicked, nothing on the screen is an escape
    sequence, a control or a bidi character, and the app runs."""
    rows = screen_rows(app)
    screen = "".join(char for row in rows for char, _style in row)
    assert printable(screen) == screen, [char for char in screen if printable(char) != char]
    for widget in widgets:
        region = widget.region
        for row in rows[region.y : region.bottom]:
            for char, style in row[region.x : region.right]:
                assert style is None or not (style.link or style.meta.get("@click")), (char, style)
    assert app.is_running


# --- the reproductions ----------------------------------------------------------------------------


def test_a_closing_tag_in_an_mcp_servers_stderr_is_shown_literally_and_the_chat_goes_on(bench: Bench) -> None:
    # Before: the notification read it as markup and the chat died with a MarkupError (exit 1).
    add_failing_server(bench, "broken", "fatal: [/x] is not a tag\n")

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await until(pilot, lambda: shows(toasts(app), "stderr: fatal: [/x] is not a tag"))
            await send(pilot, "hello")
            assert blocks(app)[:2] == ["UserBlock", "AssistantBlock"]
            assert app.is_running

    run(scenario())


def test_an_mcp_tools_description_in_markup_is_shown_literally_in_its_context_node(bench: Bench) -> None:
    """The server is stopped between two prompts: the node of the removal expands to the tool's
    description as the header before it logged it, markup and escapes as the characters they are."""
    from app.ui.widgets.conversation.context_node import ContextNode
    from tests.support.mcp_servers.hostile_server import DESCRIPTION

    bench.config_lines += [
        "[mcp.servers.hostile]",
        f"command = {toml_string(sys.executable)}",
        f"args = [{toml_string(str(HOSTILE_SERVER))}]",
        "",
    ]

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE) as pilot:
            await send(pilot, "hello")
            await app.registry.stop_mcp_server("hostile")
            await send(pilot, "thanks")
            node = app.chat.query_one(ContextNode)
            node.scroll_visible(top=True, animate=False, immediate=True)
            node.focus()
            await pilot.press("enter")
            await pilot.pause()
            (shown,) = shown_by(app, [node])
            assert squashed("− hostile__styled · MCP server hostile") in squashed(shown)
            assert squashed(printable(DESCRIPTION)) in squashed(shown)
            assert "[link=https://evil.example]click[/link]" in shown
            assert app.is_running

    run(scenario())


def test_a_click_action_in_an_mcp_servers_stderr_is_text_that_runs_nothing(bench: Bench) -> None:
    # Before: the tag made the word after it clickable, and a click ran `app.quit`.
    add_failing_server(bench, "broken", "[@click=app.quit]quit[/]\n")

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await until(pilot, lambda: find(app, "stderr: ") is not None)
            shown = toasts(app)
            x, y = find(app, "stderr: ")  # type: ignore[misc]
            # Where the tag made the word after it clickable: now its first character, plain text.
            await pilot.click(offset=(x + len("stderr: "), y))
            await pilot.pause()
            assert app.is_running
            assert shows(shown, "stderr: [@click=app.quit]quit[/]"), shown

    run(scenario())


def test_a_crafted_session_naming_a_tool_in_markup_opens_with_the_error_shown_literally(bench: Bench) -> None:
    # Before: the invariant error quoting the name was read as markup: a MarkupError, exit 1.
    path = write_session(bench.home / "sessions", tool="read_file", result_name="[/x] read_file")

    async def scenario() -> None:
        app = bench.app(session=path)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await until(pilot, lambda: toasts(app))
            expected = "tool/result names tool '[/x] read_file', but the tool/call 'c1' was to 'read_file'"
            await until(pilot, lambda: shows(toasts(app), expected))
            assert shows(toasts(app), "Cannot open the session")
            assert app.is_running

    run(scenario())


def test_a_providers_error_in_markup_is_shown_literally_in_the_chat(bench: Bench) -> None:
    # Before: the turn's failure notification was read as markup: a MarkupError, exit 1.
    async def scenario() -> None:
        async with SSEServer(json_error(400, "bad [/x] request", "invalid_request_error")) as server:
            app = bench.app(bench.loopback_route(server.base_url))
            async with app.run_test(size=SIZE, notifications=True) as pilot:
                await send(pilot, "hello")
                assert blocks(app)[:2] == ["UserBlock", "ErrorBlock"]
                await until(pilot, lambda: toasts(app))
                assert shows(toasts(app), "bad [/x] request")
                assert shows(shown_by(app, app.chat.query("ErrorNode")), "bad [/x] request")
                assert app.is_running

    run(scenario())


def test_content_markup_in_a_reply_is_text_of_its_markdown(bench: Bench) -> None:
    """A reply is Markdown (its own syntax, docs/decisions.md), never content markup: the tags show
    as typed and make nothing clickable."""
    reply = "Tags: [/x] [@click=app.quit]quit[/] [b]bold[/b]"

    async def scenario() -> None:
        async with SSEServer(answer(reply)) as server:
            app = bench.app(bench.loopback_route(server.base_url))
            async with app.run_test(size=SIZE, notifications=True) as pilot:
                await send(pilot, "hello")
                messages = app.chat.query("AssistantMessage")
                assert shows(shown_by(app, messages), reply)
                assert_inert(app, messages)

    run(scenario())


def test_run_prints_a_providers_error_in_markup_literally(tmp_path: Path) -> None:
    bench = Workbench(tmp_path)

    async def scenario() -> Any:
        async with SSEServer(json_error(400, "bad [/x] request", "invalid_request_error")) as server:
            bench.write_config(server.base_url, [RouteSpec("e2e/loop")])
            return await toolscope_run(bench, "hello")

    result = run_bounded(scenario())
    assert result.returncode == 1
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("toolscope: error:")]
    assert line.endswith("bad [/x] request")


def test_textuals_own_notifications_are_in_our_words_and_literal(bench: Bench) -> None:
    """Textual words two notifications in markup (the Ctrl+C hint, a saved screenshot with its
    path); shown literally, that markup would show, and a path in brackets would have crashed."""
    from textual.events import DeliveryComplete

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await until(pilot, lambda: app.registry is not None)
            app.set_focus(None)  # the composer takes Ctrl+C to copy
            await pilot.press("ctrl+c")
            app.post_message(DeliveryComplete(key="shot", path=Path("/tmp/[/x] shot.svg"), name="screenshot"))
            await until(pilot, lambda: len(app.screen.query("Toast")) == 2)
            await settle(pilot)
            shown = toasts(app)
            assert shows(shown, "Do you want to quit?\nPress ctrl+q to quit the app"), shown
            assert shows(shown, "Screenshot\nSaved the screenshot to /tmp/[/x] shot.svg"), shown
            assert not shows(shown, "[b]")
            assert app.is_running

    run(scenario())


# --- the property: any text, on every path -----------------------------------------------------------

WIDE = (160, 50)
MARKUP = [
    "[b]", "[/b]", "[/x]", "[/]", "[@click=app.quit]", "[@click=app.bell]", "[link=https://evil.example]", "[/link]",
    "[$accent]", "[red on white]",
]  # fmt: skip
ESCAPES = ["\\", "\\[", "\\[b]", "[[", "]]", "]", "$text", "{}"]
TERMINAL = [
    "\x1b[31m", "\x1b[2J", "\x1b]0;owned\x07", "\x1b]8;;https://evil.example\x1b\\", "\x1b]52;c;ZXZpbA==\x07",
    "\x1bP+q\x1b\\", "\x1b", "\x9b31m", "\x07", "\x7f", "\t", "\u202e", "\u2066", "\u200f",
]  # fmt: skip
LINE_BREAKS = ["\n", "\r", "\x85", "\u2028"]
WORDS = st.text(alphabet="abcXYZ 09.:-_时间", min_size=1, max_size=6)


def hostile(*, line_breaks: bool = True) -> st.SearchStrategy[str]:
    """Short text mixing content markup, its escapes, backslashes, escape sequences, control and
    bidi characters (and line breaks, where the path keeps them)."""
    pieces = MARKUP + ESCAPES + TERMINAL + (LINE_BREAKS if line_breaks else [])
    return st.lists(st.one_of(st.sampled_from(pieces), WORDS), min_size=1, max_size=6).map("".join)


@pytest.fixture
def workbenches(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A fresh bench (data dir, workspace, config) for each generated example."""
    return lambda: make_bench(tmp_path_factory.mktemp("bench"), monkeypatch)


def examples(count: int) -> Any:
    """`count` generated examples, each on a fresh bench (an app start is 0.1–1.5 s)."""
    return settings(
        max_examples=count,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


@examples(10)
@given(st.lists(st.tuples(hostile(), hostile()), min_size=3, max_size=3))
def test_property_a_notification_shows_any_message_and_title_literally(
    workbenches: Any, notes: list[tuple[str, str]]
) -> None:
    bench = workbenches()

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=WIDE, notifications=True) as pilot:
            await until(pilot, lambda: app.registry is not None)
            for number, (message, title) in enumerate(notes):
                # The app's own, and a screen's (Textual sends a widget's to the app).
                (app if number % 2 else app.screen).notify(message, title=title, timeout=30)
            shown = await toasts_shown(pilot, len(notes))
            for message, title in notes:
                assert_literal(app, shown, printable_line(title))
                assert_literal(app, shown, printable(message))
            assert_inert(app, app.screen.query("Toast"))

    run(scenario())


@examples(5)
@given(st.lists(st.tuples(hostile(), hostile(line_breaks=False)), min_size=2, max_size=2, unique_by=lambda pair: pair[0]))
def test_property_an_mcp_servers_name_and_stderr_are_shown_literally(
    workbenches: Any, servers: list[tuple[str, str]]
) -> None:
    bench = workbenches()
    for name, stderr in servers:
        add_failing_server(bench, name, stderr + "\n")

    async def scenario() -> None:
        app = bench.app()
        async with app.run_test(size=WIDE, notifications=True) as pilot:
            shown = await toasts_shown(pilot, len(servers))
            for name, stderr in servers:
                assert_literal(app, shown, printable(name))
                if stderr.strip():  # the server's blank lines are left out
                    assert_literal(app, shown, "stderr:" + printable(stderr))
            assert_inert(app, app.screen.query("Toast"))
            await cleared(pilot)  # the toasts lie over the tools screen
            await pilot.press("ctrl+t")
            await until(pilot, lambda: app.screen.query(".source-reasons"))
            await settle(pilot)
            reasons = [text for text in shown_by(app, app.screen.query(".source-reasons")) if text.strip()]
            for name, stderr in servers:
                assert_literal(app, reasons, printable(name))
                if stderr.strip():
                    assert_literal(app, reasons, "stderr:" + printable(stderr))
            assert_inert(app, app.screen.query(".source-reasons"))

    run(scenario())


@pytest.mark.slow(seconds=10)
@examples(4)
@given(
    st.lists(st.tuples(hostile(), hostile()), min_size=2, max_size=2),
    st.lists(hostile(), min_size=2, max_size=2),
)
def test_property_session_titles_tool_names_and_provider_failures_are_shown_literally(
    workbenches: Any, sessions: list[tuple[str, str]], failures: list[str]
) -> None:
    """Sessions from files (their titles in the picker, a resumed one's prompt and tool call in the
    conversation and the trajectory) and a provider's failures (the error node, the notification)."""
    bench = workbenches()
    from app.session.listing import list_sessions
    from app.ui.screens.session_picker import SessionPickerScreen
    from app.ui.trajectory.screen import TrajectoryScreen

    directory = bench.home / "sessions"
    paths = [write_session(directory, prompt=prompt, tool=tool) for prompt, tool in sessions]
    titles = [summary.title for summary in list_sessions(directory)]

    async def scenario() -> None:
        async with SSEServer(*(json_error(400, failure, "invalid_request_error") for failure in failures)) as server:
            app = bench.app(bench.loopback_route(server.base_url), session=paths[0])
            async with app.run_test(size=WIDE, notifications=True) as pilot:
                await until(pilot, lambda: "ToolCallBlock" in blocks(app))
                await settle(pilot)
                assert_literal(app, shown_by(app, app.chat.query("UserMessage .text")), printable(sessions[0][0]))
                assert_literal(app, shown_by(app, app.chat.query("ToolCallView .name")), printable(sessions[0][1]))
                for _failure in failures:
                    await send(pilot, "go")
                shown = await toasts_shown(pilot, len(failures))
                for failure in failures:
                    assert_literal(app, shown, printable(failure))
                assert_inert(app, app.screen.query("Toast"))
                await cleared(pilot)  # the toasts lie over the conversation
                errors = shown_by(app, app.chat.query("ErrorNode"))
                for failure in failures:
                    assert_literal(app, errors, printable(failure))
                assert_inert(app, app.chat.query("UserMessage, ToolCallView, ErrorNode"))

                await pilot.press("ctrl+o")
                await until(pilot, lambda: isinstance(app.screen, SessionPickerScreen))
                table = app.screen.query_one("#picker-table")
                await until(pilot, lambda: table.row_count == len(sessions))
                await settle(pilot)
                rows = shown_by(app, [table])
                for title in titles:
                    assert_literal(app, rows, printable(title))
                assert_inert(app, [table])
                await pilot.press("escape")

                await pilot.press("ctrl+l")
                await until(pilot, lambda: isinstance(app.screen, TrajectoryScreen) and app.screen.loaded)
                await pilot.press("v")  # the flat list: a row per event
                await settle(pilot)
                rows = shown_by(app, app.screen.query("#trajectory-list"))
                assert_literal(app, rows, printable_line(sessions[0][0]))
                assert_literal(app, rows, printable_line(sessions[0][1]))
                assert_inert(app, app.screen.query("#trajectory-list"))

    run(scenario())

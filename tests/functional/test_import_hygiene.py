"""Nothing headless imports Textual (docs/architecture.md §1), and `--version` imports nothing heavy at all.

Both checks run in a fresh interpreter: the test process itself has Textual loaded by the
snapshot plugin.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from app import __version__

TOOLSCOPE = Path(sys.executable).parent / "toolscope"
# Every module of `app` but the `app.ui` package is imported, so new modules and new layers are
# covered without edits here.
UI_PACKAGE = "ui"
HEAVY_FOR_VERSION = (
    "textual", "rich", "httpx", "pydantic", "pydantic_core", "babel", "argparse", "platformdirs",
    "tomllib", "app.i18n", "app.config",
)  # fmt: skip

IMPORT_EVERYTHING_HEADLESS = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys

    import app

    def reraise(name):
        raise  # the ImportError pkgutil caught while walking `name`

    names = ["app"]
    for info in pkgutil.iter_modules(app.__path__, "app."):
        if info.name == "app." + UI_PACKAGE:
            continue
        names.append(info.name)
        module = importlib.import_module(info.name)
        if info.ispkg:
            names += [sub.name for sub in pkgutil.walk_packages(module.__path__, info.name + ".", reraise)]
    for name in names:
        importlib.import_module(name)
    textual = sorted(name for name in sys.modules if name == "textual" or name.startswith("textual."))
    print(json.dumps({"imported": names, "textual": textual}))
    """
)


def test_headless_modules_do_not_import_textual() -> None:
    script = f"UI_PACKAGE = {UI_PACKAGE!r}\n{IMPORT_EVERYTHING_HEADLESS}"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    for expected in ("app.session.events", "app.agent.loop", "app.commands.inspect", "app.terminal", "app.__main__"):
        assert expected in report["imported"]
    assert report["textual"] == [], f"headless imports pulled in Textual: {report['textual']}"


IMPORT_THE_TRAJECTORY = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys

    import app.trajectory as package

    names = [package.__name__]
    names += [info.name for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    for name in names:
        importlib.import_module(name)
    interface = sorted(name for name in sys.modules if name.partition(".")[0] in ("textual", "rich"))
    print(json.dumps({"imported": names, "interface": interface}))
    """
)


def test_the_trajectory_package_imports_neither_textual_nor_rich() -> None:
    """The trajectory's model, index, labels, search and source are headless: every module of
    `app.trajectory` is imported and neither Textual nor Rich comes with them (`app.ui.trajectory`
    draws them)."""
    result = subprocess.run([sys.executable, "-c", IMPORT_THE_TRAJECTORY], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    for expected in ("app.trajectory.model", "app.trajectory.indexed", "app.trajectory.labels", "app.trajectory.source"):
        assert expected in report["imported"]
    assert report["interface"] == [], f"the trajectory package pulled in {report['interface']}"


def _imported_modules(importtime_report: str) -> set[str]:
    """Module names from `python -X importtime` output (`import time: self | cumulative | name`)."""
    names = set()
    for line in importtime_report.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name)
    return names


@pytest.mark.parametrize(
    "command",
    [pytest.param([str(TOOLSCOPE)], id="console-script"), pytest.param(["-m", "app"], id="python-m-app")],
)
def test_version_imports_nothing_heavy(command: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", *command, "--version"], capture_output=True, text=True, timeout=60
    )
    assert (result.returncode, result.stdout) == (0, f"toolscope {__version__}\n")
    imported = _imported_modules(result.stderr)
    assert "app.cli" in imported
    heavy = sorted(
        name for name in imported if any(name == root or name.startswith(root + ".") for root in HEAVY_FOR_VERSION)
    )
    assert heavy == [], f"`toolscope --version` imported {heavy}"


APP = Path(__file__).resolve().parents[2] / "app"
PURE_STREAM_MODULES = sorted(
    ".".join(path.relative_to(APP.parent).with_suffix("").parts)
    for path in [*APP.glob("llm/*/translator.py"), *APP.glob("llm/*/wire.py"), APP / "llm" / "provider_errors.py"]
)
"""What reads a provider's stream or error body: pure functions of bytes and JSON, testable and
reusable without an HTTP client."""


@pytest.mark.parametrize("module", PURE_STREAM_MODULES)
def test_the_stream_translators_do_not_import_httpx(module: str) -> None:
    script = f"import importlib, json, sys; importlib.import_module({module!r}); print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    imported = json.loads(result.stdout)
    assert [name for name in imported if name == "httpx" or name.startswith("httpx.")] == []


CHAT_FIRST_FRAME = textwrap.dedent(
    """
    import gc, json, sys

    import app.ui.app as chat_app

    class Probe(chat_app.ToolscopeApp):
        def run(self, **_options):
            return super().run(headless=True, size=(80, 24))

        def on_ready(self):  # right after the first frame is written, before the app's own on_ready
            report = {"modules": sorted(sys.modules), "collecting_at_first_frame": gc.isenabled()}

            def after_the_app():
                report.update(collecting_after=gc.isenabled(), frozen=gc.get_freeze_count())
                print(json.dumps(report), flush=True)
                self.exit()

            self.call_later(after_the_app)

    chat_app.ToolscopeApp = Probe  # what `toolscope chat` runs
    from app.cli import main

    sys.exit(main(["chat"]))
    """
)
NOT_BEFORE_THE_FIRST_FRAME = (
    "app.agent.loop", "app.llm.dispatch", "httpx", "jsonschema", "mcp", "app.tools.registry",
    "app.session.store", "markdown_it",
    # The session models and the route catalog's old models: pydantic builds its classes slowly.
    "pydantic", "pydantic_core", "app.session.events", "app.session.view", "app.session.view_items",
    # The conversation's blocks (a widget class costs its Textual set-up) come with the first item.
    "app.ui.widgets.conversation.assistant_message", "app.ui.widgets.conversation.reasoning",
    "app.ui.widgets.conversation.tool_call", "app.ui.widgets.conversation.user_message",
    "app.ui.widgets.conversation.failure_nodes", "app.ui.widgets.conversation.markers",
    "app.ui.widgets.conversation.approval", "app.tools.approval",
)  # fmt: skip


def _chat_first_frame(home: Path) -> dict[str, Any]:
    environment = {key: value for key, value in os.environ.items() if key != "TOOLSCOPE_CONFIG"}
    environment["TOOLSCOPE_HOME"] = str(home)  # no config file: the defaults
    result = subprocess.run(
        [sys.executable, "-c", CHAT_FIRST_FRAME], capture_output=True, text=True, timeout=120, env=environment
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


CONFIG = """
[defaults]
route = "offline/demo"

[compaction]
share = 0.5

[mcp.servers.git]
command = "uvx"
args = ["mcp-server-git"]

[[routes]]
id = "deepseek/deepseek-flash"
tool_update = "none"
"""


@pytest.mark.parametrize("config", [None, CONFIG], ids=["defaults", "config-file"])
def test_the_chat_imports_the_agent_tools_http_and_pydantic_only_after_its_first_frame(
    tmp_path: Path, config: str | None
) -> None:
    """What `toolscope chat` imports up to its first frame, through the CLI as a user starts it: the
    agent loop, the LLM adapters (httpx), the tool registry (jsonschema, MCP), the session store and
    models (pydantic) and Markdown (markdown-it) wait until the screen is up, config file or not."""
    if config is not None:
        (tmp_path / "config.toml").write_text(config, encoding="utf-8")
    imported = set(_chat_first_frame(tmp_path)["modules"])
    assert {"textual.app", "app.cli", "app.llm.routes"} <= imported
    assert ("app.config" in imported) == (config is not None)
    assert sorted(imported & set(NOT_BEFORE_THE_FIRST_FRAME)) == []


def test_the_chat_collects_garbage_again_from_its_first_frame(tmp_path: Path) -> None:
    """Start-up runs with the collector paused; from the first frame on it runs, without walking
    again what start-up built (frozen)."""
    report = _chat_first_frame(tmp_path)
    assert report["collecting_at_first_frame"] is False
    assert report["collecting_after"] is True
    assert report["frozen"] > 0


CHAT_RESUMED = textwrap.dedent(
    """
    import gc, json, sys

    import app.ui.app as chat_app

    report = {}

    class Probe(chat_app.ToolscopeApp):
        def run(self, **_options):
            return super().run(headless=True, size=(80, 24))

        def on_ready(self):
            report["collecting_at_first_frame"] = gc.isenabled()
            super().on_ready()
            report["collecting_after_the_first_frame"] = gc.isenabled()
            self.set_interval(0.02, self.check)

        def check(self):
            if gc.isenabled() and "collecting_with_blocks_shown" not in report:
                report["collecting_with_blocks_shown"] = bool(self.chat.conversation.blocks)
                report["frozen"] = gc.get_freeze_count()
                print(json.dumps(report), flush=True)
                self.exit()

    chat_app.ToolscopeApp = Probe
    from app.cli import main

    sys.exit(main(["chat", "--session", sys.argv[1]]))
    """
)


def test_a_resumed_chat_collects_garbage_again_once_its_conversation_is_shown(tmp_path: Path) -> None:
    """The collector paused for start-up stays paused through the resumed conversation's import,
    reading and mounting just after the first frame (it only walks what lives as long as the app),
    then runs again, without walking what start-up built (frozen)."""
    from benchmarks.sessions import write_large_session

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    log = sessions / "20260101-000000-abcdef.jsonl"
    write_large_session(log, events=300)
    environment = {key: value for key, value in os.environ.items() if key != "TOOLSCOPE_CONFIG"}
    environment["TOOLSCOPE_HOME"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", CHAT_RESUMED, str(log)], capture_output=True, text=True, timeout=120, env=environment
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report == {
        "collecting_at_first_frame": False,
        "collecting_after_the_first_frame": False,
        "collecting_with_blocks_shown": True,
        "frozen": report["frozen"],
    }
    assert report["frozen"] > 0


CHAT_ABOUT_TO_START = textwrap.dedent(
    """
    import json, sys

    import app.ui.app as chat_app

    class Probe(chat_app.ToolscopeApp):
        def run(self, **_options):  # what the CLI imported before the app starts
            print(json.dumps({"modules": sorted(sys.modules), "session": str(self.options.session_path)}))
            return 0

    chat_app.ToolscopeApp = Probe
    from app.cli import main

    sys.exit(main(["chat", "--session", sys.argv[1]]))
    """
)


@pytest.mark.parametrize("by", ["id", "path"])
def test_the_chat_finds_the_session_to_resume_without_the_session_store(tmp_path: Path, by: str) -> None:
    """`--session` is resolved before the app starts, so whatever it imports delays the resumed chat's
    first frame: not the session store nor the models (pydantic, 0.4 s)."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    log = sessions / "20260101-000000-abcdef.jsonl"
    log.write_text("{}\n", encoding="utf-8")
    environment = {key: value for key, value in os.environ.items() if key != "TOOLSCOPE_CONFIG"}
    environment["TOOLSCOPE_HOME"] = str(tmp_path)
    ref = log.stem if by == "id" else str(log)
    result = subprocess.run(
        [sys.executable, "-c", CHAT_ABOUT_TO_START, ref], capture_output=True, text=True, timeout=120, env=environment
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["session"] == str(log)
    assert sorted(set(report["modules"]) & set(NOT_BEFORE_THE_FIRST_FRAME)) == []


CHAT_RESUMED_FIRST_FRAME = textwrap.dedent(
    """
    import json, os, sys

    import app.ui.app as chat_app

    class Probe(chat_app.ToolscopeApp):
        def run(self, **_options):  # tall enough that the first frame shows every block of the log
            return super().run(headless=True, size=(120, 300))

        def _display(self, screen, renderable):
            # The frame that shows the resumed conversation (as `benchmarks/bench_chat.py` times it).
            super()._display(screen, renderable)
            conversation = self.chat.conversation
            if renderable is None or screen is not self.chat or not conversation.children:
                return
            if conversation.has_earlier:
                return
            blocks = [type(block).__name__ for block in conversation.blocks]
            calls = [block.status_text() for block in conversation.blocks if hasattr(block, "status_text")]
            print(json.dumps({"modules": sorted(sys.modules), "blocks": blocks, "calls": calls}), flush=True)
            os._exit(0)

    chat_app.ToolscopeApp = Probe
    from app.cli import main

    sys.exit(main(["chat", "--route", "offline/demo", "--session", sys.argv[1]]))
    """
)
MODELS = ("pydantic", "pydantic_core", "app.session.events")


def _every_kind_of_block(directory: Path) -> Path:
    """A log with an item of every kind the chat draws: a reply with reasoning and tool calls, a
    result and a failed one, a tool change and an instructions update, a failed request and its
    retry, a compaction summary, and turns ended in every way a marker shows."""
    from app.session.events import (
        AssistantMessageData,
        ReasoningContent,
        TextContent,
        ToolCallContent,
        ToolCallData,
        ToolError,
        ToolResultData,
    )
    from tests.functional.test_inspect import write_session
    from tests.support.builder import LogBuilder, tool

    log = LogBuilder()
    log.start_turn("look around")
    log.start_step()
    log.header_for([tool("read"), tool("grep")])
    log.emit("assistant/message", AssistantMessageData(
        turn=1, step=1, route="offline/demo", model="demo", finish="tool-calls",
        content=(
            ReasoningContent(text="first the files"),
            TextContent(text="Reading **two** files."),
            ToolCallContent(call_id="c1", name="read", arguments='{"path": "a"}'),
            ToolCallContent(call_id="c2", name="grep", arguments='{"pattern": "b"}'),
        ),
    ))  # fmt: skip
    log.tool_round("c1", "read", "contents of a")
    log.emit("tool/call", ToolCallData(turn=1, step=1, call_id="c2", name="grep", arguments='{"pattern": "b"}'))
    log.emit("tool/result", ToolResultData(
        turn=1, step=1, call_id="c2", name="grep", content="no such pattern", is_error=True,
        error=ToolError(code="NO_MATCH", message="no such pattern"),
    ))  # fmt: skip
    log.end_step()
    log.end_turn()
    log.start_turn("and now?")
    log.start_step()
    log.header_for([tool("read"), tool("write")], system="Be brief.")
    log.request_error()
    log.retry()
    log.assistant("Done.")
    log.end_step()
    log.end_turn("interrupted")
    log.compaction()
    log.start_turn("go on")
    log.start_step()
    log.assistant("Going on.")
    log.end_step()
    log.end_turn("max-tokens")
    return write_session(log, directory)


def test_a_resumed_chat_shows_its_first_frame_without_the_session_models(tmp_path: Path) -> None:
    """A resumed chat reads its log's tail through msgspec's Structs and draws every kind of block
    from their fields: neither pydantic nor the event models (a third of the resumed first frame's
    cost) are imported before that frame, whatever the blocks shown (issue 10)."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    log = _every_kind_of_block(sessions)
    environment = {key: value for key, value in os.environ.items() if key != "TOOLSCOPE_CONFIG"}
    environment["TOOLSCOPE_HOME"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", CHAT_RESUMED_FIRST_FRAME, str(log)],
        capture_output=True, text=True, timeout=120, env=environment,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report["blocks"]) >= {
        "UserBlock", "AssistantBlock", "ToolCallBlock", "ContextBlock", "ErrorBlock", "RetryBlock",
        "CompactionBlock", "TurnEndBlock",
    }  # fmt: skip
    assert report["blocks"].count("ContextBlock") == 2  # a change of tools and new instructions
    assert any("NO_MATCH" in status for status in report["calls"])  # the failed result's code was read
    assert sorted(set(report["modules"]) & set(MODELS)) == []

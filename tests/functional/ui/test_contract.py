"""Screens ask the app through a typed contract, and the app tells the chat screen through its
methods (issue 25 item 3): read from the source of `app/ui`, as the literal hygiene test reads it,
and from the two apps themselves."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import app.ui
from app.ui.app import ChatOptions, ToolscopeApp
from app.ui.trajectory.app import TrajectoryApp

UI = Path(app.ui.__file__).parent
REACHED_FOR = re.compile(r"self\.app\b.*type:\s*ignore\[attr-defined\]|getattr\(self\.app\b")


def test_no_screen_or_widget_reaches_for_an_attribute_of_the_app() -> None:
    reached = [
        f"{path.relative_to(UI)}:{number}: {line.strip()}"
        for path in sorted(UI.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if REACHED_FOR.search(line)
    ]
    assert reached == []


def _into_the_chat_screens_parts(tree: ast.AST) -> list[str]:
    """`self.chat.PART.x` (or `self._chat.…`, or `chat.PART.x` with a local `chat`): a reach past
    the chat screen into one of its widgets."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)):
            continue
        screen = node.value.value
        if (isinstance(screen, ast.Attribute) and screen.attr in ("chat", "_chat")) or (
            isinstance(screen, ast.Name) and screen.id == "chat"
        ):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_app_tells_the_chat_screen_through_its_methods() -> None:
    source = (UI / "app.py").read_text(encoding="utf-8")
    assert _into_the_chat_screens_parts(ast.parse(source)) == []


def test_the_reach_finder_finds_a_reach() -> None:
    """The finder above is not blind: the three reaches the issue names are found."""
    reaches = "self.chat.status.read_only = True\nself._chat.composer.disabled = True\nchat.composer.prompt_history.prompts"
    assert len(_into_the_chat_screens_parts(ast.parse(reaches))) == 3


def test_the_chat_is_a_chat_host_and_the_trajectory_app_a_session_host() -> None:
    from app.agent.runtime import catalog_from
    from app.ui.contract import ChatHost, SessionHost, chat_host, session_host

    chat = ToolscopeApp(ChatOptions(catalog_from(None), "offline/demo"))
    trajectory = TrajectoryApp()
    assert isinstance(chat, ChatHost) and chat_host(chat) is chat
    assert isinstance(trajectory, SessionHost) and session_host(trajectory) is trajectory
    assert trajectory.session_advanced is None and trajectory.view() is None  # no session browsed yet
    with pytest.raises(TypeError):
        chat_host(trajectory)

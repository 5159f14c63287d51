"""The live suite talks to the real DeepSeek API: every test marked `live` is skipped at collection
unless `DEEPSEEK_API_KEY` is set (never faked with a stand-in server). See docs/live-tests.md."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.session.store import SessionStore, SessionWriter

KEY_ENV = "DEEPSEEK_API_KEY"
SKIP_REASON = f"{KEY_ENV} is not set: the live DeepSeek tests need a real key and the internet"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(KEY_ENV, "").strip():
        return
    skip = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        if item.get_closest_marker("live") is not None:
            item.add_marker(skip)


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[SessionWriter]:
    """A new session in a real store under tmp_path, written exactly as the app writes it."""
    session_writer = SessionStore(tmp_path / "sessions").create(tmp_path)
    yield session_writer
    session_writer.close()

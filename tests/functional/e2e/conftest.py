"""Fixtures of the end-to-end suite: every test gets its own data dir, config and workspace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app import i18n
from tests.functional.e2e.harness import Workbench


@pytest.fixture
def bench(tmp_path: Path) -> Workbench:
    return Workbench(tmp_path)


@pytest.fixture
def english() -> Iterator[None]:
    """The interface language of this process set to English for the test: what it expects is
    worded as a subprocess run with `--lang en` words it."""
    previous = i18n.current_language()
    i18n.set_language("en")
    yield
    i18n.set_language(previous)

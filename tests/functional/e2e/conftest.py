"""Fixtures of the end-to-end suite: every test gets its own data dir, config and workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.functional.e2e.harness import Workbench


@pytest.fixture
def bench(tmp_path: Path) -> Workbench:
    return Workbench(tmp_path)

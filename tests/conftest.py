"""Suite-wide set-up: snapshots in the top-level `snapshots/` folder (docs/architecture.md §1), and a private data
dir so no test touches the developer's own sessions or config."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from pytest_textual_snapshot import SVGImageExtension
from syrupy.location import PyTestLocation

SNAPSHOTS = Path(__file__).resolve().parent.parent / "snapshots"


def _snapshot_dirname(cls: type[SVGImageExtension], *, test_location: PyTestLocation) -> str:
    """`snapshots/<test module>/` instead of `__snapshots__/` beside each test file."""
    return str(SNAPSHOTS / test_location.basename)


SVGImageExtension.dirname = classmethod(_snapshot_dirname)  # type: ignore[method-assign,assignment]

# No test may read or write the developer's own sessions or config: unless a test sets its own, the
# data dir is a fresh temporary one and no config file is named.
_PRIVATE_HOME = tempfile.mkdtemp(prefix="toolscope-tests-home-")
atexit.register(shutil.rmtree, _PRIVATE_HOME, True)
os.environ["TOOLSCOPE_HOME"] = _PRIVATE_HOME
os.environ.pop("TOOLSCOPE_CONFIG", None)

# The offline model paces its stream for people watching; tests (and the commands they start in
# subprocesses, which inherit the environment) want it at full speed.
os.environ.setdefault("TOOLSCOPE_OFFLINE_DELAY", "0")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `slow(seconds=N)` run first, the longest first: with `--maxschedchunk=1`
    (pyproject) pytest-xdist hands each worker one test at a time in this order, so the two workers
    start on the long ones and end together on short ones, instead of one idling while the other
    runs a long test it was handed last."""

    def seconds(item: pytest.Item) -> float:
        marker = item.get_closest_marker("slow")
        return marker.kwargs["seconds"] if marker else 0.0

    items.sort(key=seconds, reverse=True)


@pytest.fixture(autouse=True)
def _cold_offline_cache() -> None:
    """The offline model's simulated prompt cache lives in the data dir, as a provider's outlives a
    process: each test starts with it empty, as a fresh account, so no test's usage figures depend
    on the tests the same worker ran before."""
    from app.llm.offline.transport import OFFLINE_CACHE_FILE

    (Path(os.environ["TOOLSCOPE_HOME"]) / "cache" / OFFLINE_CACHE_FILE).unlink(missing_ok=True)

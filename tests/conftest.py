"""Suite-wide set-up: Textual snapshots live in the top-level `snapshots/` folder (DESIGN §1)."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_textual_snapshot import SVGImageExtension
from syrupy.location import PyTestLocation

SNAPSHOTS = Path(__file__).resolve().parent.parent / "snapshots"


def _snapshot_dirname(cls: type[SVGImageExtension], *, test_location: PyTestLocation) -> str:
    """`snapshots/<test module>/` instead of `__snapshots__/` beside each test file."""
    return str(SNAPSHOTS / test_location.basename)


SVGImageExtension.dirname = classmethod(_snapshot_dirname)  # type: ignore[method-assign,assignment]

# The offline model paces its stream for people watching; tests (and the commands they start in
# subprocesses, which inherit the environment) want it at full speed.
os.environ.setdefault("TOOLSCOPE_OFFLINE_DELAY", "0")

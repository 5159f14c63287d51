"""A session for the Trajectory tests, written by the real agent through `toolscope run`:
the offline model, plugins switched between turns (one tool added; two added; three removed),
a real MCP server that swaps its tools during a call, a failing tool call, and a provider on a
loopback socket that always answers 503 (a request error, a retry, another error).

It is built once per test process (`toolscope run` six times costs seconds) and copied per test,
with ids, times and paths made fixed for the pictures.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from app.trajectory.source import SessionFileSource
from app.ui.trajectory.app import TrajectoryApp
from app.ui.trajectory.screen import TrajectoryScreen
from tests.functional.e2e.harness import KEY, KEY_ENV, TOOLS_SERVER, RouteSpec, route_table
from tests.functional.ui.chat_support import until
from tests.support.failing_provider import failing_provider
from tests.support.screen import screen_cells

TOOLSCOPE = Path(sys.executable).parent / "toolscope"
SESSION_ID = "trajectory-demo"
FAILING_ROUTE = "loop/unavailable"
CREATED_AT = 1_764_590_400_000  # 2025-12-01 12:00 UTC
LAST_ACTIVE_NS = 1_764_594_000 * 10**9  # an hour later


def _config(root: Path, name: str, *, plugins: list[str] = (), mcp: bool = False, base_url: str = "") -> Path:  # type: ignore[assignment]
    lines = ["[plugins]", f"enabled = {json.dumps(list(plugins))}", ""]
    if mcp:
        lines += ["[mcp.servers.lab]", f"command = {json.dumps(sys.executable)}", f"args = {json.dumps([str(TOOLS_SERVER)])}", ""]
    if base_url:
        table: dict[str, Any] = route_table(base_url, RouteSpec(FAILING_ROUTE)) | {"max_retries": 1, "retry_base_delay": 0.01}
        lines += ["[[routes]]", *(f"{key} = {json.dumps(value)}" for key, value in table.items()), ""]
    path = root / f"{name}.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _run(home: Path, workspace: Path, config: Path, prompt: str, *more: str) -> None:
    env = {key: value for key, value in os.environ.items() if key not in ("LC_ALL", "LC_MESSAGES", "LANG")}
    env.update(TOOLSCOPE_HOME=str(home), TOOLSCOPE_CONFIG=str(config), LANG="C.UTF-8", TOOLSCOPE_OFFLINE_DELAY="0")
    env[KEY_ENV] = KEY
    subprocess.run(
        [str(TOOLSCOPE), "run", *more, prompt], cwd=workspace, env=env, capture_output=True, timeout=120, check=False
    )


@functools.cache
def _built() -> str:
    root = Path(tempfile.mkdtemp(prefix="toolscope-trajectory-"))
    atexit.register(shutil.rmtree, root, True)
    home, workspace = root / "home", root / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "README.md").write_text("# Demo project\n", encoding="utf-8")
    plain = _config(root, "plain")
    _run(home, workspace, plain, "hello")
    (path,) = (home / "sessions").glob("*.jsonl")
    session = ["--session", str(path)]
    _run(home, workspace, _config(root, "one", plugins=["calculator"]), "use calculate on 6*7", *session)
    two = _config(root, "two", plugins=["calculator", "clock"])
    _run(home, workspace, two, "use read_file on README.md and then use read_file on nope.md", *session)
    _run(home, workspace, _config(root, "lab", mcp=True), "use lab__swap_tools", *session)
    _run(home, workspace, plain, "thanks", *session)
    with failing_provider(503, "The service is overloaded", "server_error") as base_url:
        failing = _config(root, "failing", base_url=base_url)
        _run(home, workspace, failing, "are you there?", "--route", FAILING_ROUTE, *session)
    return _normalized(path.read_text(encoding="utf-8"), workspace)


def _normalized(log: str, workspace: Path) -> str:
    """The log with what differs between runs made fixed (the id, the creation time, the
    workspace path, message ids), so pictures of it are the same every time."""
    log = log.replace(str(workspace), "/home/me/project")
    counter = iter(range(1, 1000))
    log = re.sub(r'"([ud])-[0-9a-f]{12}"', lambda match: f'"{match.group(1)}-{next(counter):012d}"', log)
    first, rest = log.split("\n", 1)
    header = json.loads(first)
    header.update(id=SESSION_ID, createdAt=CREATED_AT)
    return json.dumps(header, separators=(",", ":")) + "\n" + rest


def trajectory_session(home: Path) -> Path:
    """A fresh copy of the built session in `home`'s sessions dir, as `trajectory-demo.jsonl`."""
    target = home / "sessions" / f"{SESSION_ID}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(_built(), encoding="utf-8")
    target.chmod(0o600)
    os.utime(target, ns=(LAST_ACTIVE_NS, LAST_ACTIVE_NS))
    return target


async def trajectory_cells(path: Path) -> list[tuple[str, str]]:
    """The Trajectory of `path` as a user sees it once validated, the last turn's rows all
    expanded (the trajectory opens on it), its JSON in the detail pane: the screen's cells."""
    from app.ui.trajectory.detail import TrajectoryDetail

    async with TrajectoryApp(SessionFileSource.open(path)).run_test(size=(120, 34)) as pilot:
        await until(pilot, lambda: isinstance(pilot.app.screen, TrajectoryScreen) and pilot.app.screen.loaded)
        await until(pilot, lambda: pilot.app.screen.source.session.validated)
        await pilot.press("shift+space")
        await pilot.app.workers.wait_for_complete()
        screen = pilot.app.screen
        detail = screen.query_one(TrajectoryDetail)
        await until(pilot, lambda: f'"seq": {screen.current_entry.seq},' in detail.content.plain)
        await pilot.pause()
        return screen_cells(pilot.app)

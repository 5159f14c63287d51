"""`toolscope cost` (issue 27 item 5): its per-route misses agree with the inspector request by
request on DESIGN §5's worked example, and on the offline route its estimate is held to the offline
model's simulated prompt cache, on a session built through `toolscope run`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from app.cli import _build_parser
from app.commands.cost import run as run_cost
from app.commands.inspect import run as run_inspect
from app.session.session import Session
from tests.functional.e2e.harness import TOOLS_SERVER
from tests.functional.test_inspect import worked_example, write_session

TOOLSCOPE = Path(sys.executable).parent / "toolscope"
TEXTUAL_BREAKS = {"new-sequence", "tools-changed", "deferred-tool-loaded", "system-changed", "history-rewritten"}


def command_json(capsys: pytest.CaptureFixture[str], handler, *argv: str) -> dict:  # type: ignore[no-untyped-def]
    assert handler(_build_parser().parse_args([*argv, "--json"])) == 0
    return json.loads(capsys.readouterr().out)


def test_the_worked_example_costs_match_the_inspectors_prefix_results_request_by_request(tmp_path, capsys) -> None:
    log, _developer = worked_example()
    path = str(write_session(log, tmp_path / "sessions"))
    inspected = command_json(capsys, run_inspect, "inspect", path)
    cost = command_json(capsys, run_cost, "cost", path)
    assert cost["requests"] == len(inspected["requests"]) == 6
    for totals in cost["routes"]:
        route = totals["route"]
        per_request = [request["routes"][route] for request in inspected["requests"]]
        causes = Counter(item["cache"]["cause"] for item in per_request if item["cache"]["cause"])
        assert totals["misses"] == dict(causes), route
        assert totals["hits"] == sum(item["cache"]["hit"] for item in per_request), route
        # Every prefix the inspector finds broken is a textual miss here, and nothing else is.
        broken = sum(not item["prefix_kept"] for item in per_request)
        assert broken == sum(count for cause, count in causes.items() if cause in TEXTUAL_BREAKS), route
    by_route = {totals["route"]: totals for totals in cost["routes"]}
    # DESIGN §5: in-history keeps every prefix; addition-only breaks once (−grep); none twice (+time
    # is declared up front, then −grep) and a third time when grep comes back.
    assert by_route["anthropic/claude-sonnet"]["misses"] == {"initial": 1}
    assert by_route["deepseek/deepseek-flash"]["misses"] == {"initial": 1, "tools-changed": 2}
    assert by_route["openai/gpt"]["misses"] == {"initial": 1, "tools-changed": 3}


def _config(root: Path, name: str, *, plugins: list[str], mcp: bool = False) -> Path:
    """The offline route declares additions deferred and drops removals (addition-only): some
    changes keep its prefix, the removals break it."""
    lines = ["[plugins]", f"enabled = {json.dumps(plugins)}", ""]
    lines += ["[[routes]]", 'id = "offline/demo"', 'tool_update = "addition-only"', ""]
    if mcp:
        lines += ["[mcp.servers.lab]", f"command = {json.dumps(sys.executable)}", f"args = {json.dumps([str(TOOLS_SERVER)])}", ""]
    path = root / f"{name}.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _toolscope(home: Path, workspace: Path, config: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("LC_ALL", "LC_MESSAGES", "LANG")}
    env.update(TOOLSCOPE_HOME=str(home), TOOLSCOPE_CONFIG=str(config), LANG="C.UTF-8", TOOLSCOPE_OFFLINE_DELAY="0")
    result = subprocess.run([str(TOOLSCOPE), *argv], cwd=workspace, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result


@pytest.mark.slow(seconds=10)
def test_the_offline_routes_estimate_is_within_5_percent_of_what_its_simulated_cache_served(tmp_path) -> None:
    """A plugin switched on, off and on again, and an MCP server that swaps its tools during a call,
    each turn a `toolscope run` of its own, all on the offline route (addition-only)."""
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "README.md").write_text("# A project\n\nWith a README to read.\n", encoding="utf-8")
    plain = _config(tmp_path, "plain", plugins=[])
    calculator = _config(tmp_path, "calculator", plugins=["calculator"])
    turns = [
        (plain, "hello"),
        (calculator, "use calculate on 6*7"),
        (plain, "use read_file on README.md"),
        (calculator, "use calculate on 2**10"),
        (_config(tmp_path, "lab", plugins=["calculator"], mcp=True), "use lab__swap_tools"),
        (plain, "thanks"),
    ]
    config, prompt = turns[0]
    _toolscope(home, workspace, config, "run", prompt)
    (session,) = (home / "sessions").glob("*.jsonl")
    for config, prompt in turns[1:]:
        _toolscope(home, workspace, config, "run", "--session", str(session), prompt)
    cost = json.loads(_toolscope(home, workspace, plain, "cost", str(session), "--route", "offline/demo", "--json").stdout)
    (offline,) = cost["routes"]
    assert offline["recorded_requests"] == offline["requests"] >= 8
    # Additions keep the prefix; each removal breaks it (the calculator off, echo removed by the swap,
    # the calculator and the lab server off at the end), and so does the calculator's return,
    # which brings its earlier addition block back into the history.
    assert offline["misses"] == {"initial": 1, "tools-changed": 4}
    recorded_uncached = offline["input_tokens"] - offline["cached_tokens"]
    estimate = offline["estimate_of_recorded"]
    estimated_uncached = estimate["input_tokens"] - estimate["cached_tokens"]
    assert abs(estimated_uncached - recorded_uncached) <= 0.05 * recorded_uncached, (estimated_uncached, recorded_uncached)
    # The inspector's report shows the record beside the estimate on the route that ran each request.
    inspected = json.loads(_toolscope(home, workspace, plain, "inspect", str(session), "--json").stdout)["requests"]
    usages = [request.outcome.usage for request in Session.open(session).load().view().requests]
    for request, usage in zip(inspected, usages, strict=True):
        recorded = request["routes"]["offline/demo"]["cache"]["recorded_tokens"]
        assert recorded == {"input": usage.input, "cached": usage.cache_read, "uncached": usage.input - usage.cache_read}
        assert all(value["cache"]["recorded_tokens"] is None for route, value in request["routes"].items() if route != "offline/demo")
    text = _toolscope(home, workspace, plain, "inspect", str(session), "--route", "offline/demo", "--no-pager").stdout
    assert " ".join(text.split()).count(" uncached · recorded ") == len(usages)  # rows wrap

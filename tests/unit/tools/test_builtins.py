"""Built-in tools on real files: confinement, bounds, approval, run_command's timeout and exit code."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest

from app.tools.approval import ApprovalRequest, AutoApprover
from app.tools.builtins import builtin_tools
from app.tools.command_tool import CommandSettings
from app.tools.file_tools import Workspace
from app.tools.registry import ToolRegistry
from app.tools.tool import NOTICE_BYTES, OutputLimits, ToolContext, ToolErrorCode, ToolOutcome

pytestmark = pytest.mark.anyio


class RecordingApprover:
    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.requests: list[ApprovalRequest] = []

    async def approve(self, request: ApprovalRequest) -> bool:
        self.requests.append(request)
        return self.answer


@pytest.fixture
def root(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    elsewhere = tmp_path / "outside"
    elsewhere.mkdir()
    (elsewhere / "secret.txt").write_text("top secret\n")
    return elsewhere


def registry_for(root: Path, limits: OutputLimits = OutputLimits(), extra_roots=()) -> ToolRegistry:
    workspace = Workspace(root, extra_roots)
    return ToolRegistry(builtins=builtin_tools(workspace, limits, CommandSettings(default_timeout=10)), limits=limits)


async def run(
    registry: ToolRegistry, name: str, approver=None, **arguments
) -> ToolOutcome:
    context = ToolContext(approver or AutoApprover(approve_all=False), call_id="call-1")
    return await registry.execute(name, json.dumps(arguments), context)


def fits(content: str, limits: OutputLimits) -> bool:
    return len(content.encode()) <= limits.max_bytes and len(content.splitlines()) <= limits.max_lines


def test_builtins_come_in_a_fixed_order_with_read_only_flags(root):
    registry = registry_for(root)
    assert [d.name for d in registry.definitions()] == [
        "read_file",
        "list_dir",
        "search_text",
        "write_file",
        "run_command",
    ]
    assert [registry.is_read_only(d.name) for d in registry.definitions()] == [True, True, True, False, False]
    for definition in registry.definitions():
        assert definition.parameters["type"] == "object"


# --- confinement ---------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", ["read_file", "list_dir", "search_text", "write_file"])
async def test_dotdot_and_absolute_paths_outside_are_refused(root, outside, tool):
    arguments = {"pattern": "secret"} if tool == "search_text" else {}
    if tool == "write_file":
        arguments["content"] = "x"
    approver = RecordingApprover(True)
    for path in ("../outside/secret.txt", str(outside / "secret.txt"), str(outside)):
        outcome = await run(registry_for(root), tool, approver, path=path, **arguments)
        assert outcome.is_error
        assert outcome.error_code == ToolErrorCode.PATH_OUTSIDE_WORKSPACE
        assert "outside the workspace" in outcome.content
    assert approver.requests == []  # refused before anyone is asked
    assert (outside / "secret.txt").read_text() == "top secret\n"


async def test_a_symlink_leading_outside_is_refused(root, outside):
    (root / "escape").symlink_to(outside)
    (root / "secret-link.txt").symlink_to(outside / "secret.txt")
    registry = registry_for(root)
    for path in ("escape/secret.txt", "secret-link.txt", "escape"):
        outcome = await run(registry, "read_file", path=path)
        assert outcome.error_code == ToolErrorCode.PATH_OUTSIDE_WORKSPACE
    write = await run(registry, "write_file", RecordingApprover(True), path="escape/new.txt", content="x")
    assert write.error_code == ToolErrorCode.PATH_OUTSIDE_WORKSPACE
    assert not (outside / "new.txt").exists()


async def test_a_symlink_inside_the_workspace_is_fine(root):
    (root / "real.txt").write_text("real\n")
    (root / "alias.txt").symlink_to(root / "real.txt")
    assert (await run(registry_for(root), "read_file", path="alias.txt")).content == "real\n"


async def test_extra_roots_are_allowed(root, outside):
    outcome = await run(registry_for(root, extra_roots=[outside]), "read_file", path=str(outside / "secret.txt"))
    assert outcome.content == "top secret\n"


async def test_search_does_not_follow_symlinks_out(root, outside):
    (root / "inside.txt").write_text("a secret inside\n")
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "dirlink").symlink_to(outside)
    outcome = await run(registry_for(root), "search_text", pattern="secret")
    assert outcome.content == "inside.txt:1: a secret inside"


# --- read_file, list_dir, search_text ------------------------------------------------------------


async def test_read_file_returns_the_content(root):
    (root / "a.txt").write_text("one\ntwo\n")
    assert (await run(registry_for(root), "read_file", path="a.txt")).content == "one\ntwo\n"


async def test_read_file_truncates_by_lines_and_says_how_to_continue(root):
    (root / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 21)))
    limits = OutputLimits(max_bytes=10_000, max_lines=6)  # 5 lines and the notice
    registry = registry_for(root, limits)
    first = await run(registry, "read_file", path="long.txt")
    assert fits(first.content, limits)
    assert first.content == (
        "line 1\nline 2\nline 3\nline 4\nline 5\n"
        "[truncated: showed lines 1-5; call read_file with offset=6 to continue]"
    )
    last = await run(registry, "read_file", path="long.txt", offset=19)
    assert last.content == "line 19\nline 20\n"
    past = await run(registry, "read_file", path="long.txt", offset=30)
    assert "has 20 lines" in past.content


async def test_read_file_truncates_by_bytes(root):
    (root / "wide.txt").write_text("x" * 60 + "\n" + "y" * 60 + "\n")
    limits = OutputLimits(max_bytes=100 + NOTICE_BYTES, max_lines=2000)  # 100 bytes and the notice
    registry = registry_for(root, limits)
    outcome = await run(registry, "read_file", path="wide.txt")
    assert fits(outcome.content, limits)
    assert outcome.content.startswith("x" * 60 + "\n[truncated: showed lines 1-1;")
    one_huge_line = root / "huge.txt"
    one_huge_line.write_text("z" * 1000)
    huge = await run(registry, "read_file", path="huge.txt")
    assert fits(huge.content, limits)
    assert huge.content.startswith("z" * 100 + "\n[truncated: line 1 alone exceeds 100 bytes]")


async def test_read_file_refuses_binary_and_missing_files(root):
    (root / "blob.bin").write_bytes(b"\x89PNG\0\0\0")
    registry = registry_for(root)
    binary = await run(registry, "read_file", path="blob.bin")
    assert binary.error_code == ToolErrorCode.TOOL_FAILED and "binary" in binary.content
    missing = await run(registry, "read_file", path="nope.txt")
    assert missing.error_code == ToolErrorCode.TOOL_FAILED and "does not exist" in missing.content
    directory = await run(registry, "read_file", path=".")
    assert "not a file" in directory.content


async def test_list_dir_sorts_marks_directories_and_truncates(root):
    for name in ("b.txt", "a.txt", "c.txt"):
        (root / name).write_text("")
    (root / "sub").mkdir()
    registry = registry_for(root)
    assert (await run(registry, "list_dir")).content == "a.txt\nb.txt\nc.txt\nsub/"
    small = registry_for(root, OutputLimits(max_bytes=10_000, max_lines=3))
    assert (await run(small, "list_dir", path=".")).content == "a.txt\nb.txt\n[truncated: showing 2 of 4 entries]"


async def test_search_text_reports_path_line_and_text(root):
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("import os\nprint('Hello')\n")
    (root / "notes.md").write_text("hello world\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("hello from git\n")
    registry = registry_for(root)
    assert (await run(registry, "search_text", pattern="hello")).content == "notes.md:1: hello world"
    insensitive = await run(registry, "search_text", pattern="hello", ignore_case=True)
    assert insensitive.content == "notes.md:1: hello world\nsrc/main.py:2: print('Hello')"
    only_python = await run(registry, "search_text", pattern="(?i)hello", glob="*.py")
    assert only_python.content == "src/main.py:2: print('Hello')"
    assert (await run(registry, "search_text", pattern="absent")).content == "no matches"


async def test_search_text_bounds_its_matches_and_rejects_bad_patterns(root):
    (root / "many.txt").write_text("match\n" * 50)
    registry = registry_for(root, OutputLimits(max_bytes=10_000, max_lines=4))
    outcome = await run(registry, "search_text", pattern="match")
    assert outcome.content.splitlines()[:3] == ["many.txt:1: match", "many.txt:2: match", "many.txt:3: match"]
    assert outcome.content.endswith("[truncated: stopped after 3 matches; narrow the pattern, path or glob]")
    bad = await run(registry, "search_text", pattern="(unclosed")
    assert bad.error_code == ToolErrorCode.INVALID_ARGUMENTS


@pytest.mark.parametrize("limits", [OutputLimits(max_bytes=10_000, max_lines=6), OutputLimits(max_bytes=700, max_lines=500)])
async def test_search_text_makes_room_for_what_it_skipped(root, limits):
    """Cut by lines or by bytes, a result that also names skipped entries still fits its limits
    on its own: the registry never has to cut the line that names them."""
    (root / "many.txt").write_text("match\n" * 200)
    (root / "a-loop").symlink_to("a-loop")  # walked first
    outcome = await run(registry_for(root, limits), "search_text", pattern="match")
    assert fits(outcome.content, limits) and "output truncated" not in outcome.content
    lines = outcome.content.splitlines()
    assert lines[-1] == "[skipped: a-loop is a symlink loop]"
    assert lines[-2].startswith("[truncated: stopped after ")
    assert all(line == f"many.txt:{n}: match" for n, line in enumerate(lines[:-2], start=1))


async def test_search_text_names_as_many_skips_as_fit_then_counts_the_rest(root):
    (root / "a.txt").write_text("match\n")
    for number in range(40):
        (root / f"loop-{number:02d}").symlink_to(f"loop-{number:02d}")
    outcome = await run(registry_for(root), "search_text", pattern="match")
    first, last = outcome.content.splitlines()
    assert first == "a.txt:1: match"
    assert last.startswith("[skipped: loop-00 is a symlink loop; loop-01 is a symlink loop;")
    shown = last.count("is a symlink loop")
    assert last.endswith(f"; and {40 - shown} more]") and len(last.encode()) <= NOTICE_BYTES * 2


# --- write_file ----------------------------------------------------------------------------------


async def test_write_file_refused_changes_nothing(root):
    approver = RecordingApprover(False)
    outcome = await run(registry_for(root), "write_file", approver, path="new.txt", content="hello")
    assert outcome.is_error and outcome.error_code == ToolErrorCode.APPROVAL_DENIED
    assert not (root / "new.txt").exists()
    (request,) = approver.requests
    assert request.tool_name == "write_file" and request.call_id == "call-1"
    assert request.summary == "Create new.txt with 5 bytes"
    assert request.detail == "hello"


async def test_write_file_approved_creates_parents_and_overwrites(root):
    approver = RecordingApprover(True)
    registry = registry_for(root)
    created = await run(registry, "write_file", approver, path="deep/er/new.txt", content="v1")
    assert not created.is_error and created.content == "created deep/er/new.txt (2 bytes)"
    overwritten = await run(registry, "write_file", approver, path="deep/er/new.txt", content="v2!")
    assert overwritten.content == "overwrote deep/er/new.txt (3 bytes)"
    assert (root / "deep/er/new.txt").read_text() == "v2!"
    assert approver.requests[1].summary == "Overwrite deep/er/new.txt with 3 bytes"


async def test_headless_approver_refuses_unless_approve_all(root):
    refused = await run(registry_for(root), "write_file", AutoApprover(False), path="a.txt", content="x")
    assert refused.error_code == ToolErrorCode.APPROVAL_DENIED
    allowed = await run(registry_for(root), "write_file", AutoApprover(True), path="a.txt", content="x")
    assert not allowed.is_error and (root / "a.txt").read_text() == "x"


# --- run_command ---------------------------------------------------------------------------------


async def test_run_command_refused_does_not_run(root):
    approver = RecordingApprover(False)
    outcome = await run(registry_for(root), "run_command", approver, command="touch ran.txt")
    assert outcome.error_code == ToolErrorCode.APPROVAL_DENIED
    assert not (root / "ran.txt").exists()
    assert approver.requests[0].detail == "touch ran.txt"
    assert str(root) in approver.requests[0].summary


async def test_run_command_combines_output_and_reports_the_exit_code(root):
    approver = RecordingApprover(True)
    registry = registry_for(root)
    ok = await run(registry, "run_command", approver, command="pwd; echo out; echo err >&2")
    assert not ok.is_error
    assert ok.content == f"{root}\nout\nerr\n[exit code 0]"
    failed = await run(registry, "run_command", approver, command="echo partial; exit 3")
    assert failed.is_error and failed.error_code == ToolErrorCode.COMMAND_FAILED
    assert failed.error_message == "exit code 3"
    assert failed.content == "partial\n[exit code 3]"


async def test_run_command_uses_bash(root):
    outcome = await run(registry_for(root), "run_command", AutoApprover(True), command="[[ -n $BASH_VERSION ]] && echo bash")
    assert outcome.content == "bash\n[exit code 0]"


async def test_run_command_times_out_and_kills_the_whole_group(root):
    started = time.monotonic()
    outcome = await run(
        registry_for(root),
        "run_command",
        AutoApprover(True),
        command="sleep 30 & echo $!; wait",
        timeout_seconds=0.5,
    )
    assert time.monotonic() - started < 5
    assert outcome.is_error and outcome.error_code == ToolErrorCode.TOOL_TIMEOUT
    assert "timed out after 0.5 s" in outcome.content
    child = int(outcome.content.splitlines()[0])
    # SIGKILL takes effect when the child is next scheduled: on a busy machine, a moment later.
    # Without the group kill it would run for 30 s.
    gone_by = time.monotonic() + 10
    while running(child) and time.monotonic() < gone_by:
        await anyio.sleep(0.05)
    assert not running(child)


def running(pid: int) -> bool:
    """Whether `pid` is alive; a killed zombie that nobody reaped yet counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def test_run_command_output_is_bounded(root):
    limits = OutputLimits(max_bytes=1000 + 2 * NOTICE_BYTES, max_lines=2000)
    registry = registry_for(root, limits)
    outcome = await run(registry, "run_command", AutoApprover(True), command="head -c 200000 /dev/zero | tr '\\0' 'a'")
    assert fits(outcome.content, limits)
    assert outcome.content.startswith("a" * 1000 + "\n[output truncated: 200000 bytes in all")
    assert outcome.content.endswith("[exit code 0]")


async def test_run_command_timeout_is_bounded_by_the_schema(root):
    outcome = await run(registry_for(root), "run_command", AutoApprover(True), command="true", timeout_seconds=10_000)
    assert outcome.error_code == ToolErrorCode.INVALID_ARGUMENTS

"""File tools in a hostile workspace, through `toolscope run` on the offline model as a user meets
them: real FIFOs, real symlink loops, a huge one-line file, a real SIGINT.

A run that hangs is given a generous while, then a SIGINT, then a kill: the assertions say which
of those it needed, never how long anything took.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.session.session import Session
from tests.functional.test_run import env  # noqa: F401  (the fixture: a private data dir and config)
from tests.support.rss import peak_rss

TOOLSCOPE = Path(sys.executable).parent / "toolscope"
HANG_LIMIT = 30.0
"""Seconds a run may take before it counts as hung (each finishes in about one second)."""


@dataclass(frozen=True)
class Outcome:
    returncode: int
    stdout: str
    stderr: str
    needed_sigint: bool
    needed_kill: bool


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nneedle in a haystack\n")
    return root


def toolscope_run(env: dict[str, str], cwd: Path, *args: str) -> Outcome:
    """`toolscope run ARGS`; a SIGINT if it hangs, a kill if that does not end it either."""
    process = subprocess.Popen(
        [str(TOOLSCOPE), "run", *args], env=env, cwd=cwd, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    needed_sigint = needed_kill = False
    try:
        out, err = process.communicate(timeout=HANG_LIMIT)
    except subprocess.TimeoutExpired:
        needed_sigint = True
        process.send_signal(signal.SIGINT)
        try:
            out, err = process.communicate(timeout=HANG_LIMIT)
        except subprocess.TimeoutExpired:
            needed_kill = True
            process.kill()
            out, err = process.communicate()
    return Outcome(process.returncode, out, err, needed_sigint, needed_kill)


def tool_results(env: dict[str, str]) -> list[dict[str, object]]:
    (path,) = (Path(env["TOOLSCOPE_HOME"]) / "sessions").glob("*.jsonl")
    return [event.data.model_dump() for event in Session.open(path).events if event.type == "tool/result"]


# --- item 10: FIFOs -------------------------------------------------------------------------------


def test_search_text_skips_a_fifo_and_reports_it(env, workspace):
    os.mkfifo(workspace / "pipe")
    result = toolscope_run(env, workspace, "use search_text on needle")
    assert not result.needed_sigint and not result.needed_kill, result.stderr
    assert result.returncode == 0, result.stderr
    assert "notes.txt:2: needle in a haystack" in result.stdout
    (outcome,) = tool_results(env)
    assert "[skipped: pipe is not a regular file (a FIFO)]" in outcome["content"]


def test_read_file_refuses_a_fifo(env, workspace):
    os.mkfifo(workspace / "pipe")
    result = toolscope_run(env, workspace, "use read_file on pipe")
    assert not result.needed_sigint and result.returncode == 0, result.stderr
    assert "✗ read_file: pipe is not a regular file (a FIFO)" in result.stderr


def test_approved_write_file_onto_a_fifo_fails_instead_of_hanging(env, workspace):
    os.mkfifo(workspace / "pipe")
    result = toolscope_run(env, workspace, "--approve", 'use write_file with {"path": "pipe", "content": "x"}')
    assert not result.needed_sigint and not result.needed_kill, result.stderr
    assert result.returncode == 0, result.stderr
    assert "✗ write_file: pipe is not a regular file (a FIFO)" in result.stderr


def test_approved_write_file_onto_a_fifo_with_a_reader_writes_nothing(env, workspace):
    """A reader holding the FIFO open lets a non-blocking open succeed; fstat still refuses it."""
    fifo = workspace / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        result = toolscope_run(env, workspace, "--approve", 'use write_file with {"path": "pipe", "content": "x"}')
        assert os.read(reader, 10) == b""
    finally:
        os.close(reader)
    assert not result.needed_sigint and result.returncode == 0, result.stderr
    assert "✗ write_file: pipe is not a regular file (a FIFO)" in result.stderr


BLOCKED_TOOL_THREAD = textwrap.dedent(
    """
    import asyncio, os, sys
    from app.tools.threads import run_in_daemon_thread

    async def main(fifo):
        print("started", flush=True)
        await run_in_daemon_thread(open, fifo, "rb")   # blocks: nobody opens the FIFO for writing

    try:
        asyncio.run(main(sys.argv[1]))
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    """
)


def test_a_tool_thread_blocked_for_ever_does_not_keep_the_process_alive(tmp_path):
    """The guard behind the FIFO checks: after Ctrl+C the process exits although the thread is
    still blocked in `open()` (a real FIFO, a real SIGINT)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    process = subprocess.Popen(
        [sys.executable, "-c", BLOCKED_TOOL_THREAD, str(fifo)],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline() == "started\n"
    process.send_signal(signal.SIGINT)
    try:
        out, err = process.communicate(timeout=HANG_LIMIT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail("the blocked tool thread kept the process alive after SIGINT")
    assert process.returncode == 0 and out == "interrupted\n", err


# --- item 11: symlink loops -----------------------------------------------------------------------


@pytest.fixture
def looped(workspace: Path) -> Path:
    """A workspace with a two-link loop at the top and a self-loop in a subdirectory."""
    (workspace / "a").symlink_to("b")
    (workspace / "b").symlink_to("a")
    sub = workspace / "sub"
    sub.mkdir()
    (sub / "self").symlink_to("self")
    (sub / "more.txt").write_text("another needle\n")
    return workspace


def test_search_text_skips_symlink_loops_and_searches_the_rest(env, looped):
    result = toolscope_run(env, looped, "use search_text on needle")
    assert result.returncode == 0 and not result.needed_sigint, result.stderr
    (outcome,) = tool_results(env)
    assert not outcome["is_error"], outcome
    content = outcome["content"]
    assert "notes.txt:2: needle in a haystack" in content and "sub/more.txt:1: another needle" in content
    assert "[skipped: " in content
    for name in ("a", "b", "sub/self"):
        assert f"{name} is a symlink loop" in content


def test_read_file_and_list_dir_name_a_symlink_loop_clearly(env, looped):
    read = toolscope_run(env, looped, "use read_file on a")
    assert read.returncode == 0 and "Traceback" not in read.stderr
    assert "✗ read_file: a is a symlink loop" in read.stderr
    listed = toolscope_run(env, looped, "use list_dir on sub")
    assert listed.returncode == 0 and "more.txt" in listed.stdout and "self" in listed.stdout
    loop_dir = toolscope_run(env, looped, "use list_dir on b")
    assert "✗ list_dir: b is a symlink loop" in loop_dir.stderr


# --- item 12: memory of read_file -----------------------------------------------------------------

def one_line_file(path: Path, size: int) -> None:
    """`size` bytes without a newline: text at the start, the rest a sparse hole (no disk used)."""
    with path.open("wb") as handle:
        handle.write(b"x" * 16384)
        handle.truncate(size)


def test_read_file_memory_stays_bounded_on_a_huge_single_line(env, workspace):
    size = 256 * 1024 * 1024
    one_line_file(workspace / "huge.txt", size)
    def run_measured(prompt: str) -> tuple[int, int]:
        return peak_rss([str(TOOLSCOPE), "run", prompt], env=env, cwd=workspace)

    small_code, small_rss = run_measured("use read_file on notes.txt")
    head_code, head_rss = run_measured("use read_file on huge.txt")
    past_code, past_rss = run_measured('use read_file with {"path": "huge.txt", "offset": 2}')
    assert small_code == head_code == past_code == 0
    # The same command on a tiny file is the floor; a bounded read adds well under a tenth of
    # the line (the output limit is 64 KiB).
    assert head_rss < small_rss + size // 10, (small_rss, head_rss)
    assert past_rss < small_rss + size // 10, (small_rss, past_rss)
    contents = [outcome["content"] for outcome in all_tool_results(env)]
    assert any(text.startswith("x" * 1000) and "alone exceeds" in text for text in contents)
    assert any("has 1 lines; offset 2 is past the end" in text for text in contents)


def all_tool_results(env: dict[str, str]) -> list[dict[str, object]]:
    results = []
    for path in (Path(env["TOOLSCOPE_HOME"]) / "sessions").glob("*.jsonl"):
        results += [event.data.model_dump() for event in Session.open(path).events if event.type == "tool/result"]
    return results


def test_the_peak_rss_measure_sees_a_big_allocation(env, workspace):
    """The measure itself can fail a test: a child touching 200 MB shows at least that much."""
    touch = "b = bytearray(200 * 1024 * 1024)\nfor i in range(0, len(b), 4096): b[i] = 1"
    code, rss = peak_rss([sys.executable, "-c", touch], env=env, cwd=workspace)
    assert code == 0 and rss >= 200 * 1024 * 1024

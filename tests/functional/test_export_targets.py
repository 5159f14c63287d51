"""Where `toolscope export -o` writes (issue 23, item 5), through the real console command: a
regular file is replaced whole, `-` and the process's own descriptors are written to, a FIFO or a
character device is written through and stays what it was, a symlink is followed, and a socket or a
block device is refused with an error naming it; a reader closing standard output ends the export."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from tests.functional.test_export import KEY, TOOLSCOPE, crafted_log, export, toolscope
from tests.functional.test_export_large_texts import large_log
from tests.functional.test_inspect import write_session

FORMATS = ("md", "html", "json")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def session(home: Path) -> Path:
    return write_session(crafted_log(), home / "sessions")


@pytest.fixture
def out(tmp_path: Path) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def null_device(path: Path) -> Path:
    """A character device node that is the kernel's /dev/null (major 1, minor 3)."""
    os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    return path


def assert_only(folder: Path, *names: str) -> None:
    """No temporary file was left beside the target."""
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)


def environment(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("TOOLSCOPE_CONFIG", "LC_ALL", "LANG")}
    env.update(TOOLSCOPE_HOME=str(home), LANG="C.UTF-8", DEEPSEEK_API_KEY=KEY)
    return env


def test_a_dash_writes_to_standard_output(home, session, out):
    result = subprocess.run(
        [str(TOOLSCOPE), "export", session.stem, "--format", "md", "-o", "-"],
        capture_output=True, text=True, env=environment(home), cwd=out, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == export(home, session.stem, "md")
    assert_only(out)


@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1", "link to /proc/self/fd/1"])
def test_o_onto_standard_output_prints_the_export_and_replaces_nothing(home, session, out, name):
    if name.startswith("link"):
        target = out / "stdout"
        target.symlink_to("/proc/self/fd/1")
    else:
        target = Path(name)
    before = os.lstat(target)
    result = toolscope(home, "export", session.stem, "--format", "html", "-o", str(target))
    assert result.returncode == 0, result.stderr
    assert result.stdout == export(home, session.stem, "html")
    after = os.lstat(target)
    assert stat.S_ISLNK(after.st_mode) and (after.st_ino, after.st_dev) == (before.st_ino, before.st_dev)


def test_o_dev_stdout_appends_to_a_file_standard_output_appends_to(home, session, out):
    """The descriptor is written to, as a shell's `>/dev/stdout` does: the file `>>` opened keeps
    what it held and gains the export; nothing is opened anew, truncated or replaced."""
    log = out / "log.txt"
    log.write_text("earlier line\n")
    env = environment(home)
    with log.open("a") as appended:
        result = subprocess.run(
            [str(TOOLSCOPE), "export", session.stem, "--format", "json", "-o", "/dev/stdout"],
            stdout=appended, stderr=subprocess.PIPE, text=True, env=env, timeout=120,
        )
    assert result.returncode == 0, result.stderr
    expected = subprocess.run(
        [str(TOOLSCOPE), "export", session.stem, "--format", "json"],
        capture_output=True, text=True, env=env, timeout=120,
    ).stdout
    assert log.read_text() == "earlier line\n" + expected
    assert_only(out, "log.txt")


def test_o_onto_a_fifo_writes_through_it(home, session, out):
    fifo = out / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as reader:
            received.append(reader.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    result = toolscope(home, "export", session.stem, "--format", "html", "-o", str(fifo))
    reader.join(timeout=60)  # a guard against a hang, not a timing: the write ends the read
    assert result.returncode == 0, result.stderr
    assert received == [export(home, session.stem, "html").encode()]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert_only(out, "pipe")


@pytest.mark.parametrize("fmt", FORMATS)
def test_o_onto_a_character_device_writes_through_it(home, session, out, fmt):
    device = null_device(out / "null")
    result = toolscope(home, "export", session.stem, "--format", fmt, "-o", str(device))
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
    mode = os.lstat(device)
    assert stat.S_ISCHR(mode.st_mode) and mode.st_rdev == os.makedev(1, 3)
    assert_only(out, "null")


def test_o_onto_a_symlink_to_a_special_file_writes_through_and_keeps_both(home, session, out):
    device = null_device(out / "null")
    link = out / "export.html"
    link.symlink_to(device)
    result = toolscope(home, "export", session.stem, "--format", "html", "-o", str(link))
    assert result.returncode == 0, result.stderr
    assert os.readlink(link) == str(device)
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert_only(out, "null", "export.html")


def test_o_onto_a_symlink_to_a_regular_file_replaces_the_file_and_keeps_the_link(home, session, out, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "export.md"
    target.write_text("old")
    link = out / "latest.md"
    link.symlink_to(target)
    result = toolscope(home, "export", session.stem, "--format", "md", "-o", str(link))
    assert result.returncode == 0, result.stderr
    assert os.readlink(link) == str(target)
    assert target.read_text(encoding="utf-8") == export(home, session.stem, "md")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert_only(out, "latest.md")
    assert_only(elsewhere, "export.md")


def test_o_onto_a_dangling_symlink_creates_its_target(home, session, out):
    link = out / "latest.json"
    link.symlink_to(out / "made.json")
    result = toolscope(home, "export", session.stem, "--format", "json", "-o", str(link))
    assert result.returncode == 0, result.stderr
    assert os.readlink(link) == str(out / "made.json")
    assert (out / "made.json").read_text(encoding="utf-8") == export(home, session.stem, "json")
    assert_only(out, "latest.json", "made.json")


def test_o_onto_a_socket_or_a_block_device_is_refused_naming_it(home, session, out):
    listening = socket.socket(socket.AF_UNIX)
    sock = out / "sock"
    listening.bind(str(sock))
    block = out / "disk"
    os.mknod(block, stat.S_IFBLK | 0o600, os.makedev(7, 200))  # never opened
    try:
        for target, kind in ((sock, "a socket"), (block, "a block device")):
            result = toolscope(home, "export", session.stem, "--format", "md", "-o", str(target))
            assert result.returncode == 1 and result.stdout == ""
            assert result.stderr == f"toolscope: error: cannot write {target}: it is {kind}\n"
        assert stat.S_ISSOCK(os.lstat(sock).st_mode) and stat.S_ISBLK(os.lstat(block).st_mode)
        assert_only(out, "sock", "disk")
    finally:
        listening.close()


def test_a_reader_that_closes_standard_output_ends_the_export_quietly(home, out):
    """`toolscope export … | head -c 100`: the export stops (exit 0, nothing on stderr) rather than
    failing, or making the rest of a long session's export for no one."""
    session = write_session(large_log(), home / "sessions")
    child = subprocess.Popen(
        [str(TOOLSCOPE), "export", session.stem, "--format", "html"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment(home),
    )
    assert child.stdout is not None and child.stderr is not None
    assert child.stdout.read(100).startswith(b"<!DOCTYPE html>")
    child.stdout.close()  # more than a pipe's buffer is still to come
    assert child.wait(timeout=120) == 0
    assert child.stderr.read() == b""

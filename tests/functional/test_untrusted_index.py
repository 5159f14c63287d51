"""The index cache beside a session (`X.jsonl.idx`) is untrusted input (issue 23, item 3): it
travels with copies and anyone can damage it. Whatever lies in its place — a damaged or foreign
cache, a FIFO, a directory, a symlink — every command prints what it prints with no cache at all,
within a bounded time, and never blames the cache's fault on the session file. A session edited in
place with its mtime restored is read again, not vouched for by the old record."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.session.events import encode_event, encode_header
from app.session.line_index import INDEX_MAGIC, index_path
from app.session.session import Session
from tests.functional.ui.trajectory_support import TOOLSCOPE, trajectory_cells, trajectory_session
from tests.support.commands import Outcome, run_cli
from tests.support.histories import GeneratedLog, session_logs
from tests.support.index_cache import IndexCache

pytestmark = pytest.mark.anyio

COMMANDS = (
    ("inspect", "--json"),
    ("inspect", "--no-pager"),
    ("inspect", "--no-pager", "--request", "1"),
    ("export", "--format", "json"),
    ("export", "--format", "md"),
)
LIMIT = 30.0
"""Seconds a command may take on these small sessions before it counts as hung."""


def _outputs(path: Path, place: Callable[[], None]) -> list[Outcome]:
    """What each reading command prints for `path`, with `place()` putting the cache's stand-in
    in place before each one."""
    printed = []
    for command, *options in COMMANDS:
        place()
        printed.append(run_cli(command, str(path), *options, limit=LIMIT))
    return printed


def _no_cache(path: Path) -> Callable[[], None]:
    return lambda: _remove(index_path(path))


def _remove(target: Path) -> None:
    if target.is_dir() and not target.is_symlink():
        target.rmdir()
    else:
        target.unlink(missing_ok=True)


def _cache_bytes(path: Path) -> bytes:
    """The cache toolscope saves for `path` as it is now."""
    _remove(index_path(path))
    Session.open(path).load()
    return index_path(path).read_bytes()


def _leftovers(path: Path) -> list[str]:
    return sorted(entry.name for entry in path.parent.iterdir() if entry.name.endswith(".tmp"))


# --- damage a reader must catch ---------------------------------------------------------------------


def _field_edit(cache: IndexCache, draw: st.DrawFn) -> None:
    """One field of the cache changed, as a disk or another program might."""
    field = draw(st.sampled_from(["meta", "codes", "type", "offset", "section"]))
    if field == "meta":
        key = draw(st.sampled_from(sorted(cache.meta)))
        cache.meta[key] = draw(st.one_of(st.integers(-1, 2**40), st.text(max_size=3), st.none(), st.just([1])))
    elif field == "codes" and cache.meta["codes"]:
        # Still adding up to `count`: one code's lines moved to another.
        codes = cache.meta["codes"]
        source, target = draw(st.sampled_from(sorted(codes))), draw(st.sampled_from([*sorted(codes), "3", "99"]))
        moved = draw(st.integers(1, max(1, codes[source])))
        codes[source] -= moved
        codes[target] = codes.get(target, 0) + moved
    elif field == "type" and cache.types:
        at = draw(st.integers(0, len(cache.types) - 1))
        cache.types = cache.types[:at] + bytes([draw(st.integers(0, 255))]) + cache.types[at + 1 :]
    elif field == "offset" and cache.offsets:
        at = draw(st.integers(0, len(cache.offsets) // 8 - 1)) * 8
        value = draw(st.integers(0, 2**16)).to_bytes(8, "little")
        cache.offsets = cache.offsets[:at] + value + cache.offsets[at + 8 :]
    elif cache.sections:
        key = draw(st.sampled_from(sorted(cache.sections)))
        raw = cache.sections[key]
        cache.sections[key] = raw[: len(raw) // 2] + draw(st.binary(max_size=8))


@st.composite
def damages(draw: st.DrawFn) -> tuple[str, object]:
    """What lies where the cache should be: (a kind, what the kind needs)."""
    kind = draw(st.sampled_from(["bytes", "magic", "flip", "cut", "field", "fifo", "directory", "symlink"]))
    if kind == "bytes":
        return kind, draw(st.binary(max_size=200))
    if kind == "magic":
        return kind, INDEX_MAGIC + draw(st.binary(max_size=200))
    if kind in ("flip", "cut"):
        return kind, draw(st.floats(0, 1)), draw(st.integers(1, 255))
    if kind == "symlink":
        return kind, draw(st.sampled_from(["/dev/zero", "/dev/null", "missing", "other session's cache", "itself"]))
    return kind, None


def _placer(path: Path, damage: tuple[str, object], good: bytes, draw: st.DrawFn) -> Callable[[], None]:
    """A function that puts `damage` in the cache's place (from a good cache `good`) before each
    command; a special file is made once and must still be there, untouched, each time."""
    target = index_path(path)
    kind, *what = damage

    def written(data: bytes) -> Callable[[], None]:
        return lambda: (_remove(target), target.write_bytes(data))

    if kind in ("bytes", "magic"):
        return written(what[0])  # type: ignore[arg-type]
    if kind == "flip":
        share, mask = what
        at = min(len(good) - 1, int(share * len(good)))  # type: ignore[operator]
        return written(good[:at] + bytes([good[at] ^ mask]) + good[at + 1 :])  # type: ignore[operator]
    if kind == "cut":
        return written(good[: int(what[0] * len(good))])  # type: ignore[operator]
    if kind == "field":
        target.write_bytes(good)
        cache = IndexCache.read(path)
        _field_edit(cache, draw)
        cache.write(path, reseal=False)
        return written(target.read_bytes())
    _remove(target)
    if kind == "fifo":
        os.mkfifo(target)
        return lambda: _still(target.is_fifo())
    if kind == "directory":
        target.mkdir()
        return lambda: _still(target.is_dir() and not any(target.iterdir()))
    pointee = {
        "missing": path.with_name("missing.idx"),
        "other session's cache": path.with_name("other.jsonl.idx"),
        "itself": target,
    }.get(what[0], Path(what[0]))  # type: ignore[arg-type]
    target.symlink_to(pointee)
    return lambda: _still(target.readlink() == pointee)


def _still(intact: bool) -> None:
    assert intact, "the file in the cache's place was replaced or written into"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(log=session_logs(), other=session_logs(), damage=damages(), data=st.data())
def test_whatever_lies_in_the_caches_place_every_command_prints_what_it_prints_without_one(
    log: GeneratedLog, other: GeneratedLog, damage: tuple[str, object], data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("untrusted")
    path = folder / "session.jsonl"
    path.write_bytes(encode_header(log.header) + b"".join(map(encode_event, log.events)))
    foreign = folder / "other.jsonl"
    foreign.write_bytes(encode_header(other.header) + b"".join(map(encode_event, other.events)))
    _cache_bytes(foreign)
    expected = _outputs(path, _no_cache(path))

    good = _cache_bytes(path)
    assert _outputs(path, _placer(path, damage, good, data.draw)) == expected
    assert _leftovers(path) == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(log=session_logs(), share=st.floats(0.25, 0.75), byte=st.integers(0, 255), keep_times=st.booleans())
def test_a_byte_changed_mid_file_under_its_cache_reads_as_without_the_cache(
    log: GeneratedLog, share: float, byte: int, keep_times: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The cache was saved for the file before the change; the change keeps the file's size and,
    with `keep_times`, its mtime (`touch -r`). The commands print what they print for the changed
    file with no cache: the same report, or the same refusal naming the line."""
    path = tmp_path_factory.mktemp("changed") / "session.jsonl"
    data = encode_header(log.header) + b"".join(map(encode_event, log.events))
    at = int(share * len(data))
    path.write_bytes(data[:at] + bytes([byte]) + data[at + 1 :])
    expected = _outputs(path, _no_cache(path))

    path.write_bytes(data)
    _cache_bytes(path)
    status = path.stat()
    with open(path, "r+b") as handle:  # in place: the same inode and size
        handle.seek(at)
        handle.write(bytes([byte]))
    if keep_times:
        os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert _outputs(path, lambda: None) == expected


# --- the reproductions, through the console script ---------------------------------------------------


def _toolscope(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The console script; a run that does not end within `LIMIT` seconds fails the test."""
    env = {**os.environ, "TOOLSCOPE_HOME": str(home), "TOOLSCOPE_OFFLINE_DELAY": "0", "NO_COLOR": "1"}
    env.pop("TOOLSCOPE_CONFIG", None)
    try:
        return subprocess.run([str(TOOLSCOPE), *args], capture_output=True, text=True, env=env, timeout=LIMIT, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`toolscope {' '.join(args)}` did not end within {LIMIT} s")


READERS = (("inspect", "--no-pager"), ("inspect", "--json"), ("export", "--format", "json"))


def _printed(home: Path, path: Path) -> list[tuple[int, str, str]]:
    printed = []
    for command, *options in READERS:
        result = _toolscope(home, command, str(path), *options)
        printed.append((result.returncode, result.stdout, result.stderr))
    return printed


@pytest.mark.slow(seconds=8)
@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink to /dev/zero"])
def test_a_special_file_in_the_caches_place_neither_blocks_nor_is_replaced(tmp_path: Path, kind: str) -> None:
    """A FIFO there made `inspect`, `export` and `run --session` block for ever; a directory made
    every open leave a `.tmp` file behind."""
    home = tmp_path / "home"
    path = trajectory_session(home)
    expected = _printed(home, path)
    target = index_path(path)
    _remove(target)
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    else:
        target.symlink_to("/dev/zero")

    assert _printed(home, path) == expected
    continued = _toolscope(home, "run", "--session", str(path), "thanks again")
    assert continued.returncode == 0, continued.stderr
    assert Session.open(path).load().events[-1].type == "turn/end"
    assert target.is_fifo() if kind == "fifo" else target.is_dir() if kind == "directory" else target.is_symlink()
    assert _leftovers(path) == []


@pytest.mark.slow(seconds=6)
@pytest.mark.parametrize("damage", ["codes moved, not resealed", "codes moved, resealed", "a type byte", "an offset", "count", "end"])
def test_a_damaged_cache_gives_the_report_of_no_cache(tmp_path: Path, damage: str) -> None:
    """An altered `codes` map made `inspect` and `export` spin for ever; one changed type byte,
    offset, `count` or `end` gave hangs, tracebacks, wrong reports or an error naming the session."""
    home = tmp_path / "home"
    path = trajectory_session(home)
    _remove(index_path(path))
    expected = _printed(home, path)
    cache = IndexCache.read(path)
    codes = cache.meta["codes"]
    if damage.startswith("codes"):
        first, second = sorted(codes, key=lambda code: -codes[code])[:2]
        codes[first], codes[second] = codes[first] - 1, codes[second] + 1
    elif damage == "a type byte":
        assert cache.types[14] != cache.types[15]
        cache.types = cache.types[:14] + bytes([cache.types[15]]) + cache.types[15:]
    elif damage == "an offset":
        cache.offsets = cache.offsets[:80] + (int.from_bytes(cache.offsets[80:88], "little") + 3).to_bytes(8, "little") + cache.offsets[88:]
    else:
        cache.meta[damage] -= 1
    cache.write(path, reseal=damage.endswith(", resealed"))

    assert _printed(home, path) == expected


def _result_names_another_tool(path: Path) -> int:
    """Make the `calculate` call's result name `read_file` (the same length), in place; its line."""
    lines = path.read_bytes().split(b"\n")
    (number,) = [i for i, line in enumerate(lines, 1) if line.startswith(b'{"type":"tool/result"') and b'"name":"calculate"' in line]
    edited = lines[number - 1].replace(b'"name":"calculate"', b'"name":"read_file"')
    offset = sum(len(line) + 1 for line in lines[: number - 1])
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(edited)
    return number


@pytest.mark.slow(seconds=6)
def test_an_edit_in_place_with_the_mtime_restored_is_refused_with_its_line(tmp_path: Path) -> None:
    """`touch -r` after an edit of the same size: the cached validation record was trusted, so
    `inspect` and `export` accepted a `tool/result` naming another tool than its call, and `run
    --session` appended a turn to it. A copy without the cache was refused, as it should be."""
    home = tmp_path / "home"
    path = trajectory_session(home)
    assert _toolscope(home, "inspect", str(path), "--no-pager").returncode == 0  # validated: a record kept
    assert "validated" in IndexCache.read(path).meta["sections"]
    status = path.stat()
    line = _result_names_another_tool(path)
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert path.stat().st_size == status.st_size and path.stat().st_mtime_ns == status.st_mtime_ns
    before = path.read_bytes()

    runs = [(command, str(path), *options) for command, *options in READERS]
    for args in (*runs, ("run", "--session", str(path), "thanks again")):
        result = _toolscope(home, *args)
        assert result.returncode != 0, (args, result.stdout)
        assert f"{path}:{line}" in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert path.read_bytes() == before


async def test_the_trajectory_with_a_damaged_cache_shows_what_it_shows_without_one(tmp_path: Path) -> None:
    """`view` sat on a blank screen at 100 % CPU on such a cache."""
    path = trajectory_session(tmp_path / "home")
    _remove(index_path(path))
    expected = await trajectory_cells(path)
    cache = IndexCache.read(path)
    codes = cache.meta["codes"]
    first, second = sorted(codes, key=lambda code: -codes[code])[:2]
    codes[first], codes[second] = codes[first] - 1, codes[second] + 1
    cache.types = cache.types[:14] + bytes([cache.types[15]]) + cache.types[15:]
    cache.write(path, reseal=False)

    shown = await trajectory_cells(path)

    assert "are you there" in "".join(char for char, _style in expected)
    assert shown == expected

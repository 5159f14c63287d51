"""`toolscope sessions` against a hostile listing cache and enormous lines (issue 8, items 9 and 13),
through the real command in a subprocess."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from app.session.events import ToolResultData, UserMessageData, encode_event, make_event
from app.session.listing import CACHE_VERSION
from tests.functional.test_cli import _environment, listing, toolscope, write_session
from tests.support.rss import peak_rss

TOOLSCOPE = Path(sys.executable).parent / "toolscope"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def cache_of(home: Path) -> Path:
    return home / "cache" / "sessions-index.json"


# --- item 9: a cache with the wrong types ---------------------------------------------------------

WRONG_VALUES = [
    ("newlines", "many"),
    ("newlines", -3),
    ("size", 1.5),
    ("scanned", None),
    ("created_at", "yesterday"),
    ("created_at", 10**30),
    ("created_at", True),
    ("title", 7),
    ("title", ["a"]),
    ("id", {"x": 1}),
    ("problem", "gremlins"),
    ("problem", 3),
    ("problem", ["unhashable"]),
    ("header_crc", "crc"),
    ("cwd", 3),
    ("route", ["offline/demo"]),
    ("ctime_ns", "now"),
    ("inode", -1),
]


def test_cache_entries_with_wrong_types_are_ignored_and_rebuilt(home: Path) -> None:
    """One session per wrong value, all in one cache: each entry is dropped and rebuilt."""
    names = [f"s{number}" for number in range(len(WRONG_VALUES))]
    for name in names:
        write_session(home, name, user_texts=(f"hello {name}",))
    assert len(listing(home)) == len(names)
    cache = json.loads(cache_of(home).read_text())
    for name, (field, value) in zip(names, WRONG_VALUES):
        cache["files"][f"{name}.jsonl"][field] = value
    cache_of(home).write_text(json.dumps(cache))

    text = toolscope(home, "sessions")
    assert text.returncode == 0 and "Traceback" not in text.stderr, text.stderr
    assert all(f"hello {name}" in text.stdout for name in names)
    rows = sorted((row["id"], row["title"], row["events"]) for row in listing(home))
    assert rows == sorted((name, f"hello {name}", 2) for name in names)
    rebuilt = json.loads(cache_of(home).read_text())["files"]
    for name, (field, value) in zip(names, WRONG_VALUES):
        assert rebuilt[f"{name}.jsonl"][field] != value, (name, field)


@pytest.mark.parametrize(
    "payload",
    [
        f'{{"version": {CACHE_VERSION}, "files": {{"s.jsonl": null}}}}',
        f'{{"version": {CACHE_VERSION}, "files": ["s.jsonl"]}}',
        f'{{"version": {CACHE_VERSION}, "files": {{"s.jsonl": ' + "[" * 100_000 + "]" * 100_000 + "}}",
        '"cache"',
    ],
    ids=["null-entry", "list-of-files", "deeply-nested", "a-string"],
)
def test_a_cache_of_the_wrong_shape_is_ignored(home: Path, payload: str) -> None:
    write_session(home, "s", user_texts=("hello",))
    cache_of(home).parent.mkdir(parents=True)
    cache_of(home).write_text(payload)
    text = toolscope(home, "sessions")
    assert text.returncode == 0 and "Traceback" not in text.stderr and "hello" in text.stdout, text.stderr
    assert json.loads(cache_of(home).read_text())["files"]["s.jsonl"]["title"] == "hello"


# --- issue 23: an edit in place that restores the size and the mtime -------------------------------


def test_an_edit_in_place_with_the_mtime_restored_is_listed_anew(home: Path) -> None:
    path = write_session(home, "s", user_texts=("hello",))
    assert [row["title"] for row in listing(home)] == ["hello"]
    status = path.stat()
    with open(path, "r+b") as handle:  # the same inode and size; `touch -r` restores the mtime
        data = handle.read()
        handle.seek(0)
        handle.write(data.replace(b'"text":"hello"', b'"text":"jello"'))
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))

    assert [row["title"] for row in listing(home)] == ["jello"]


# --- item 13: one enormous line -------------------------------------------------------------------

def sessions_peak_rss(home: Path) -> int:
    """Peak RSS in bytes of a fresh `toolscope sessions --json` (the cache removed first)."""
    cache_of(home).unlink(missing_ok=True)
    returncode, rss = peak_rss([str(TOOLSCOPE), "sessions", "--json"], env=_environment(home))
    assert returncode == 0
    return rss


def one_long_line(path: Path, size: int) -> None:
    """Append a `tool/result` line of about `size` bytes, written without holding it in memory."""
    line = encode_event(make_event("tool/result", 2, 0, ToolResultData(
        turn=1, step=1, call_id="c", name="read_file", content="@", is_error=False
    )))
    before, after = line.split(b"@")
    with path.open("ab") as handle:
        handle.write(before)
        block = b"x" * (1 << 20)
        for _ in range(size >> 20):
            handle.write(block)
        handle.write(after)


def test_a_huge_line_is_scanned_in_bounded_memory(home: Path) -> None:
    """The scan keeps no more than a chunk of a long line, so its work is one pass over the bytes.

    The quadratic scan copied the growing line once per 1 MiB chunk: its memory grows with the
    line (two copies at the end), and so does the work of every step. This counts bytes held, not
    seconds: a fresh listing of a session with a 64 MiB line may hold well under one copy of it
    more than the listing of a small session."""
    write_session(home, "small", user_texts=("hi",))
    floor = sessions_peak_rss(home)
    path = write_session(home, "big", user_texts=("a long one",))
    size = 64 << 20
    one_long_line(path, size)
    peak = sessions_peak_rss(home)
    assert peak < floor + size // 4, (floor, peak)
    rows = {row["id"]: row for row in listing(home)}
    assert (rows["big"]["title"], rows["big"]["events"]) == ("a long one", 3)


def test_a_huge_first_user_message_still_gives_the_title(home: Path) -> None:
    """The title line itself may be long: it is gathered piece by piece and parsed once."""
    path = write_session(home, "long-title")
    text = "word " * (3 << 20)  # 15 MiB in one user message
    with path.open("ab") as handle:
        handle.write(encode_event(make_event("user/message", 2, 0, UserMessageData(id="u9", text=text))))
    result = toolscope(home, "sessions", "--json")
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)
    assert row["title"].startswith("word word") and row["events"] == 2


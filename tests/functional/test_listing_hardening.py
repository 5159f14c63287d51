"""`toolscope sessions` against a hostile listing cache and enormous lines (issue 8, items 9 and 13),
through the real command in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from app.session.events import ToolResultData, UserMessageData, encode_event, make_event
from tests.functional.test_cli import _environment, listing, toolscope, write_session

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
]


@pytest.mark.parametrize(("field", "value"), WRONG_VALUES, ids=[f"{f}={v!r}" for f, v in WRONG_VALUES])
def test_a_cache_entry_with_wrong_types_is_ignored_and_rebuilt(home: Path, field: str, value: Any) -> None:
    write_session(home, "s", user_texts=("hello",))
    assert listing(home)[0]["title"] == "hello"
    cache = json.loads(cache_of(home).read_text())
    cache["files"]["s.jsonl"][field] = value
    cache_of(home).write_text(json.dumps(cache))

    text = toolscope(home, "sessions")
    assert text.returncode == 0 and "Traceback" not in text.stderr, text.stderr
    assert "hello" in text.stdout
    rows = listing(home)
    assert [(row["id"], row["title"], row["events"]) for row in rows] == [("s", "hello", 2)]
    # Rebuilt: the cache holds the right entry again.
    assert json.loads(cache_of(home).read_text())["files"]["s.jsonl"][field] != value


@pytest.mark.parametrize(
    "payload",
    [
        {"version": 1, "files": {"s.jsonl": None}},
        {"version": 1, "files": {"s.jsonl": []}},
        {"version": 1, "files": {"s.jsonl": {}}},
        {"version": 1, "files": ["s.jsonl"]},
        {"version": 1, "files": None},
        {"version": "1", "files": {}},
        [],
        "cache",
        None,
    ],
)
def test_a_cache_of_the_wrong_shape_is_ignored(home: Path, payload: object) -> None:
    write_session(home, "s", user_texts=("hello",))
    cache_of(home).parent.mkdir(parents=True)
    cache_of(home).write_text(json.dumps(payload))
    text = toolscope(home, "sessions")
    assert text.returncode == 0 and "Traceback" not in text.stderr and "hello" in text.stdout, text.stderr
    assert json.loads(cache_of(home).read_text())["files"]["s.jsonl"]["title"] == "hello"


# --- item 13: one enormous line -------------------------------------------------------------------

PEAK_RSS_OF_CHILD = textwrap.dedent(
    """
    import resource, subprocess, sys
    result = subprocess.run(sys.argv[1:], capture_output=True)
    sys.stderr.buffer.write(result.stderr)
    print(result.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
    """
)


def sessions_peak_rss(home: Path) -> int:
    """Peak RSS in bytes of a fresh `toolscope sessions --json` (the cache removed first)."""
    cache_of(home).unlink(missing_ok=True)
    result = subprocess.run(
        [sys.executable, "-c", PEAK_RSS_OF_CHILD, str(TOOLSCOPE), "sessions", "--json"],
        env=_environment(home), capture_output=True, text=True, timeout=300,
    )
    returncode, rss = result.stdout.split()
    assert returncode == "0", result.stderr
    return int(rss)


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


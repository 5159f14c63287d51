"""The listing's line scan (`app.session.listing._scan`): the same answer (line count, title, last
route) as parsing every line of the whole file, however the reads split it and however its lines
are spelt, and work that stays one pass over a line of any length."""

from __future__ import annotations

import io
import json
import random
import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st

from app.session.listing import CHUNK_SIZE, _scan, shorten
from tests.support.spellings import respell


class ShortReads(io.RawIOBase):
    """A file whose reads return the next of `sizes` bytes at most (as a pipe or a slow disk may)."""

    def __init__(self, data: bytes, sizes: list[int]) -> None:
        self._data = data
        self._sizes = sizes
        self._position = 0
        self._turn = 0

    def read(self, size: int = -1) -> bytes:
        step = self._sizes[self._turn % len(self._sizes)]
        self._turn += 1
        piece = self._data[self._position : self._position + min(step, size if size >= 0 else step)]
        self._position += len(piece)
        return piece


def user_line(text: str) -> bytes:
    message = {"type": "user/message", "seq": 1, "data": {"id": "u", "text": text}}
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def request_header_line(route: str, padding: int) -> bytes:
    data = {"reason": "initial", "sequence": 0, "route": route, "system": "s" * padding}
    message = {"type": "request/header", "seq": 3, "data": data}
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def respelt(line: bytes, seed: int) -> bytes:
    """`line` as another program may write it: spaces, escapes, keys in another order, CRLF."""
    return respell(line.rstrip(b"\n"), random.Random(seed)) + b"\n"


WANTED_LINES = st.one_of(
    st.builds(user_line, st.text(min_size=1, max_size=80)),
    st.builds(request_header_line, st.text(min_size=1, max_size=20), st.integers(0, 200)),
)
LINES = st.one_of(
    WANTED_LINES,
    st.builds(lambda n: b'{"type":"tool/result","seq":2,"content":"' + b"x" * n + b'"}\n', st.integers(0, 300)),
    st.builds(lambda n: b'{"type":"user/mess' + b"y" * n + b"\n", st.integers(0, 40)),
    st.just(b"\n"),
    st.builds(respelt, WANTED_LINES, st.integers(0, 2**32 - 1)),
)


def expected(data: bytes, want_title: bool) -> tuple[int, int, str | None, str | None]:
    """What the scan must find, computed the obvious way: every complete line parsed."""
    end = data.rfind(b"\n") + 1
    title = route = None
    for line in data[:end].split(b"\n")[:-1]:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if want_title and title is None and event["type"] == "user/message":
            title = shorten(event["data"]["text"])
        if event["type"] == "request/header":
            route = event["data"]["route"]
    return data.count(b"\n"), end, title, route


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(LINES, max_size=12),
    torn=st.binary(max_size=30).filter(lambda tail: b"\n" not in tail),
    sizes=st.lists(st.integers(1, 64), min_size=1, max_size=5),
    want_title=st.booleans(),
)
def test_the_scan_matches_reading_the_whole_file(lines, torn, sizes, want_title):
    data = b"".join(lines) + torn
    assert _scan(ShortReads(data, sizes), 0, want_title=want_title) == expected(data, want_title)


def test_a_long_line_is_not_held_while_it_grows():
    """Work, not time: the quadratic scan copied the whole growing line for every chunk, so the
    bytes it held grew with the line (twice the line at the end). A linear scan holds a chunk or
    two, whatever the length of a line that is not the title."""
    size = 32 * CHUNK_SIZE
    data = b'{"type":"tool/result","content":"' + b"x" * size + b'"}\n' + user_line("after it")
    handle = io.BytesIO(data)
    tracemalloc.start()
    try:
        result = _scan(handle, 0, want_title=True)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result == (2, len(data), "after it", None)
    assert peak < 4 * CHUNK_SIZE, peak

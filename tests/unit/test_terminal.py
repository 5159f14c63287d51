"""Model and tool text reaches a terminal as visible text only."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.terminal import PrintableStream, json_text, printable, printable_line


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain text\n\twith tab", "plain text\n\twith tab"),
        ("\x1b[31mred\x1b[0m", "red"),
        ("\x1b[2J\x1b[Hcleared", "cleared"),
        ("\x1b]0;evil title\x07after", "after"),
        ("\x1b]52;c;Y2xpcGJvYXJk\x1b\\after", "after"),
        ("\x1bPq#0;2;0;0;0\x1b\\dcs", "dcs"),
        ("bell\x07 back\x08space\r", "bell backspace"),
        ("c1\x9b31mcontrol", "c131mcontrol"),
        ("中文 and émoji 🙂", "中文 and émoji 🙂"),
    ],
)
def test_escape_sequences_and_controls_are_removed(raw: str, shown: str) -> None:
    assert printable(raw) == shown


@pytest.mark.parametrize("cut", range(1, 12))
def test_a_sequence_split_across_deltas_never_leaks(cut: int) -> None:
    text = "ab\x1b[31;1mcd\x1b]0;title\x07ef"
    stream = PrintableStream()
    assert stream.feed(text[:cut]) + stream.feed(text[cut:]) == "abcdef"


def test_an_unfinished_sequence_at_the_end_is_dropped() -> None:
    stream = PrintableStream()
    assert stream.feed("done\x1b[3") == "done"
    stream.reset()
    assert stream.feed("1mnext") == "1mnext"


# --- bidi controls, line breaks, JSON (issue 8 item 4) ----------------------------------------------

HOSTILE_PIECES = [
    "\x1b[2J", "\x1b]0;title\x07", "\x1b]52;c;Y2xpcA==\x1b\\", "\x1b]8;;http://x\x07", "\x1b", "\x9b31m",
    "\x9d0;t\x9c", "\x85", "\u202e", "\u202d", "\u2066", "\u2069", "\u200f", "\u061c", "\u2028", "\r", "\n",
    "\x00", "\x7f",
]  # fmt: skip
"""Escape sequences (CSI, OSC titles, clipboard and links, a bare ESC), C1 controls (CSI, OSC, NEL),
bidi overrides, isolates and marks, line separators, C0 controls."""

BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def is_inert(text: str) -> bool:
    """Nothing a terminal acts on or reorders: no ESC, no C0 but newline and tab, no DEL or C1, no bidi."""
    return not any(
        (ord(char) < 0x20 and char not in "\n\t") or 0x7F <= ord(char) <= 0x9F or char in BIDI for char in text
    )


hostile_text = st.lists(st.one_of(st.sampled_from(HOSTILE_PIECES), st.text(max_size=4)), max_size=12).map("".join)


@given(hostile_text)
@settings(max_examples=200, deadline=None)
def test_printable_output_is_inert_and_one_line_output_has_no_line_break(raw: str) -> None:
    assert is_inert(printable(raw))
    line = printable_line(raw)
    assert is_inert(line) and "\n" not in line


@given(hostile_text)
@settings(max_examples=200, deadline=None)
def test_json_text_is_inert_and_means_the_same(raw: str) -> None:
    text = json_text({"title": raw, "list": [raw]}, indent=2)
    assert is_inert(text)
    assert json.loads(text) == {"title": raw, "list": [raw]}


def test_json_text_keeps_readable_text_readable() -> None:
    assert json_text({"t": "中文 🙂 é"}) == '{"t": "中文 🙂 é"}'
    assert json_text("\x9b\u202e") == '"\\u009b\\u202e"'


def test_bidi_controls_are_removed_and_line_breaks_shown() -> None:
    assert printable("admin\u202e\u2066txt.exe\u2069") == "admintxt.exe"
    assert printable_line('{"a": 1}\ntoolscope: error: fake') == '{"a": 1}↵toolscope: error: fake'
    assert printable_line("one\u2028two") == "one↵two"

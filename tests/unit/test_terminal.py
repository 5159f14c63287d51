"""Model and tool text reaches a terminal as visible text only."""

from __future__ import annotations

import pytest

from app.terminal import PrintableStream, printable


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

"""The key never leaves an adapter inside a provider-sent string (issue 8 item 1): whole, in runs of
12 characters, split by whitespace, split across deltas, or straddling the clip of a message."""

from __future__ import annotations

import re
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from app.llm import redact as redact_module
from app.llm.errors import AUTH, Failure
from app.llm.redact import FRAGMENT, REDACTED, KeyRedactor, redact, redact_message
from app.llm.stream import BlockDelta, BlockEnd, BlockStart, Finish, StreamEvent

KEY = "sk-live-7Qm2ZpR4xW9tLk3VbN8cYd5H"


def key_runs(key: str) -> set[str]:
    """Every run of the key that counts as the key."""
    size = min(FRAGMENT, len(key))
    return {key[i : i + size] for i in range(len(key) - size + 1)}


def leaks(text: str, key: str = KEY) -> bool:
    visible = re.sub("[\\s\u200b]", "", text)
    return any(run in text or run in visible for run in key_runs(key))


def test_the_whole_key_a_run_of_it_and_a_split_key_are_redacted() -> None:
    assert redact(f"Invalid key {KEY}.", KEY) == f"Invalid key {REDACTED}."
    assert redact(f"prefix {KEY[:FRAGMENT]} suffix", KEY) == f"prefix {REDACTED} suffix"
    assert redact(f"key: {KEY[:9]}\n    {KEY[9:20]} {KEY[20:]}!", KEY) == f"key: {REDACTED}!"
    assert redact(f"{KEY[:5]}\u200b{KEY[5:]}", KEY) == REDACTED
    assert redact(f"short runs stay: {KEY[:FRAGMENT - 1]}", KEY) == f"short runs stay: {KEY[:FRAGMENT - 1]}"


def test_a_key_split_by_json_escapes_in_tool_arguments_is_redacted() -> None:
    """Tool arguments stream as JSON text: a newline inside a string is the two characters `\\n`."""
    arguments = '{"path": "' + KEY[:1] + "\\n" + KEY[1:13] + "\\u00a0" + KEY[13:] + '"}'
    assert redact(arguments, KEY) == '{"path": "' + REDACTED + '"}'
    events = [BlockDelta(0, arguments[:12]), BlockDelta(0, arguments[12:30]), BlockDelta(0, arguments[30:])]
    redactor = KeyRedactor(KEY)
    streamed = "".join(
        out.text for event in [*events, BlockEnd(0)] for out in redactor.feed(event) if isinstance(out, BlockDelta)
    )
    assert KEY[1:13] not in streamed.replace("\\n", "").replace("\\u00a0", "")


def test_a_key_straddling_the_clip_is_redacted_before_the_cut() -> None:
    message = "x" * (redact_module.MESSAGE_LIMIT - 10) + KEY
    clipped = redact_message(message, KEY)
    assert len(clipped) == redact_module.MESSAGE_LIMIT and not leaks(clipped)


def stream_of(text: str, cuts: list[int]) -> list[StreamEvent]:
    bounds = [0, *sorted(set(cut % (len(text) + 1) for cut in cuts)), len(text)]
    deltas = [BlockDelta(0, text[a:b]) for a, b in zip(bounds, bounds[1:]) if b > a]
    return [BlockStart(0, "text"), *deltas, BlockEnd(0), Finish("stop")]


def through(redactor: KeyRedactor, events: list[StreamEvent]) -> list[StreamEvent]:
    return [out for event in events for out in redactor.feed(event)]


def shown_text(events: list[StreamEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, BlockDelta))


separators = st.sampled_from(["", " ", "\n", "\r\n  ", "\t", "\u200b"])


@st.composite
def text_with_key(draw: st.DrawFn) -> str:
    """Random text with the key, or a run of it, at a random place, maybe split by separators."""
    before = draw(st.text(max_size=40))
    after = draw(st.text(max_size=40))
    start = draw(st.integers(0, len(KEY) - FRAGMENT))
    end = draw(st.integers(start + FRAGMENT, len(KEY)))
    run = KEY[start:end]
    splits = draw(st.lists(st.tuples(st.integers(1, len(run) - 1), separators), max_size=3))
    for at, separator in sorted(splits, reverse=True):
        run = run[:at] + separator + run[at:]
    return before + run + after


@given(text_with_key(), st.lists(st.integers(0, 200), max_size=8))
@settings(max_examples=150, deadline=None)
def test_streamed_text_never_shows_a_run_of_the_key_however_it_is_cut(text: str, cuts: list[int]) -> None:
    events = through(KeyRedactor(KEY), stream_of(text, cuts))
    assert not leaks(shown_text(events))
    assert REDACTED in shown_text(events)
    assert events[-1] == Finish("stop") and isinstance(events[-2], BlockEnd)


@given(st.text(max_size=80), st.lists(st.integers(0, 200), max_size=8))
@settings(max_examples=150, deadline=None)
def test_text_without_the_key_comes_through_unchanged(text: str, cuts: list[int]) -> None:
    if leaks(text):
        return
    assert shown_text(through(KeyRedactor(KEY), stream_of(text, cuts))) == text


@given(text_with_key(), st.integers(20, 600))
@settings(max_examples=100, deadline=None)
def test_identity_arguments_and_failures_are_redacted_at_any_clip_limit(text: str, limit: int) -> None:
    redactor = KeyRedactor(KEY)
    with patch.object(redact_module, "MESSAGE_LIMIT", limit):
        events = through(
            redactor,
            [
                BlockStart(0, "tool-call", text, text),
                BlockDelta(0, text),
                BlockEnd(0, text, text, text),
                Finish("error", Failure(code=AUTH, message=text)),
            ],
        )
    start, *_deltas, end, finish = events
    assert isinstance(start, BlockStart) and isinstance(end, BlockEnd) and isinstance(finish, Finish)
    assert finish.failure is not None and len(finish.failure.message) <= limit
    for value in (start.call_id, start.name, end.call_id, end.name, end.arguments, finish.failure.message):
        assert value is not None and not leaks(value)
    assert not leaks(shown_text(events))


def test_held_text_comes_out_before_an_error_finish() -> None:
    redactor = KeyRedactor(KEY)
    events = through(redactor, [BlockStart(0, "text"), BlockDelta(0, f"cut off at {KEY[:5]}"), Finish("aborted")])
    assert shown_text(events) == f"cut off at {KEY[:5]}" and events[-1] == Finish("aborted")


def test_without_a_key_events_pass_through_and_failures_are_still_clipped() -> None:
    redactor = KeyRedactor("")
    delta = BlockDelta(0, "anything")
    assert redactor.feed(delta) == [delta]
    (finish,) = redactor.feed(Finish("error", Failure(code=AUTH, message="y" * 2000)))
    assert isinstance(finish, Finish) and finish.failure is not None
    assert len(finish.failure.message) == redact_module.MESSAGE_LIMIT

"""The key never leaves an adapter inside a provider-sent string (issue 8 item 1): whole, in runs of
12 characters, split by whitespace, split across deltas, or straddling the clip of a message. A
value too short or too common to be a secret changes no output, and a tool name or call id is kept
or replaced whole, never in part (issue 23 item 2)."""

from __future__ import annotations

import random
import re
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.export.scrub import Scrubber
from app.llm import redact as redact_module
from app.llm.errors import AUTH, Failure
from app.llm.redact import KeyRedactor, redact_message
from app.llm.routes import Route
from app.llm.stream import BlockDelta, BlockEnd, BlockStart, Finish, StreamEvent
from app.redaction import FRAGMENT, MIN_SECRET_LENGTH, MIN_SECRET_VARIETY, REDACTED, is_secret, redact
from tests.functional.e2e.harness import KEY as E2E_KEY
from tests.functional.test_export import KEY as EXPORT_KEY

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


# --- what counts as a secret (issue 23 item 2) ------------------------------------------------------

PLACEHOLDERS = [
    "x", "k", "EMPTY", "ollama", "lm-studio", "sk-no-key-required", "none", "dummy", "not-needed",
    "token-abc123", "sk-1234", "your-api-key-here", "YOUR_API_KEY_HERE", "sk-your-api-key-here",
    "xxxxxxxxxxxxxxxxxxxx", "sk-" + "x" * 48, "sk-proj-" + "x" * 40, "sk-0000000000000000", "0" * 32,
]  # fmt: skip
"""What people give a local server that accepts any key (its docs' examples, templates)."""

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
BASE64URL = BASE62 + "-_"
HEX = "0123456789abcdef"
REAL_FORMATS = {
    # name: (prefix, alphabet, random characters)
    "DeepSeek": ("sk-", HEX, 32),
    "OpenAI": ("sk-", BASE62, 48),
    "OpenAI project": ("sk-proj-", BASE64URL, 156),
    "Anthropic": ("sk-ant-api03-", BASE64URL, 95),
    "Mistral": ("", BASE62, 32),
    "Groq": ("gsk_", BASE62, 52),
    "Hugging Face": ("hf_", BASE62, 34),
    "openssl rand -hex 16 (Azure, vLLM --api-key)": ("", HEX, 32),
    "LiteLLM virtual key (16 to 31)": ("sk-", BASE64URL, 22),
    "openssl rand -hex 8 (16 to 31)": ("", HEX, 16),
}


def test_what_a_local_server_is_given_is_no_secret() -> None:
    assert [value for value in PLACEHOLDERS if is_secret(value)] == []


def test_every_real_key_format_is_a_secret() -> None:
    """2,000 keys of each format, drawn as their issuers draw them (docs/decisions.md has the odds
    that a real key would not count: below 1 in 10^11 for the 32+ character formats)."""
    draw = random.Random(23)
    for name, (prefix, alphabet, size) in REAL_FORMATS.items():
        keys = [prefix + "".join(draw.choices(alphabet, k=size)) for _ in range(2000)]
        assert all(map(is_secret, keys)), name
    assert all(map(is_secret, [KEY, E2E_KEY, EXPORT_KEY, "sk-test-0123456789abcdef", "sk-functional-test-key-42"]))


@st.composite
def non_secrets(draw: st.DrawFn) -> str:
    """Values that cannot be a secret: short, typed words (no digit, letters of one case), or of
    fewer than six different characters."""
    kind = draw(st.sampled_from(["short", "words", "few characters", "placeholder"]))
    if kind == "short":
        return draw(st.text(min_size=1, max_size=MIN_SECRET_LENGTH - 1))
    if kind == "words":
        letters = draw(st.sampled_from(["abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"]))
        return draw(st.text(st.sampled_from(letters + "-_. /"), min_size=1, max_size=80))
    if kind == "few characters":
        alphabet = draw(st.lists(st.characters(), min_size=1, max_size=MIN_SECRET_VARIETY - 1))
        return draw(st.text(st.sampled_from(alphabet), min_size=1, max_size=80))
    return draw(st.sampled_from(PLACEHOLDERS))


@st.composite
def text_full_of(draw: st.DrawFn, value: str) -> str:
    """Random text holding `value` (and runs of it) several times, split by separators or not."""
    pieces = draw(st.lists(st.one_of(st.text(max_size=20), st.just(value), st.just(value[: len(value) // 2])), max_size=8))
    text = draw(separators).join(pieces)
    return text + value


@given(st.data(), non_secrets(), st.lists(st.integers(0, 400), max_size=8))
@settings(max_examples=200, deadline=None)
def test_a_value_that_is_no_secret_changes_no_output(data: st.DataObject, value: str, cuts: list[int]) -> None:
    text = data.draw(text_full_of(value))
    assert redact(text, value) == text
    assert redact_message(text, value) == redact_message(text, "")
    events = [
        BlockStart(0, "tool-call", f"call_{value}", f"bar__{value}"),
        *stream_of(text, cuts)[1:-2],
        BlockEnd(0, f"call_{value}", f"bar__{value}", text),
        Finish("error", Failure(code=AUTH, message=text)),
    ]
    passed = through(KeyRedactor(value), events)
    assert passed[:-1] == events[:-1]
    assert passed[-1] == through(KeyRedactor(""), events[-1:])[0]
    scrub, plain = Scrubber([value]), Scrubber([])
    assert scrub.text(text) == plain.text(text) and scrub.line(text) == plain.line(text)
    assert scrub.json({text: [text, value, 1]}) == plain.json({text: [text, value, 1]})
    assert not is_secret(value)


def test_a_placeholder_in_the_environment_is_not_among_the_exports_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_KEY", "k")
    monkeypatch.setenv("REAL_KEY", f" {KEY}\n")
    routes = [Route(id=f"local/{name}", dialect="deepseek-chat", model="m", base_url="http://127.0.0.1:1", api_key_env=name) for name in ("LOCAL_KEY", "REAL_KEY")]
    scrub = Scrubber.for_routes(routes)
    assert scrub.line("bar__unlock with k") == "bar__unlock with k"
    assert scrub.line(f"the key {KEY}.") == f"the key {REDACTED}."


def test_the_issues_example_key_k_leaves_the_call_to_bar__unlock_whole() -> None:
    events = [BlockStart(0, "tool-call", "call_k1", "bar__unlock"), BlockDelta(0, '{"kind": "lock"}')]
    events += [BlockEnd(0, "call_k1", "bar__unlock", '{"kind": "lock"}'), Finish("tool-calls")]
    assert through(KeyRedactor("k"), events) == events


secrets_ = st.text(st.sampled_from(BASE64URL), min_size=MIN_SECRET_LENGTH, max_size=60).filter(is_secret)
"""Keys between the shortest secret and 60 characters, of the characters real keys are made of."""


@given(st.data(), secrets_, st.lists(st.integers(0, 200), max_size=8))
@settings(max_examples=150, deadline=None)
def test_any_secret_loses_every_run_of_it_streamed_or_whole(data: st.DataObject, secret: str, cuts: list[int]) -> None:
    start = data.draw(st.integers(0, len(secret) - FRAGMENT))
    run = secret[start : data.draw(st.integers(start + FRAGMENT, len(secret)))]
    text = data.draw(st.text(max_size=30)) + run + data.draw(st.text(max_size=30))
    assert not leaks(redact(text, secret), secret)
    shown = shown_text(through(KeyRedactor(secret), stream_of(text, cuts)))
    assert not leaks(shown, secret) and REDACTED in shown
    assert not leaks(Scrubber([secret]).text(text), secret)


# --- tool names and call ids (issue 23 item 2) --------------------------------------------------------

FRESH_ID = re.compile(r"call-[0-9a-f]{12}")


key_characters = st.text(st.sampled_from(BASE62), max_size=12)


@given(key_characters, key_characters, st.integers(0, len(KEY) - FRAGMENT), st.integers(FRAGMENT - 4, FRAGMENT))
@settings(max_examples=150, deadline=None)
def test_a_name_or_id_is_kept_whole_or_replaced_whole(before: str, after: str, start: int, size: int) -> None:
    """Never in part: a name holding the key becomes `[redacted]` (no tool has that name, so the call
    fails as UNKNOWN_TOOL), an id holding it a fresh `call-<12 hex>`, the same at the block's start
    and end; one that does not is passed on as it came, whatever characters it shares with the key."""
    middle = KEY[start : start + size]
    name, call_id = f"lab__{before}{middle}{after}", f"call_{after}{middle}{before}"
    opened, *_deltas, closed = through(
        KeyRedactor(KEY), [BlockStart(3, "tool-call", call_id, name), BlockDelta(3, "{}"), BlockEnd(3, call_id, name, "{}")]
    )
    assert isinstance(opened, BlockStart) and isinstance(closed, BlockEnd)
    assert opened.name == closed.name == (REDACTED if leaks(name) else name)
    assert opened.call_id == closed.call_id
    if leaks(call_id):
        assert opened.call_id is not None and FRESH_ID.fullmatch(opened.call_id)
    else:
        assert opened.call_id == call_id


def test_each_call_whose_id_holds_the_key_gets_its_own_fresh_id() -> None:
    events = [
        BlockStart(0, "tool-call", f"id-{KEY}", "read_file"),
        BlockStart(1, "tool-call", None, None),
        BlockEnd(0, f"id-{KEY}", "read_file", "{}"),
        BlockEnd(1, f"id-{KEY}", "read_file", "{}"),
    ]
    opened, _, first, second = through(KeyRedactor(KEY), events)
    assert isinstance(opened, BlockStart) and isinstance(first, BlockEnd) and isinstance(second, BlockEnd)
    assert opened.call_id == first.call_id != second.call_id
    assert first.name == second.name == "read_file"

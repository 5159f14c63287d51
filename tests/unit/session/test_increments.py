"""docs/architecture.md §6's property: any split of a log into increments gives the same `tool_history()` and
session view as one full reduction — through real files, the cold fast path and `refresh()`."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.session.events import encode_event, encode_header
from app.session.session import Session
from app.session.view import SessionView
from tests.support.histories import GeneratedLog, session_logs


def _full_reduction(log: GeneratedLog) -> tuple[object, SessionView]:
    view = log.view()
    return view.history, view


def _assert_same_view(view: SessionView, expected: SessionView) -> None:
    assert view.requests == expected.requests
    assert view.turns == expected.turns
    assert view.items == expected.items
    assert view.messages == expected.messages
    assert view.history == expected.history


@pytest.mark.slow(seconds=12)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=session_logs(), data=st.data())
def test_any_split_into_file_increments_matches_one_full_reduction(log: GeneratedLog, data) -> None:
    history, expected = _full_reduction(log)
    cuts = sorted(
        data.draw(st.lists(st.integers(0, len(log.events)), max_size=4, unique=True), label="cuts")
    )
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"{log.header.id}.jsonl"
        events = list(log.events)
        first = cuts[0] if cuts else len(events)
        path.write_bytes(encode_header(log.header) + b"".join(map(encode_event, events[:first])))
        session = Session.open(path)
        # Cold: only header and developer-message lines are parsed.
        cold = session.tool_history()
        prefix_view = SessionView(log.header)
        for event in events[:first]:
            prefix_view.apply(event)
        assert cold == prefix_view.history
        written = first
        for cut in [*cuts[1:], len(events)]:
            with path.open("ab") as handle:
                handle.write(b"".join(map(encode_event, events[written:cut])))
            written = cut
            session.refresh()
            # Reading between increments must not change what later increments produce.
            session.tool_history()
            session.view()
        assert session.tool_history() == history
        _assert_same_view(session.view(), expected)


@settings(max_examples=100, deadline=None)
@given(log=session_logs())
def test_cold_fast_path_equals_reduction_of_parsed_events(log: GeneratedLog) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"{log.header.id}.jsonl"
        path.write_bytes(log.jsonl())
        fast = Session.open(path).tool_history()
        parsed = Session.open(path).load()
        parsed.events  # noqa: B018 - parse first, so the reducer is fed parsed events
        assert fast == parsed.tool_history() == log.view().history

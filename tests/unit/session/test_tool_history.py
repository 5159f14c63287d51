"""The tool-history reducer (docs/architecture.md §6): each rule on a hand-built log, then properties over
drawn logs."""

from __future__ import annotations

import copy
import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.session.events import EVENT_ADAPTER, Envelope, ToolDefinition
from app.session.tool_history import ToolHistory, ToolHistoryReducer
from tests.support.builder import LogBuilder, tool
from tests.support.histories import GeneratedLog, session_logs

READ, GREP, TIME = tool("read"), tool("grep"), tool("time")
GREP_V2 = tool("grep", "grep, now with regular expressions")
PROMPT = "You are helpful."


def reduce(events: list[Envelope] | tuple[Envelope, ...]) -> ToolHistory:
    reducer = ToolHistoryReducer()
    for event in events:
        reducer.apply(event)
    return reducer.snapshot()


def request(log: LogBuilder, tools: list[ToolDefinition], **header: object) -> list[Envelope]:
    """A one-step turn whose request carries `tools`; returns what the header rules appended."""
    log.start_turn()
    log.start_step()
    appended = log.header_for(tools, **header)
    log.assistant()
    log.end_step()
    log.end_turn()
    return appended


def names(tools: tuple[ToolDefinition, ...]) -> list[str]:
    return [t.name for t in tools]


# --- the rules ------------------------------------------------------------------------------------


def test_the_first_header_starts_the_sequence_with_its_tools():
    log = LogBuilder()
    (header,) = request(log, [READ, GREP], system=PROMPT)
    history = reduce(log.events)
    assert history.sequence == 0
    assert history.initial == (READ, GREP)
    assert history.declared == (READ, GREP)
    assert history.current == (READ, GREP)
    assert history.updates == ()
    assert history.system == history.current_system == PROMPT
    assert history.start_seq == history.header_seq == header.seq
    assert history.last_seq == log.events[-1].seq


def test_name_changes_become_updates_resolved_through_their_header():
    log = LogBuilder()
    request(log, [READ, GREP])
    header, added = request(log, [READ, GREP, TIME])
    _, removed = request(log, [READ, TIME])
    history = reduce(log.events)

    first, second = history.updates
    assert (first.message_id, first.seq) == (added.data.id, added.seq)
    assert first.additions == (TIME,) and first.removals == ()
    assert added.data.additions[0].header_seq == header.seq
    assert (second.message_id, second.additions, second.removals) == (
        removed.data.id,
        (),
        ("grep",),
    )
    assert not first.is_instructions
    # A removed name stays declared: D only grows within a sequence.
    assert history.declared == (READ, GREP, TIME)
    assert history.current == (READ, TIME)
    assert history.initial == (READ, GREP)


def test_restoring_a_removed_name_unchanged_is_just_another_update():
    log = LogBuilder()
    (start,) = request(log, [READ, GREP])
    request(log, [READ])
    _, restored = request(log, [READ, GREP])
    history = reduce(log.events)
    assert history.start_seq == start.seq
    assert [u.message_id for u in history.updates][-1] == restored.data.id
    assert history.updates[-1].additions == (GREP,)
    assert history.declared == (READ, GREP)


def test_a_changed_definition_of_a_current_name_rebuilds_the_declarations():
    log = LogBuilder()
    request(log, [READ, GREP])
    request(log, [READ, GREP, TIME])
    appended = request(log, [READ, GREP_V2, TIME])
    assert [e.type for e in appended] == ["request/header"]  # same names: no developer message
    history = reduce(log.events)
    assert history.start_seq == appended[0].seq
    assert history.initial == history.declared == (READ, GREP_V2, TIME)
    assert history.updates == ()
    assert history.sequence == 0  # a rebuild is not a new sequence


def test_asking_for_deferred_loading_is_a_changed_definition():
    log = LogBuilder()
    request(log, [READ, TIME])
    deferred_time = tool("time", defer=True)
    (header,) = request(log, [READ, deferred_time])
    history = reduce(log.events)
    assert history.start_seq == header.seq
    assert history.initial == (READ, deferred_time)


def test_a_changed_definition_of_a_removed_but_retained_name_rebuilds():
    log = LogBuilder()
    request(log, [READ, GREP])
    request(log, [READ])
    header, message = request(log, [READ, GREP_V2])
    assert message.type == "developer/message"  # the loop still records the addition…
    history = reduce(log.events)
    assert history.start_seq == header.seq
    assert history.updates == ()  # …but it is already in `initial`
    assert history.initial == history.declared == (READ, GREP_V2)


def test_an_explicit_new_sequence_starts_over_and_drops_the_old_updates():
    log = LogBuilder()
    request(log, [READ, GREP])
    request(log, [READ, GREP, TIME])
    header, tools_changed, prompt_changed = request(
        log, [READ, TIME], system="New rules.", new_sequence=True
    )
    assert tools_changed.type == prompt_changed.type == "developer/message"
    history = reduce(log.events)
    assert history.sequence == 1
    assert history.start_seq == header.seq
    assert history.initial == history.declared == (READ, TIME)
    assert history.updates == ()  # neither developer message of the starting header counts
    assert history.system == history.current_system == "New rules."


def test_a_new_sequence_with_the_same_header_content_still_starts_over():
    log = LogBuilder()
    request(log, [READ])
    request(log, [READ, GREP])
    (header,) = request(log, [READ, GREP], new_sequence=True)
    history = reduce(log.events)
    assert (history.sequence, history.start_seq, history.updates) == (1, header.seq, ())


def test_compaction_followed_by_the_new_sequence_header_keeps_only_new_updates():
    log = LogBuilder()
    request(log, [READ])
    request(log, [READ, GREP])
    log.compaction()
    request(log, [READ, GREP], new_sequence=True)
    _, addition = request(log, [READ, GREP, TIME])
    history = reduce(log.events)
    assert history.sequence == 1
    assert [u.message_id for u in history.updates] == [addition.data.id]


def test_an_instructions_update_keeps_the_first_text_as_the_sequence_text():
    log = LogBuilder()
    request(log, [READ], system=PROMPT)
    header, text = request(log, [READ], system=PROMPT + " Be brief.")
    history = reduce(log.events)
    (update,) = history.updates
    assert update.is_instructions
    assert (update.message_id, update.seq, update.text) == (
        text.data.id,
        text.seq,
        PROMPT + " Be brief.",
    )
    assert update.additions == () and update.removals == ()
    assert history.system == PROMPT
    assert history.current_system == PROMPT + " Be brief."
    assert history.header_seq == header.seq


def test_a_reordering_changes_the_header_but_nothing_else():
    log = LogBuilder()
    (start,) = request(log, [READ, GREP])
    (header,) = request(log, [GREP, READ])
    history = reduce(log.events)
    assert history.current == (GREP, READ)
    assert history.initial == history.declared == (READ, GREP)
    assert (history.start_seq, history.header_seq, history.updates) == (start.seq, header.seq, ())


def test_events_without_tool_history_only_advance_last_seq():
    log = LogBuilder()
    (header,) = request(log, [READ])
    before = reduce(log.events[: header.seq + 1])
    after = reduce(log.events)
    assert after.last_seq > before.last_seq
    assert dataclasses.replace(after, last_seq=before.last_seq) == before


def test_snapshots_are_immutable_and_unaffected_by_later_events():
    log = LogBuilder()
    request(log, [READ, GREP])
    request(log, [READ, GREP, TIME])
    reducer = ToolHistoryReducer()
    for event in log.events:
        reducer.apply(event)
    snapshot = reducer.snapshot()
    kept = copy.deepcopy(snapshot)

    request(log, [READ], system="Changed.", new_sequence=True)
    for event in log.events[kept.last_seq + 1 :]:
        reducer.apply(event)
    assert reducer.snapshot() != kept
    assert snapshot == kept
    with pytest.raises(dataclasses.FrozenInstanceError):
        snapshot.updates = ()  # type: ignore[misc]
    assert isinstance(snapshot.updates, tuple) and isinstance(snapshot.declared, tuple)


# --- properties over drawn logs -------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(session_logs(), st.data())
def test_any_split_into_increments_gives_the_same_snapshots(log: GeneratedLog, data):
    events = log.events
    cuts = sorted(data.draw(st.sets(st.integers(0, len(events)), max_size=6)))
    reducer = ToolHistoryReducer()
    taken: list[tuple[int, ToolHistory]] = []
    start = 0
    for cut in [*cuts, len(events)]:
        for event in events[start:cut]:
            reducer.apply(event)
        taken.append((cut, reducer.snapshot()))
        start = cut
    for cut, snapshot in taken:
        # Every snapshot equals a cold reduction of its prefix, even after the reducer moved on.
        assert snapshot == reduce(events[:cut])
    assert taken[-1][1] == reduce(events)


@settings(max_examples=40, deadline=None)
@given(session_logs())
def test_a_log_read_back_from_its_lines_reduces_to_the_same_snapshot(log: GeneratedLog):
    lines = log.jsonl().splitlines()[1:]
    assert reduce([EVENT_ADAPTER.validate_json(line) for line in lines]) == reduce(log.events)


@settings(max_examples=80, deadline=None)
@given(session_logs())
def test_every_snapshot_is_self_consistent(log: GeneratedLog):
    for model_request in log.view().requests:
        history = model_request.history
        declared = {t.name: t for t in history.declared}
        assert len(declared) == len(history.declared)
        assert history.declared[: len(history.initial)] == history.initial
        # Every current tool is declared with the very same definition (else it would have rebuilt).
        assert all(declared.get(t.name) == t for t in history.current)
        assert history.current == model_request.header.tools
        assert history.sequence == model_request.header.sequence
        seqs = [u.seq for u in history.updates]
        assert seqs == sorted(seqs) and all(seq > history.start_seq for seq in seqs)
        for update in history.updates:
            assert all(declared[t.name] == t for t in update.additions)

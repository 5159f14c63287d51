"""The cache diagnostic of the report model (issue 27 item 1): each cause on a hand-built log, the
TTL on either side of it, and, on generated logs, a prefix break exactly where the prefix checker
says the body does not extend the previous one on the route."""

from __future__ import annotations

import json
import os
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from app.llm.prefix import cache_chunks, common_prefix_length, prefix_kept, render_for_cache
from app.llm.routes import Route, load_catalog
from app.report.cache import CacheCause, _common_start, diagnose, estimated_tokens
from app.report.model import inspect_requests
from app.session.view import SessionView
from tests.support.builder import LogBuilder, tool
from tests.support.histories import session_logs

CATALOG = load_catalog()
READ, GREP, TIME = tool("read"), tool("grep"), tool("time")
TEXTUAL_BREAKS = {
    CacheCause.NEW_SEQUENCE,
    CacheCause.TOOLS_CHANGED,
    CacheCause.DEFERRED_TOOL_LOADED,
    CacheCause.SYSTEM_CHANGED,
    CacheCause.HISTORY_REWRITTEN,
}


def requests_of(log: LogBuilder):  # type: ignore[no-untyped-def]
    view = SessionView(log.header)
    for event in log.events:
        view.apply(event)
    return view.requests


def diagnostics(log: LogBuilder, route: str | Route):  # type: ignore[no-untyped-def]
    """The cache diagnostic of every request on one route (an id of the catalog, or a route)."""
    reports = inspect_requests(requests_of(log), [CATALOG.get(route) if isinstance(route, str) else route])
    return [report.routes[0].cache for report in reports]


def causes(log: LogBuilder, route_id: str) -> list[CacheCause | None]:
    return [diagnostic.cause for diagnostic in diagnostics(log, route_id)]


def turns(*headers: dict) -> LogBuilder:
    """One simple turn per header (`header_for`'s arguments, tools under "tools")."""
    log = LogBuilder("cache")
    for number, header in enumerate(headers):
        log.simple_turn(text=f"prompt {number}", **header)
    return log


def test_the_first_request_writes_the_cache_and_the_next_one_reads_it() -> None:
    log = turns({"tools": [READ, GREP]}, {"tools": [READ, GREP]})
    for route_id in CATALOG.ids:
        first, second = diagnostics(log, route_id)
        assert first.cause is CacheCause.INITIAL and first.tokens.cached == 0, route_id
        assert second.hit and second.kept and 0 < second.tokens.cached < second.tokens.input, route_id


def test_tools_added_removed_redefined_or_reordered_are_named() -> None:
    cases = {
        "added": ([READ, GREP], [READ, GREP, TIME], {"added": ("time",)}),
        "removed": ([READ, GREP], [READ], {"removed": ("grep",)}),
        "redefined": ([READ, GREP], [tool("read", "Reads, now numbered."), GREP], {"redefined": ("read",)}),
        "reordered": ([READ, GREP], [GREP, READ], {"reordered": True}),
    }
    for label, (before, after, expected) in cases.items():
        first, second = diagnostics(turns({"tools": before}, {"tools": after}), "openai/gpt")
        assert second.cause is CacheCause.TOOLS_CHANGED, label
        assert second.pointer is not None and second.pointer.startswith("/tools/"), label
        difference = {key: getattr(second.tools, key) for key in expected}
        assert difference == expected, label
        assert second.tokens.cached < first.tokens.input, label


def test_a_route_that_carries_the_change_in_the_history_keeps_its_prefix() -> None:
    log = turns({"tools": [READ, GREP]}, {"tools": [READ, GREP, TIME]}, {"tools": [READ, TIME]})
    assert causes(log, "anthropic/claude-sonnet") == [CacheCause.INITIAL, None, None]
    # addition-only: the addition is deferred (kept), the removal breaks the up-front tools.
    assert causes(log, "deepseek/deepseek-flash") == [CacheCause.INITIAL, None, CacheCause.TOOLS_CHANGED]


def test_a_deferred_tool_declared_up_front_is_a_deferred_tool_loaded() -> None:
    search = tool("search", defer=True)
    log = turns({"tools": [READ, search]}, {"tools": [READ, tool("search")]})
    first, second = diagnostics(log, "anthropic/claude-sonnet")
    assert second.cause is CacheCause.DEFERRED_TOOL_LOADED and second.tools.loaded == ("search",)


def test_a_new_system_text_breaks_a_top_system_route_only() -> None:
    log = turns({"tools": [READ]}, {"tools": [READ], "system": "You are terse."})
    assert causes(log, "deepseek/deepseek-flash") == [CacheCause.INITIAL, CacheCause.SYSTEM_CHANGED]
    assert causes(log, "anthropic/claude-sonnet") == [CacheCause.INITIAL, None]


def test_a_compaction_rewrites_the_history_and_an_explicit_new_sequence_is_named() -> None:
    log = turns({"tools": [READ]}, {"tools": [READ]})
    log.compaction()
    log.simple_turn([READ], "after the summary", new_sequence=True)
    third = diagnostics(log, "offline/demo")[2]
    assert third.cause is CacheCause.HISTORY_REWRITTEN and third.compaction

    log = turns({"tools": [READ, GREP]}, {"tools": [READ, GREP, TIME]})
    log.simple_turn([READ, GREP, TIME], "a fresh start", new_sequence=True)
    # in-history declared time deferred with a block; the new sequence declares it up front.
    third = diagnostics(log, "anthropic/claude-sonnet")[2]
    assert third.cause is CacheCause.NEW_SEQUENCE and not third.compaction


def test_an_edited_message_is_history_rewritten() -> None:
    log = turns({"tools": [READ]}, {"tools": [READ]})
    first, second = requests_of(log)
    route = CATALOG.get("openai/gpt")
    (report,) = inspect_requests([first, second], [route])[1].routes
    body = report.wire.body
    previous = {**report.previous_body, "messages": [*report.previous_body["messages"]]}
    previous["messages"][1] = {**previous["messages"][1], "content": "an earlier wording"}
    prefix = prefix_kept(previous, body, route.dialect)
    diagnostic = diagnose(
        body=body,
        previous_body=previous,
        prefix=prefix,
        dialect=route.dialect,
        request=second,
        previous=first,
        ran_here=False,
        ttl_seconds=300,
    )
    assert diagnostic.cause is CacheCause.HISTORY_REWRITTEN and not diagnostic.compaction
    assert diagnostic.pointer == "/messages/1"


def test_the_route_that_ran_after_another_route_starts_cold() -> None:
    log = turns({"tools": [READ]}, {"tools": [READ], "route": "deepseek/deepseek-flash"})
    assert causes(log, "deepseek/deepseek-flash")[1] is CacheCause.ROUTE_SWITCHED
    # A route that ran neither request is read as if the whole session had run on it.
    assert causes(log, "anthropic/claude-sonnet")[1] is None


def test_a_gap_longer_than_the_ttl_expires_the_cache() -> None:
    route = replace(CATALOG.get("offline/demo"), cache_ttl=300)
    for seconds, expected in ((299, None), (301, CacheCause.CACHE_EXPIRED)):
        log = LogBuilder("ttl")
        log.simple_turn([READ], "first")
        log.wait(seconds)
        log.simple_turn([READ], "second")
        second = diagnostics(log, route)[1]
        assert second.cause is expected, seconds
        assert second.kept and second.gap_ms is not None
        assert (second.tokens.cached == 0) is (expected is not None)


@settings(max_examples=60, deadline=None)
@given(generated=session_logs())
def test_prefix_breaks_are_exactly_where_the_prefix_checker_says(generated) -> None:
    """The reference: `prefix_kept` on the two bodies of each route, and the common start of their
    renderings for the tokens served from cache."""
    reports = inspect_requests(generated.view().requests, list(CATALOG))
    for number, report in enumerate(reports):
        for route_report in report.routes:
            cache = route_report.cache
            if route_report.wire is None:
                assert cache is None
                continue
            previous = route_report.previous_body
            body = route_report.wire.body
            dialect = route_report.route.dialect
            if number == 0 or previous is None:
                assert cache.cause is CacheCause.INITIAL
                continue
            kept = prefix_kept(previous, body, dialect).kept
            assert cache.kept is kept
            if cache.cause not in (CacheCause.INITIAL, CacheCause.ROUTE_SWITCHED):
                assert (cache.cause in TEXTUAL_BREAKS) is (not kept)
            rendered, before = reference_rendering(body, dialect), reference_rendering(previous, dialect)
            assert render_for_cache(body, dialect) == rendered
            assert cache.tokens.input == estimated_tokens(len(rendered))
            if cache.cause is None or cache.cause in TEXTUAL_BREAKS:
                assert cache.tokens.cached == estimated_tokens(len(os.path.commonprefix([before, rendered])))
            else:
                assert cache.tokens.cached == 0
            assert cache.hit is (cache.cause is None)


@settings(max_examples=300, deadline=None)
@given(
    start=st.text(alphabet="ab", max_size=3),
    length=st.sampled_from([0, 1, 100, 65_535, 65_536, 65_537, 140_000]),
    cut=st.floats(0, 1),
    tail=st.sampled_from(["", "y", "x", "yz"]),
    swap=st.booleans(),
    splits=st.tuples(st.lists(st.floats(0, 1), max_size=4), st.lists(st.floats(0, 1), max_size=4)),
)
def test_the_common_prefix_length_is_os_path_commonprefix(start, length, cut, tail, swap, splits) -> None:
    """The chunked search against the slow reference, around the slices' edges, on the texts cut
    into pieces anywhere (empty pieces too)."""
    a = start + "x" * length
    b = a[: round(cut * len(a))] + tail
    if swap:
        a, b = b, a
    assert common_prefix_length(pieces(a, splits[0]), pieces(b, splits[1])) == len(os.path.commonprefix([a, b]))


def reference_rendering(body: dict, dialect: str) -> str:
    """What a provider caches, written out plainly: the tools up front, (Anthropic) the system
    text, the messages, as `json.dumps` spells them."""
    tools = [tool if dialect == "anthropic-messages" else tool.get("function", tool) for tool in body.get("tools") or () if not tool.get("defer_loading")]
    system = [body.get("system")] if dialect == "anthropic-messages" else []
    return json.dumps([tools, *system, body.get("messages") or []], sort_keys=True)


def pieces(text: str, cuts: list[float]) -> list[str]:
    edges = [0, *sorted(round(cut * len(text)) for cut in cuts), len(text)]
    return [text[start:end] for start, end in zip(edges, edges[1:])]


_MESSAGES = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": st.text(alphabet="ab\"é\n", max_size=4)}),
    max_size=5,
)


@settings(max_examples=300, deadline=None)
@given(
    before=_MESSAGES,
    keep=st.integers(0, 5),
    after=_MESSAGES,
    dialect=st.sampled_from(["deepseek-chat", "anthropic-messages"]),
    tools=st.sampled_from([[], [{"name": "read"}]]),
)
def test_the_cached_start_of_a_rewritten_history_is_the_renderings_common_start(before, keep, after, dialect, tools) -> None:
    """Where the heads agree, the cached part is measured from the first message the prefix checker
    names (messages dropped, edited or replaced): held to the two renderings' common start."""
    previous = {"tools": tools, "system": "s", "messages": before}
    body = {"tools": tools, "system": "s", "messages": [*before[:keep], *after]}
    prefix = prefix_kept(previous, body, dialect)
    if prefix.kept:
        return
    expected = len(os.path.commonprefix([render_for_cache(previous, dialect), render_for_cache(body, dialect)]))
    assert _common_start(previous, body, cache_chunks(body, dialect), dialect, prefix.first_difference) == expected

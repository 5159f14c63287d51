"""The export's body diffs (`app.export.wire_diff`), which print only what changed since the route's
previous body: on generated sessions whose tools, prompt, routes and sequences keep changing, each
diff, applied to the previous body printed whole, gives the body printed whole (its line numbers
and context checked as it is applied); and a large string is printed as its token."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings

from app.export.references import LARGE_TEXT
from app.export.wire_diff import BodyDiffs
from app.llm.routes import load_catalog
from app.report.model import iter_reports
from tests.support.builder import LogBuilder, tool
from tests.support.histories import GeneratedLog, session_logs


def pretty(body: dict) -> list[str]:
    return json.dumps(body, ensure_ascii=False, indent=2).splitlines()


def patched(before: list[str], diff: list[str]) -> list[str]:
    """`before` with the unified `diff` applied, each hunk where its header says, each context and
    removed line checked."""
    if not diff:
        return before
    assert diff[:2] == ["--- previous", "+++ this"]
    after: list[str] = []
    at = 0
    for line in diff[2:]:
        hunk = re.fullmatch(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", line)
        if hunk is not None:
            old, old_length, new, new_length = hunk.groups()
            start = int(old) - (old_length != "0")
            assert start >= at
            after += before[at:start]
            at = start
            assert len(after) == int(new) - (new_length != "0")
        elif line.startswith("+"):
            after.append(line[1:])
        else:
            assert line[0] in " -" and before[at] == line[1:]
            if line[0] == " ":
                after.append(line[1:])
            at += 1
    return after + before[at:]


@settings(max_examples=60, deadline=None)
@given(session_logs(max_turns=8))
def test_each_diff_turns_the_previous_body_into_this_one(log: GeneratedLog):
    diffs = BodyDiffs()
    for report in iter_reports(log.view().requests, list(load_catalog())):
        for route in report.routes:
            diff = diffs.diff(route, lambda text: None)
            if route.wire is None or route.previous_body is None:
                assert diff == []
                continue
            assert bool(diff) == (route.previous_body != route.wire.body)
            assert patched(pretty(route.previous_body), diff) == pretty(route.wire.body)


def test_a_large_string_is_printed_as_its_token_everywhere_it_is():
    big = "log line\n" * LARGE_TEXT
    log = LogBuilder("large")
    log.start_turn("read it")
    log.start_step()
    log.header_for([tool("read")])
    log.assistant("", calls=[("call_1", "read", "{}")])
    log.tool_round("call_1", "read", big)
    log.end_step()
    log.start_step()
    log.assistant("read")
    log.end_step()
    log.end_turn()
    view = GeneratedLog(log.header, tuple(log.events)).view()
    diffs = BodyDiffs()

    def shortened(body: dict) -> list[str]:
        return [line.replace(json.dumps(big), json.dumps("TOKEN")) for line in pretty(body)]

    (first, second) = iter_reports(view.requests, list(load_catalog()))
    for before, after in zip(first.routes, second.routes):
        assert diffs.diff(before, lambda text: "TOKEN" if text == big else None) == []
        lines = diffs.diff(after, lambda text: "TOKEN" if text == big else None)
        assert "log line" not in "\n".join(lines) and json.dumps("TOKEN") in "\n".join(lines)
        assert patched(shortened(after.previous_body), lines) == shortened(after.wire.body)

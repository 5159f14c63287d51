"""The report model's answers the inspector and the exports read: the tool change since the
previous request, and each route's body diff against the previous request on the same route."""

from __future__ import annotations

from app.llm.routes import load_catalog
from app.report.model import inspect_requests
from app.session.session import Session
from tests.functional.test_inspect import worked_example, write_session

CATALOG = load_catalog()


def reports(tmp_path):
    log, _developer = worked_example()
    requests = Session.open(write_session(log, tmp_path)).view().requests
    return inspect_requests(requests, list(CATALOG))


def test_the_tool_change_names_what_changed_since_the_previous_request(tmp_path):
    changes = [report.tool_change for report in reports(tmp_path)]
    assert changes[0].first and changes[0].tools == ("read", "grep")
    assert [(c.added, c.removed, c.redefined, c.changed) for c in changes[1:]] == [
        ((), (), (), False),
        (("time",), (), (), True),
        ((), ("grep",), (), True),
        (("grep",), (), (), True),
        ((), (), (), False),
    ]


def test_a_redefined_tool_is_a_change(tmp_path):
    from tests.support.builder import LogBuilder, tool

    log = LogBuilder("redefined")
    log.simple_turn([tool("read"), tool("grep")])
    log.simple_turn([tool("read", "Reads a file, now with line numbers."), tool("grep")])
    requests = Session.open(write_session(log, tmp_path)).view().requests
    change = inspect_requests(requests, [CATALOG.get("offline/demo")])[1].tool_change
    assert change.redefined == ("read",) and change.changed and not change.added


def test_the_body_diff_is_against_the_previous_request_on_the_same_route(tmp_path):
    all_reports = reports(tmp_path)
    for route_id in CATALOG.ids:
        first = next(r for r in all_reports[0].routes if r.route.id == route_id)
        assert first.body_diff() == []
        third = next(r for r in all_reports[2].routes if r.route.id == route_id)
        diff = third.body_diff()
        assert diff[:2] == ["--- previous", "+++ this"], route_id
        added = [line for line in diff if line.startswith("+") and not line.startswith("+++")]
        assert any('"time"' in line for line in added), route_id


def test_only_request_n_still_diffs_against_the_request_before_it(tmp_path):
    log, _developer = worked_example()
    requests = Session.open(write_session(log, tmp_path)).view().requests
    (only,) = inspect_requests(requests, [CATALOG.get("offline/demo")], only=3)
    assert only.tool_change.added == ("time",)
    assert only.routes[0].body_diff()


def test_the_one_line_answer_words_every_case():
    from app.report.model import ToolChange
    from app.report.wording import tool_change_line

    assert tool_change_line(ToolChange(first=True, tools=())) == "First request: no tools"
    assert tool_change_line(ToolChange(first=True, tools=("read",))) == "First request: 1 tool (read)"
    assert tool_change_line(ToolChange(first=False, tools=("read",))) == (
        "No tool change since the previous request"
    )
    change = ToolChange(first=False, tools=("a", "c"), added=("c",), removed=("b",), redefined=("a",))
    assert tool_change_line(change, lambda name: f"<{name}>") == (
        "Tools since the previous request: added <c>; removed <b>; redefined <a>"
    )

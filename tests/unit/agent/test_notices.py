"""Tool-change notices: one change names the tool; several give the counts, then the names."""

from __future__ import annotations

from app import i18n
from app.agent.notices import tool_change_notice
from app.session.events import ToolAddition, ToolRegistryUpdate


def update(added: list[str], removed: list[str]) -> ToolRegistryUpdate:
    return ToolRegistryUpdate(
        id="d1", additions=tuple(ToolAddition(name=n, header_seq=3) for n in added), removals=tuple(removed)
    )


def test_one_change_names_the_tool():
    assert tool_change_notice(update(["grep"], [])).lines() == ["Tool added: grep"]
    assert tool_change_notice(update([], ["grep"])).lines() == ["Tool removed: grep"]


def test_several_changes_give_counts_then_names():
    notice = tool_change_notice(update(["a", "b", "c"], ["d"]))
    assert notice.summary == "3 tools added, 1 removed"
    assert notice.names == ("a", "b", "c", "d")
    assert notice.lines() == ["3 tools added, 1 removed", "  + a", "  + b", "  + c", "  − d"]
    assert tool_change_notice(update([], ["x", "y"])).summary == "2 tools removed"


def test_notices_are_localized():
    i18n.set_language("zh_CN")
    try:
        summary = tool_change_notice(update(["a", "b"], ["c"])).summary
        single = tool_change_notice(update(["grep"], [])).summary
    finally:
        i18n.set_language("en")
    assert "grep" in single and single != "Tool added: grep"
    assert "2" in summary and "1" in summary and summary != "2 tools added, 1 removed"

"""Pictures of the inspector on the worked example of docs/inspect.md (pytest-textual-snapshot).

Headers h0 [read, grep]; +time (d1, request 3); −grep (d2, request 4); +grep unchanged (d3,
request 5). One route of each tool-update mode side by side; the wire body, the diff, the route
chooser and the Chinese interface; the six routes of the catalog paged at 80, 120 and 200 columns.
Nothing shown depends on time, ids or paths.
"""

from __future__ import annotations

import pytest

from app.ui.screens.inspector import InspectorScreen
from tests.functional.test_inspect import worked_example, write_session
from tests.functional.ui.chat_support import make_bench, until
from tests.functional.ui.test_inspector import ONE_PER_MODE, WIDE

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def bench(tmp_path, monkeypatch):
    return make_bench(tmp_path, monkeypatch)


@pytest.fixture
def app(bench):
    log, _developer = worked_example()
    return bench.app(session=write_session(log, bench.root / "sessions"))


def inspecting(request: int, *keys: str, shown: list[str] | None = ONE_PER_MODE):
    """`run_before`: the inspector on `request` with `shown` (default: one route per mode; None:
    the whole catalog), then `keys` pressed."""

    async def run_before(pilot) -> None:
        app = pilot.app
        await until(pilot, lambda: app.view() is not None and app.registry is not None)
        await app.push_screen(InspectorScreen(request, follow_latest=False, shown=shown))
        await pilot.press(*keys)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("request_number", [3, 4, 5], ids=["after-d1-add-time", "after-d2-remove-grep", "after-d3-add-grep"])
def test_every_mode_side_by_side_after_each_change(app, snap_compare, request_number) -> None:
    assert snap_compare(app, terminal_size=WIDE, run_before=inspecting(request_number))


def test_the_wire_body(app, snap_compare) -> None:
    assert snap_compare(app, terminal_size=WIDE, run_before=inspecting(4, "b"))


def test_the_diff_against_the_previous_request(app, snap_compare) -> None:
    assert snap_compare(app, terminal_size=WIDE, run_before=inspecting(4, "d"))


def test_the_route_chooser(app, snap_compare) -> None:
    assert snap_compare(app, terminal_size=WIDE, run_before=inspecting(5, "r"))


def test_the_inspector_in_chinese(chinese, app, snap_compare) -> None:
    assert snap_compare(app, terminal_size=WIDE, run_before=inspecting(4))


@pytest.mark.parametrize("size", [(80, 30), (120, 40), (200, 50)], ids=["80-columns", "120-columns", "200-columns"])
def test_six_routes_paged_at_each_width(app, snap_compare, size) -> None:
    assert snap_compare(app, terminal_size=size, run_before=inspecting(4, shown=None))


def test_the_next_page_of_six_routes(app, snap_compare) -> None:
    assert snap_compare(app, terminal_size=(120, 40), run_before=inspecting(4, "right", shown=None))


def test_the_cost_line_and_each_routes_cost_row(app, snap_compare) -> None:
    """Request 5 adds grep back: two routes re-send their prefix, the in-history ones keep it, the
    offline route has no price."""
    shown = ["deepseek/deepseek-flash", "openai/gpt", "anthropic/claude-sonnet", "offline/demo"]
    assert snap_compare(app, terminal_size=(120, 40), run_before=inspecting(5, shown=shown))

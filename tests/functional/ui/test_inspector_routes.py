"""The inspector with the whole built-in catalog (six routes), read off the screen as a user sees it:
every route reachable and counted at any width, by keys and by mouse, never a column cut; and under
each route, in words, why its declarations and blocks are what they are (issue 24 items 4 and 5).

The session is the worked example of docs/inspect.md: h0 [read, grep]; +time (request 3); −grep (request 4);
+grep unchanged (request 5).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.geometry import Region
from textual.widgets import Label

from app import i18n
from app.ui.screens.inspector import InspectorScreen
from tests.functional.test_inspect import worked_example, write_session
from tests.functional.ui.chat_support import make_bench, run, until
from tests.support.screen import screen_rows, text_in

pytestmark = pytest.mark.timeout(120)

SIX_ROUTES = [
    "deepseek/deepseek-flash",
    "deepseek/deepseek-pro",
    "anthropic/claude-sonnet",
    "anthropic/deepseek",
    "openai/gpt",
    "offline/demo",
]


@pytest.fixture
def bench(tmp_path, monkeypatch):
    return make_bench(tmp_path, monkeypatch)


@pytest.fixture
def example(bench) -> Path:
    log, _developer = worked_example()
    return write_session(log, bench.root / "sessions")


async def open_inspector(pilot, request: int, **kwargs) -> InspectorScreen:
    app = pilot.app
    await until(pilot, lambda: app.view() is not None and app.registry is not None)
    assert list(app.catalog.ids) == SIX_ROUTES
    screen = InspectorScreen(request, follow_latest=False, **kwargs)
    await app.push_screen(screen)
    await pilot.pause()
    return screen


def screen_lines(app) -> list[str]:
    return text_in(screen_rows(app), Region(0, 0, *app.size)).splitlines()


def columns(app) -> dict[str, str]:
    """Each route column on the screen, left to right: its title (first line) and everything it
    shows below, wrapped lines joined again. Fails when a column's border is cut."""
    lines = screen_lines(app)
    top = next(number for number, line in enumerate(lines) if "╭" in line)
    border = lines[top]
    lefts = [match.start() for match in re.finditer("╭", border)]
    rights = [match.start() for match in re.finditer("╮", border)]
    assert len(lefts) == len(rights), f"a column is cut: {border!r}"
    assert border.rstrip().endswith("╮") and len(border.rstrip()) == app.size.width, border
    shown: dict[str, str] = {}
    for left, right in zip(lefts, rights, strict=True):
        rows = []
        for line in lines[top + 1 :]:
            if line[left] == "╰":
                break
            rows.append(line[left + 1 : right].strip())
        title, *rest = rows
        shown[title] = " ".join(" ".join(rest).split())
    return shown


def pager(app) -> str:
    """The line that counts the routes ("Routes 1–2 of 6"), as shown."""
    return next(line for line in screen_lines(app) if re.search(r"Routes? \d|路由 \d", line)).strip()


def test_at_120_columns_every_route_is_reached_two_at_a_time_and_counted(bench, example) -> None:
    async def scenario() -> None:
        app = bench.app(session=example)
        async with app.run_test(size=(120, 40)) as pilot:
            await open_inspector(pilot, 4)
            seen = [list(columns(app))]
            assert seen[0] == SIX_ROUTES[:2] and "Routes 1–2 of 6" in pager(app)
            for shown in ("Routes 3–4 of 6", "Routes 5–6 of 6", "Routes 5–6 of 6"):
                await pilot.press("right")
                assert shown in pager(app)
                seen.append(list(columns(app)))
            assert [route for page in seen[:3] for route in page] == SIX_ROUTES
            assert seen[3] == seen[2]  # the last page stays
            await pilot.press("left", "left")
            assert list(columns(app)) == SIX_ROUTES[:2] and "Routes 1–2 of 6" in pager(app)
            # A focused column (Tab) does not take the arrows: they still page.
            await pilot.press("tab", "right")
            assert list(columns(app)) == SIX_ROUTES[2:4]

    run(scenario())


def test_at_80_columns_one_route_a_page_and_none_is_cut(bench, example) -> None:
    async def scenario() -> None:
        app = bench.app(session=example)
        async with app.run_test(size=(80, 30)) as pilot:
            await open_inspector(pilot, 4)
            for number, route in enumerate(SIX_ROUTES, 1):
                assert list(columns(app)) == [route]
                assert f"Route {number} of 6" in pager(app)
                await pilot.press("right")
            # Wider, the page holds more routes; the first one shown stays on it.
            await pilot.resize_terminal(200, 40)
            await pilot.pause()
            assert list(columns(app)) == SIX_ROUTES[2:] and "Routes 3–6 of 6" in pager(app)

    run(scenario())


def test_the_arrows_beside_the_count_page_with_a_click(bench, example) -> None:
    async def scenario() -> None:
        app = bench.app(session=example)
        async with app.run_test(size=(120, 40)) as pilot:
            await open_inspector(pilot, 4)
            assert await pilot.click("#routes-later")
            await pilot.pause()
            assert list(columns(app)) == SIX_ROUTES[2:4] and "Routes 3–4 of 6" in pager(app)
            assert await pilot.click("#routes-earlier")
            await pilot.pause()
            assert list(columns(app)) == SIX_ROUTES[:2]

    run(scenario())


def test_the_count_is_of_the_routes_chosen(bench, example) -> None:
    async def scenario() -> None:
        app = bench.app(session=example)
        async with app.run_test(size=(120, 40)) as pilot:
            await open_inspector(pilot, 4, shown=["anthropic/claude-sonnet", "openai/gpt", "offline/demo"])
            assert list(columns(app)) == ["anthropic/claude-sonnet", "openai/gpt"]
            assert "Routes 1–2 of 3" in pager(app)
            await pilot.press("right")
            assert list(columns(app)) == ["openai/gpt", "offline/demo"] and "Routes 2–3 of 3" in pager(app)

    run(scenario())


def footer_labels(app) -> list[str]:
    """What each footer entry says beside its key (a binding's description, a group's label), read
    off the screen entry by entry: a key's own text is its key, a space, then its description."""
    rows = screen_rows(app)
    labels = []
    for entry in app.screen.query_one("LocalizedFooter").walk_children():
        if entry.children:
            continue  # a group of keys
        text = text_in(rows, entry.region).strip()
        label = text if isinstance(entry, Label) else text.partition(" ")[2].strip()
        if label:
            labels.append(label)
    return labels


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_the_footer_shows_the_paging_keys_and_no_two_entries_share_a_label(bench, example, language) -> None:
    async def scenario() -> None:
        app = bench.app(session=example)
        async with app.run_test(size=(120, 40)) as pilot:
            await open_inspector(pilot, 4)
            if language != "en":
                await app.run_action("switch_language")
                await pilot.pause()
            paging, close = {"en": ("←→ Route page", "esc Close"), "zh_CN": ("←→ 路由翻页", "esc 关闭")}[language]
            # The footer is built after the screen's bindings settle: wait for it, not a fixed time.
            await until(pilot, lambda: paging in screen_lines(app)[-1])
            assert close in screen_lines(app)[-1]
            labels = footer_labels(app)
            assert paging.partition(" ")[2] in labels and len(labels) == len(set(labels)), labels

    try:
        run(scenario())
    finally:
        i18n.set_language("en")


def test_under_each_route_one_line_says_why_for_the_removal(bench, example) -> None:
    async def scenario() -> None:
        app = bench.app(session=example)
        async with app.run_test(size=(200, 50)) as pilot:
            await open_inspector(pilot, 4)  # −grep
            shown = columns(app)
            assert (
                "addition-only: grep is no longer declared; its removal is not sent; the prefix breaks at /tools/2"
                in shown["deepseek/deepseek-flash"]
            )
            assert (
                "in-history: grep stays declared; a removal block takes it away; the prefix is kept"
                in shown["anthropic/claude-sonnet"]
            )
            await pilot.press("right")
            shown = columns(app)
            assert (
                "none: grep is no longer declared; this route sends no update blocks; the prefix breaks at /tools/1"
                in shown["openai/gpt"]
            )

    run(scenario())


def test_under_each_route_one_line_says_why_for_an_addition_and_the_beta_is_named(bench, example) -> None:
    async def scenario() -> None:
        app = bench.app(session=example)
        async with app.run_test(size=(200, 50)) as pilot:
            await open_inspector(pilot, 3)  # +time
            flash = columns(app)["deepseek/deepseek-flash"]
            assert (
                "addition-only: time is declared deferred; an addition block makes it available; the prefix is kept"
                in flash
            )
            assert (
                "Beta header: anthropic-beta: mid-conversation-tool-changes-2026-07-01 "
                "the header DeepSeek's tool-change beta uses (Anthropic's name for it); "
                "sent because this body carries update blocks"
            ) in flash
            await pilot.press("p", "p")
            assert "addition-only: the first request declares the tools in force" in columns(app)["deepseek/deepseek-flash"]

    run(scenario())


def test_a_route_whose_summary_equals_another_shown_says_same_as(bench, example) -> None:
    async def scenario() -> None:
        app = bench.app(session=example)
        async with app.run_test(size=(120, 40)) as pilot:
            screen = await open_inspector(pilot, 4)
            pro = columns(app)["deepseek/deepseek-pro"]
            assert "Same as deepseek/deepseek-flash: the same prefix, beta header, declarations and blocks" in pro
            assert "Declarations" not in pro
            # Only a route on the screen's list is pointed to: with flash hidden, pro is shown whole.
            await pilot.press("r", "space", "escape")
            assert screen.shown_routes == SIX_ROUTES[1:]
            pro = columns(app)["deepseek/deepseek-pro"]
            assert "Same as" not in pro and "Declarations read initial time added defer_loading" in pro

    run(scenario())

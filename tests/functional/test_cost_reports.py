"""Issue 27 item 4 outside the TUI: `toolscope inspect`'s `Cache` line per route, and the exports'
cache diagnostic per request and route and cost per route, on the worked example of
docs/inspect.md (request 4 removes grep, request 5 adds it back) through the real console command.
Each agrees with `inspect --json`'s `cache` objects and with `toolscope cost --json`."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from app.display import token_count
from app.llm.routes import load_catalog
from app.report.cache import CacheCause
from app.report.cost import request_cost
from app.report.model import inspect_requests
from app.report.prices import PriceBook
from app.report.wording import cost_words
from app.session.session import Session
from tests.functional.test_export import export, toolscope
from tests.functional.test_inspect import worked_example, write_session
from tests.support.builder import tool

FLASH, SONNET, DEMO = "deepseek/deepseek-flash", "anthropic/claude-sonnet", "offline/demo"
FLASH_WORDS = [
    "initial write",
    "served from cache",
    "served from cache",  # +time: declared deferred, the prefix is kept
    "tools changed (−grep) at /tools/2",
    "tools changed (+grep) at /tools/1",
    "served from cache",
]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def session_path(home: Path) -> Path:
    log, _developer = worked_example()
    return write_session(log, home / "sessions")


def inspect_cache(home: Path, session: Path) -> list[dict]:
    """Per request, each route's `cache` object of `inspect --json`."""
    result = toolscope(home, "inspect", str(session), "--json")
    assert result.returncode == 0, result.stderr
    return [{route: value["cache"] for route, value in request["routes"].items()} for request in json.loads(result.stdout)["requests"]]


def expected_row(words: str, cache: dict) -> str:
    """The start of the cache row for `cache` (an `inspect --json` object): words and tokens."""
    tokens = cache["estimated_tokens"]
    return f"{words} · {token_count(tokens['cached'])} cached, {token_count(tokens['uncached'])} uncached"


def costs(session: Path) -> dict[str, list[str]]:
    """Per route, each request's input cost in words (the report model, priced)."""
    requests = Session.open(session).load().view().requests
    prices = PriceBook.of(None)
    by_route: dict[str, list[str]] = {}
    for report in inspect_requests(requests, list(load_catalog())):
        for item in report.routes:
            cost = request_cost(item.route, item.cache, prices)
            by_route.setdefault(item.route.id, []).append(cost_words(cost))
    return by_route


def test_inspect_says_each_routes_cache_diagnostic_tokens_and_cost_under_its_prefix(home, session_path):
    caches = inspect_cache(home, session_path)
    priced = costs(session_path)
    result = toolscope(home, "inspect", str(session_path), "--route", FLASH, "--route", DEMO, "--no-pager")
    assert result.returncode == 0, result.stderr
    requests = result.stdout.split("━━ Request ")[1:]
    for number, request in enumerate(requests):
        rows = [line.split("Cache", 1)[1].strip() for line in request.splitlines() if line.lstrip().startswith("Cache ")]
        flash, demo = caches[number][FLASH], caches[number][DEMO]
        assert rows == [
            expected_row(FLASH_WORDS[number], flash) + " · " + priced[FLASH][number],
            expected_row(FLASH_WORDS[number] if number < 3 else "served from cache", demo) + " · no price",
        ]
    # A route unchanged since an earlier request takes one line, and its cache row under it.
    assert "offline/demo  unchanged since request 1\n  Cache         served from cache · " in requests[1]
    # Under the prefix, before the beta header; a cost below a hundredth of a cent is said so.
    assert re.search(r"  Prefix +broken at /tools/2\n  Cache +tools changed \(−grep\) at /tools/2 · ", requests[3])
    assert priced[FLASH][3] == "< $0.0001" and priced[SONNET][3].startswith("≈ $0.000")


def test_the_markdown_export_has_each_routes_cache_row_and_the_cost_per_route(home, session_path):
    caches = inspect_cache(home, session_path)
    priced = costs(session_path)
    text = export(home, session_path.stem, "md")
    rows = [line.removeprefix("  - Cache: ") for line in text.splitlines() if line.startswith("  - Cache: ")]
    assert len(rows) == 6 * 6
    flash = rows[0::6]
    assert flash == [
        expected_row(words.replace("grep", "`grep`"), caches[number][FLASH]) + " · " + priced[FLASH][number]
        for number, words in enumerate(FLASH_WORDS)
    ]
    cost = json.loads(toolscope(home, "cost", session_path.stem, "--json").stdout)
    table = text.split("## Cost per route\n", 1)[1]
    tokens = MarkdownIt().enable("table").parse(table)
    cells = [token.content for token in tokens if token.type == "inline"]
    header = cells.index("route")
    assert cells[header : header + 8] == ["route", "mode", "requests", "hits", "input", "uncached", "cost", "misses"]
    body = [cells[start : start + 8] for start in range(header + 8, header + 8 + 6 * 8, 8)]
    assert [row[0] for row in body] == [f"`{route['route']}`" for route in cost["routes"]]
    for row, route in zip(body, cost["routes"], strict=True):
        assert row[2:6] == [str(route["requests"]), str(route["hits"]), token_count(route["input_tokens"]), token_count(route["uncached_tokens"])]
    assert body[0][7] == "initial write 1, tools changed 2" and body[2][7] == "initial write 1"
    assert text.rstrip().endswith(f"Cheapest: {cost['cheapest']} (" + body[[r['route'] for r in cost['routes']].index(cost['cheapest'])][6] + ").")


def test_the_html_export_has_each_routes_cache_row_and_the_cost_per_route(home, session_path):
    text = export(home, session_path.stem, "html")
    rows = re.findall(r"<dt>Cache</dt><dd><span class=\"(kept|broken)\">(.*?)</span></dd>", text)
    assert len(rows) == 6 * 6
    flash = [(css, html.unescape(re.sub("</?code>", "`", row))) for css, row in rows[0::6]]
    assert [row.split(" · ")[0] for _css, row in flash] == [words.replace("grep", "`grep`") for words in FLASH_WORDS]
    assert [css for css, _row in flash] == ["broken", "kept", "kept", "broken", "broken", "kept"]
    section = text.split('<section class="cost" id="cost">', 1)[1].split("</section>", 1)[0]
    assert "<h2>Cost per route</h2>" in section
    assert section.count("<tr>") == 1 + 6 and "initial write 1, tools changed 2" in section
    assert text.index('<section class="cost"') > text.rindex('<section class="request"')


def test_the_json_export_carries_each_requests_cache_per_route_and_the_cost(home, session_path):
    data = json.loads(export(home, session_path.stem, "json"))
    assert [request["cache"] for request in data["requests"]] == inspect_cache(home, session_path)
    cost = json.loads(toolscope(home, "cost", session_path.stem, "--json").stdout)
    for route in cost["routes"]:
        del route["by_mode"]
    assert data["cost"] == {key: cost[key] for key in ("prices", "calibration", "routes", "cheapest")}
    assert [request["cache"][FLASH]["cause"] for request in data["requests"]] == [
        CacheCause.INITIAL, None, None, CacheCause.TOOLS_CHANGED, CacheCause.TOOLS_CHANGED, None
    ]


def test_a_hostile_tool_name_in_a_cause_stays_literal(home):
    """A tool's name is the session's text: code in Markdown, escaped in HTML, as it is in JSON."""
    name = "<img src=x>`[bold]x"
    log, _developer = worked_example()
    log.simple_turn([tool("read"), tool("time"), tool("grep"), tool(name)], "and one more")
    path = write_session(log, home / "sessions")
    markdown = export(home, path.stem, "md")
    assert "  - Cache: tools changed (+``<img src=x>`[bold]x``) at /tools/3" in markdown
    page = export(home, path.stem, "html")
    assert "tools changed (+<code>&lt;img src=x&gt;`[bold]x</code>)" in page and "<img src=x>" not in page
    data = json.loads(export(home, path.stem, "json"))
    assert data["requests"][-1]["cache"]["openai/gpt"]["tools"]["added"] == [name]

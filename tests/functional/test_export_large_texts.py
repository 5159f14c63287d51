"""A large text is shown once in an export and referred to everywhere else (issue 23, item 6),
through the real `toolscope export`: a big tool result, a big user message and a big instructions
update reach every route's wire body in every later request, and each route's diff and blocks point
at the one place the text is shown. The export's memory is bounded by the largest text and does
not grow with the session (a child's peak RSS, `tests/support/rss.py`)."""

from __future__ import annotations

import base64
import html
import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from app.llm.routes import load_catalog
from app.session.session import Session
from app.session.view_items import ContextItem, ToolResultItem, UserItem
from benchmarks.sessions import write_large_session
from tests.functional.test_export import TOOLSCOPE, export
from tests.functional.test_inspect import write_session
from tests.support.builder import LogBuilder, tool
from tests.support.rss import peak_rss

READ = tool("read", path={"type": "string"})
LINES = 2_000  # about 80 kB: well past the size from which a text is shown once


def big(name: str) -> str:
    return "".join(f'{name} line {n:05d} <b>"quoted"</b> & more\n' for n in range(LINES))


RESULT, QUESTION, SYSTEM = big("result"), big("question"), big("system")


def large_log() -> LogBuilder:
    log = LogBuilder("large-texts")
    log.start_turn("read the log")
    log.start_step()
    log.header_for([READ])
    log.assistant("reading", calls=[("call_7", "read", '{"path": "build.log"}')])
    log.tool_round("call_7", "read", RESULT)
    log.end_step()
    log.start_step()
    log.assistant("it is long")
    log.end_step()
    log.end_turn()
    log.start_turn(QUESTION)
    log.start_step()
    log.assistant("a long question")
    log.end_step()
    log.end_turn()
    log.start_turn("new instructions")
    log.start_step()
    log.header_for([READ], system=SYSTEM)
    log.assistant("understood")
    log.end_step()
    log.end_turn()
    log.simple_turn([READ], "one more", system=SYSTEM)
    return log


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def session(home: Path) -> Path:
    return write_session(large_log(), home / "sessions")


def seq_of(path: Path, kind: type) -> int:
    (seq,) = [item.seq for item in Session.open(path).view().items if isinstance(item, kind) and len(str(item)) > 50_000]
    return seq


class _Links(HTMLParser):
    """Every element's id, and every link with its target and text."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[tuple[dict[str, str | None], str]] = []
        self._link: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if "id" in attributes:
            self.ids.add(attributes["id"] or "")
        if tag == "a":
            self._link, self._text = attributes, []

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._link is not None:
            self.links.append((self._link, "".join(self._text)))
            self._link = None

    def handle_data(self, data: str) -> None:
        if self._link is not None:
            self._text.append(data)


def test_the_html_shows_each_large_text_once_and_every_route_refers_to_it(home, session):
    page = export(home, session.stem, "html")
    result_seq, question_seq = seq_of(session, ToolResultItem), seq_of(session, UserItem)
    system_seq = seq_of(session, ContextItem)
    for name, seq in (("result", result_seq), ("question", question_seq), ("system", system_seq)):
        assert page.count(f"{name} line 00000 ") == 1
        assert page.count(f"{name} line {LINES - 1:05d} ") == 1
    assert f'<pre id="text-{result_seq}">{html.escape(RESULT)}</pre>' in page
    assert f'<pre id="text-{question_seq}">{html.escape(QUESTION)}</pre>' in page
    assert f'<pre id="text-{system_seq}">{html.escape(SYSTEM)}</pre>' in page
    links = _Links()
    links.feed(page)
    targets = [attributes["href"] for attributes, _text in links.links]
    assert all(href is not None and href.startswith("#") and href[1:] in links.ids for href in targets)
    texts = {f"#text-{result_seq}": "tool result of call call_7", f"#text-{question_seq}": "user message",
             f"#text-{system_seq}": "instructions update"}
    for attributes, text in links.links:
        assert attributes == {"class": "ref", "href": attributes["href"]}
        assert re.fullmatch(re.escape(texts[attributes["href"]]) + r", \d+\.\d kB, shown in turn \d", text), text
    routes = len(load_catalog())
    # Request 2 adds the result to each route's body: every route's diff refers to it.
    assert targets.count(f"#text-{result_seq}") >= routes
    assert targets.count(f"#text-{question_seq}") >= routes
    assert targets.count(f"#text-{system_seq}") >= routes
    rest = page
    for text in (RESULT, QUESTION, SYSTEM):
        rest = rest.replace(html.escape(text), "")
    assert len(rest) < 100_000  # five requests on six routes, without the texts


def test_markdown_shows_each_large_text_once(home, session):
    text = export(home, session.stem, "md")
    for name in ("result", "question", "system"):
        assert text.count(f"{name} line 00000 ") == 1
    # The in-history routes carry the instructions as a block in every later request: referred to.
    assert re.search(r"instructions \*instructions update, \d+\.\d kB, shown in turn 3\*", text)


def test_the_json_holds_each_message_text_once(home, session):
    data = export(home, session.stem, "json")
    assert data.count("result line 00000 ") == 1 and data.count("question line 00000 ") == 1


def export_rss_mb(home: Path, path: Path, fmt: str) -> float:
    """The peak RSS of `toolscope export PATH --format FMT` (`tests/support/rss.py`)."""
    env = {key: value for key, value in os.environ.items() if key not in ("TOOLSCOPE_CONFIG", "LC_ALL", "LANG")}
    env.update(TOOLSCOPE_HOME=str(home), LANG="C.UTF-8")
    code, rss = peak_rss([str(TOOLSCOPE), "export", str(path), "--format", fmt], env=env)
    assert code == 0
    return rss / 2**20


@pytest.mark.slow(seconds=15)
def test_memory_is_bounded_by_the_largest_text_not_by_routes_or_turns(home, tmp_path):
    """A 10 MB tool result followed by short turns, exported in a child process whose peak RSS is
    read: each format stays within a few copies of the text over the command's floor (the old
    export held every route's diff of it, and the whole document)."""
    result = "x" * 10_000_000
    log = LogBuilder("huge")
    log.start_turn("read it")
    log.start_step()
    log.header_for([READ])
    log.assistant("reading", calls=[("call_1", "read", "{}")])
    log.tool_round("call_1", "read", result)
    log.end_step()
    log.end_turn()
    for n in range(4):
        log.simple_turn([READ], f"question {n}")
    path = write_session(log, home / "sessions")
    tiny = LogBuilder("small")
    tiny.simple_turn([READ])
    small = write_session(tiny, home / "sessions")
    floor = export_rss_mb(home, small, "html")
    for fmt in ("html", "md", "json"):
        assert export_rss_mb(home, path, fmt) < floor + 6 * 10, fmt


@pytest.mark.slow(seconds=15)
def test_memory_does_not_grow_with_the_session(home):
    """The same generator's session at 500 and at 4,000 events (compacted every ten turns, so
    that each request's message window stays short, as a long real session's does): each format's
    peak RSS grows by less than a few MB for eight times the events (the old export: +400 MB in
    HTML, the whole document and every report held at once)."""
    sessions = home / "sessions"
    sessions.mkdir(parents=True)
    short, long = sessions / "20260101-000000-0001f4.jsonl", sessions / "20260101-000000-000fa0.jsonl"
    write_large_session(short, 500, compaction_every=10)
    write_large_session(long, 4_000, compaction_every=10)
    for fmt in ("html", "md", "json"):
        assert export_rss_mb(home, long, fmt) < export_rss_mb(home, short, fmt) + 25, fmt


def test_session_text_cannot_forge_a_reference(home):
    """A reference is printed from a token holding a nonce of the export's own; text shaped like a
    token, in a message every later body carries, stays text."""
    forged = base64.urlsafe_b64encode(json.dumps(["turn-1", "click me"]).encode()).decode()
    log = large_log()
    log.simple_turn([READ], f'"\ue000{"0" * 16}:{forged}\ue001" and "\ue000:{forged}\ue001"', system=SYSTEM)
    log.simple_turn([READ], "after it", system=SYSTEM)
    page = export(home, write_session(log, home / "sessions").stem, "html")
    links = _Links()
    links.feed(page)
    assert forged in page and "click me" not in page
    assert links.links and all(attributes["href"].startswith("#text-") for attributes, _text in links.links)

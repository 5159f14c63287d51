"""`toolscope export` through the real console command, on crafted sessions: docs/architecture.md §8's worked
example, then a turn with hostile text (HTML, Markdown links, Rich markup, escape sequences, a
bidi override, the API key) and a multi-tool change. Each export is read back."""

from __future__ import annotations

import dataclasses
from html.parser import HTMLParser
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from pydantic import TypeAdapter

from app.export.view_json import ITEM_KINDS
from app.llm.routes import load_catalog
from app.session.events import ToolRegistryUpdate
from app.session.tool_history import ToolHistory
from app.session.session import Session
from app.session.view_items import ContextItem
from tests.functional.test_inspect import worked_example, write_session
from tests.support.builder import tool

TOOLSCOPE = Path(sys.executable).parent / "toolscope"
KEY = "sk-export-test-0123456789abcdef"
HOSTILE = (
    "<script>alert(1)</script> [bold red]rich[/] \x1b]0;title\x07\x1b[31mred\x1b[0m "
    "\u202egnp.exe [link](javascript:alert(1)) <img src=http://evil.example/x.png> " + KEY
)


def crafted_log():
    log, _developer = worked_example()
    log.start_turn(HOSTILE)
    log.start_step()
    # Two tools at once: the context node shows the counts and a list of names.
    log.header_for([tool("read"), tool("time"), tool("grep"), tool("alpha"), tool("beta")])
    log.assistant(HOSTILE, calls=[("call_9", "alpha", json.dumps({"text": HOSTILE}))])
    log.tool_round("call_9", "alpha", "result: " + HOSTILE)
    log.end_step()
    log.start_step()
    log.request_error()
    log.retry()
    log.header_for([tool("read"), tool("time"), tool("grep"), tool("alpha")])
    log.assistant("done")
    log.end_step()
    log.end_turn()
    return log


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def session_path(home: Path) -> Path:
    return write_session(crafted_log(), home / "sessions")


def toolscope(home: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("TOOLSCOPE_CONFIG", "LC_ALL", "LC_MESSAGES", "LANG", "NO_COLOR")
    }
    env.update(TOOLSCOPE_HOME=str(home), LANG="C.UTF-8", DEEPSEEK_API_KEY=KEY)
    env.update(extra)
    return subprocess.run(
        [str(TOOLSCOPE), *args], capture_output=True, text=True, encoding="utf-8", env=env, timeout=120
    )


def export(home: Path, session: str, fmt: str, *more: str) -> str:
    result = toolscope(home, "export", session, "--format", fmt, *more)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


def tool_changes(path: Path) -> list[ToolRegistryUpdate]:
    return [
        item.message
        for item in Session.open(path).view().items
        if isinstance(item, ContextItem) and item.is_tool_change
    ]


# --- JSON: the session view ----------------------------------------------------------------------


def test_the_json_export_equals_the_session_view(home, session_path):
    data = json.loads(export(home, session_path.stem, "json"))
    view = Session.open(session_path).view()
    assert data["format"] == "toolscope-session-view" and data["version"] == 1
    assert data["session"]["id"] == view.header.id == session_path.stem
    # Every item rebuilt from its JSON is the view's item (the key aside: it is redacted).
    assert len(data["items"]) == len(view.items)
    kinds = {kind: cls for cls, kind in ITEM_KINDS.items()}
    for item, exported in zip(view.items, data["items"], strict=True):
        cls = kinds[exported.pop("kind")]
        assert cls is type(item)
        rebuilt = TypeAdapter(cls).validate_json(json.dumps(exported))
        expected = json.loads(json.dumps(dataclasses.asdict(item), default=str).replace(KEY, "[redacted]"))
        assert json.loads(json.dumps(dataclasses.asdict(rebuilt), default=str)) == expected
        if KEY not in json.dumps(dataclasses.asdict(item), default=str):
            assert rebuilt == item
    assert [r["index"] for r in data["requests"]] == [r.index for r in view.requests]
    for request, exported in zip(view.requests, data["requests"], strict=True):
        assert (exported["seq"], exported["turn"], exported["step"], exported["route"]) == (
            request.seq,
            request.turn,
            request.step,
            request.route,
        )
        assert exported["failed"] == request.failed
        assert exported["header_seq"] == request.header_seq
        assert exported["messages"] == [message.seq for message in request.messages]
        assert TypeAdapter(ToolHistory).validate_json(json.dumps(exported["history"])) == request.history
    assert [
        (t["number"], t["seq"], t["end_seq"], t["end_reason"], t["items"]) for t in data["turns"]
    ] == [
        (t.number, t.seq, t.end_seq, t.end_reason, [i.seq for i in t.items]) for t in view.turns
    ]
    assert [[(s["number"], s["items"], s["requests"]) for s in t["steps"]] for t in data["turns"]] == [
        [(s.number, [i.seq for i in s.items], [r.index for r in s.requests]) for s in t.steps]
        for t in view.turns
    ]


# --- Markdown and HTML: every tool change, every request and route -------------------------------


def test_markdown_names_every_tool_change_and_what_each_route_received(home, session_path):
    text = export(home, session_path.stem, "md")
    changes = tool_changes(session_path)
    assert len(changes) == 5
    context_lines = [line for line in text.splitlines() if line.startswith("> **Context**")]
    assert len(context_lines) == len(changes)
    assert context_lines[:3] == [
        "> **Context** · Tool added: `time`",
        "> **Context** · Tool removed: `grep`",
        "> **Context** · Tool added: `grep`",
    ]
    assert context_lines[3] == "> **Context** · 2 tools added"
    assert ">  - + `alpha`" in text and ">  - + `beta`" in text
    assert context_lines[4] == "> **Context** · Tool removed: `beta`"
    requests = len(Session.open(session_path).view().requests)
    for n in range(1, requests + 1):
        assert f"#### Request {n} · " in text
    assert "Tools since the previous request: removed `grep`" in text
    for route in load_catalog():
        assert text.count(f"- **`{route.id}`**") == requests
    assert "`read` (initial), `grep` (retained after removal), `time` (added, defer_loading)" in text


def test_html_names_every_tool_change_in_collapsible_lists(home, session_path):
    page = export(home, session_path.stem, "html")
    nodes = re.findall(r'<div class="context tool-change" id="context-\d+">(.*?)</div>', page)
    assert len(nodes) == len(tool_changes(session_path))
    assert "Tool added: <code>time</code>" in nodes[0]
    assert "Tool removed: <code>grep</code>" in nodes[1]
    assert nodes[3].count("<details>") == 1
    assert "<summary><strong>Context</strong> · 2 tools added</summary>" in nodes[3]
    assert "<li>+ <code>alpha</code></li><li>+ <code>beta</code></li>" in nodes[3]
    requests = Session.open(session_path).view().requests
    for request in requests:
        assert f'<section class="request" id="request-{request.index}">' in page
    for route in load_catalog():
        assert page.count(f'data-route="{route.id}"') == len(requests)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)


def test_the_html_file_references_nothing_outside_itself(home, session_path):
    parser = _Tags()
    parser.feed(export(home, session_path.stem, "html"))
    names = {tag for tag, _attrs in parser.tags}
    assert not names & {"link", "script", "img", "iframe", "object", "embed", "base", "a", "form"}
    for tag, attrs in parser.tags:
        assert not set(attrs) & {"src", "href", "srcset", "action", "poster", "style"}, tag
        assert not any(name.startswith("on") for name in attrs), tag
    assert not re.search(r"@import|url\(", "".join(parser.styles), re.IGNORECASE)
    assert ("meta", {"http-equiv": "Content-Security-Policy", "content": "default-src 'none'; style-src 'unsafe-inline'"}) in parser.tags


# --- hostile text and the key --------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_the_key_is_redacted_and_escape_sequences_and_bidi_controls_are_gone(home, session_path, fmt):
    assert KEY in session_path.read_text()
    text = export(home, session_path.stem, fmt)
    assert KEY not in text
    assert "[redacted]" in text
    assert "\x1b" not in text and "\x07" not in text
    assert "\u202e" not in text


def test_hostile_text_is_escaped_in_html(home, session_path):
    page = export(home, session_path.stem, "html")
    assert "<script>" not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=http://evil.example/x.png&gt;" in page
    assert "[bold red]rich[/]" in page  # Rich markup is just text here
    assert "redgnp.exe" not in page and " red gnp.exe" in page


def test_hostile_text_cannot_become_html_or_links_in_markdown(home, session_path):
    text = export(home, session_path.stem, "md")
    rendered = MarkdownIt("gfm-like", {"linkify": False}).render(text)
    assert "<script" not in rendered and "<img" not in rendered
    assert "<a " not in rendered
    assert "&lt;script&gt;" in rendered
    assert "[bold red]rich[/]" in text


def test_a_hostile_tool_name_stays_inside_its_code_span(home, tmp_path):
    log, _developer = worked_example()
    log.start_turn("more")
    log.start_step()
    log.header_for([tool("read"), tool("time"), tool("grep"), tool("x`](http://evil.example)<b>")])
    log.assistant("ok")
    log.end_step()
    log.end_turn()
    path = write_session(log, home / "sessions")
    rendered = MarkdownIt("gfm-like").render(export(home, path.stem, "md"))
    assert "<a " not in rendered and "<b>" not in rendered
    assert "<code>x`](http://evil.example)&lt;b&gt;</code>" in rendered
    page = export(home, path.stem, "html")
    assert "Tool added: <code>x`](http://evil.example)&lt;b&gt;</code>" in page


# --- files and errors ----------------------------------------------------------------------------


def test_o_writes_the_whole_file_private_replacing_an_old_one(home, session_path, tmp_path):
    target = tmp_path / "out" / "export.html"
    target.parent.mkdir()
    target.write_text("old")
    target.chmod(0o644)
    result = toolscope(home, "export", str(session_path), "--format", "html", "-o", str(target))
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.read_text(encoding="utf-8") == export(home, session_path.stem, "html")
    assert sorted(p.name for p in target.parent.iterdir()) == ["export.html"]


def test_an_unwritable_path_is_one_line_and_exit_1(home, session_path, tmp_path):
    for target in (tmp_path / "missing" / "x.md", tmp_path):
        result = toolscope(home, "export", session_path.stem, "--format", "md", "-o", str(target))
        assert result.returncode == 1
        assert result.stderr.startswith(f"toolscope: error: cannot write {target}: ")
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_an_unknown_session_is_one_line_and_exit_1(home):
    result = toolscope(home, "export", "no-such-session", "--format", "json")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("toolscope: error: ") and result.stderr.count("\n") == 1
    assert "no-such-session" in result.stderr


def test_a_missing_or_unknown_format_is_a_usage_error(home, session_path):
    for args in ([], ["--format", "pdf"]):
        result = toolscope(home, "export", session_path.stem, *args)
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert "--format" in result.stderr


def test_the_headings_follow_the_chosen_language(home, session_path):
    text = toolscope(home, "--lang", "zh_CN", "export", session_path.stem, "--format", "md").stdout
    assert text.startswith(f"# 会话 `{session_path.stem}`\n")
    assert "## 第 1 轮" in text and "### 用户" in text
    assert "> **上下文** · 已添加工具：`time`" in text
    assert "自上一个请求以来的工具变化：移除 `grep`" in text
    page = toolscope(home, "export", session_path.stem, "--format", "html", LANG="zh_CN.UTF-8").stdout
    assert '<html lang="zh-CN">' in page and "<h3>用户</h3>" in page


def test_a_torn_last_line_is_skipped_with_a_warning(home, session_path):
    complete = export(home, session_path.stem, "json")
    with session_path.open("a", encoding="utf-8") as handle:
        handle.write('{"type": "user/message", "seq": 9')
    result = toolscope(home, "export", session_path.stem, "--format", "json")
    assert result.returncode == 0 and result.stdout == complete
    assert result.stderr == (
        f"toolscope: warning: {session_path}: the last line is incomplete (left by a crash) "
        "and was not read\n"
    )


def test_compactions_and_new_sequences_are_shown(home):
    from tests.support.builder import LogBuilder

    log = LogBuilder("compacted")
    log.simple_turn([tool("read")], "first")
    log.start_turn("second")
    log.start_step()
    log.compaction("Earlier: the user said <first>.")
    log.header_for([tool("read")], new_sequence=True)
    log.assistant("fresh start")
    log.end_step()
    log.end_turn()
    path = write_session(log, home / "sessions")
    text = export(home, path.stem, "md")
    assert "### Compaction (sequence 1)\n\n```text\nEarlier: the user said <first>.\n```" in text
    assert "*New projection sequence 1*" in text
    page = export(home, path.stem, "html")
    assert "<h3>Compaction (sequence 1)</h3>\n<pre>Earlier: the user said &lt;first&gt;.</pre>" in page
    assert '<p class="sequence"><em>New projection sequence 1</em></p>' in page

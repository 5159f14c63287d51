"""The HTML export opened in a real headless Chromium (Debian's `chromium`; `.ci/run` installs it):
the DOM holds every request's route sections and every tool change, the multi-tool change's list
is a closed `<details>`, following a link to the list opens it, and clicking a reference to a
large text lands on the text. Skipped only when no Chromium binary exists."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from app.llm.routes import load_catalog
from app.session.session import Session
from app.session.view_items import ContextItem, ToolResultItem, UserItem
from tests.functional.test_export import crafted_log, toolscope
from tests.functional.test_export_large_texts import large_log, seq_of
from tests.functional.test_inspect import write_session
from tests.support.builder import LogBuilder, tool

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium binary on PATH (.ci/run installs Debian's chromium)"
)


def dump_dom(url: str, profile: Path, *options: str) -> str:
    """The DOM after Chromium loaded `url`, offline: no network, no GPU, a throwaway profile."""
    result = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            f"--user-data-dir={profile}",
            *options,
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


class _Dom(HTMLParser):
    """Requests, route articles per request, tool-change nodes and their `<details>` state."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: dict[str, list[str]] = {}
        self.details_open: list[bool] = []
        self._request: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "section" and attributes.get("class") == "request":
            self._request = attributes["id"]
            self.requests[self._request] = []
        elif tag == "article" and self._request is not None:
            self.requests[self._request].append(attributes["data-route"])
        elif tag == "details":
            self.details_open.append("open" in attributes)


@pytest.fixture
def exported(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    session = write_session(crafted_log(), home / "sessions")
    page = tmp_path / "export.html"
    result = toolscope(home, "export", session.stem, "--format", "html", "-o", str(page))
    assert result.returncode == 0, result.stderr
    return session, page


def test_chromium_shows_every_request_route_and_tool_change(exported, tmp_path):
    session, page = exported
    dom = dump_dom(page.as_uri(), tmp_path / "profile")
    parsed = _Dom()
    parsed.feed(dom)
    view = Session.open(session).view()
    catalog = list(load_catalog().ids)
    assert parsed.requests == {f"request-{r.index}": catalog for r in view.requests}
    text = re.sub(r"<[^>]+>", "", dom)
    for line in ("Tool added: time", "Tool removed: grep", "Tool added: grep", "2 tools added",
                 "Tool removed: beta", "Tools since the previous request: added alpha, beta"):
        assert line in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom and "<script>" not in dom


def test_the_tool_change_list_is_collapsed_and_a_link_to_it_opens_it(exported, tmp_path):
    _session, page = exported
    closed = dump_dom(page.as_uri(), tmp_path / "profile")
    match = re.search(r'<details><summary><strong>Context</strong> · 2 tools added</summary><ul id="(context-\d+-tools)">', closed)
    assert match, "the multi-tool change is a closed <details> list"
    assert "<li>+ <code>alpha</code></li><li>+ <code>beta</code></li>" in closed
    opened = dump_dom(f"{page.as_uri()}#{match.group(1)}", tmp_path / "profile2")
    assert re.search(r'<details open="[^"]*"><summary><strong>Context</strong> · 2 tools added</summary>', opened)


OVERFLOW_PROBE = """<script>
const width = document.documentElement.clientWidth, wide = [];
for (const element of document.querySelectorAll("body *")) {
  if (element.getBoundingClientRect().right > width + 1) wide.push(element.tagName);
}
const out = document.createElement("output");
out.id = "probe"; out.textContent = wide.length ? "wide: " + wide.join(" ") : "fits";
document.body.append(out);
</script></body>"""


@pytest.mark.parametrize("width", [1300, 800])
def test_the_page_fits_the_window_with_long_tool_names(tmp_path, width):
    """Route cards side by side must not push the page sideways: a long MCP tool name that is
    retained after its removal and one declared with defer_loading used to widen every card. The
    probe script is added to a copy without the page's Content-Security-Policy, which forbids it."""
    long_name, later = "lab__files_read_8a6d1028", "lab__search_everything_quickly"
    log = LogBuilder("long-names")
    log.start_turn("read the notes")
    for tools in ([tool("read_file"), tool(long_name)], [tool("read_file"), tool(later)]):
        log.start_step()
        log.header_for(tools)
        log.assistant("reading")
        log.end_step()
    log.end_turn()
    home = tmp_path / "home"
    session = write_session(log, home / "sessions")
    page = tmp_path / "export.html"
    result = toolscope(home, "export", session.stem, "--format", "html", "-o", str(page))
    assert result.returncode == 0, result.stderr
    html = page.read_text(encoding="utf-8")
    assert long_name in html and "retained" in html
    probed = tmp_path / "probed.html"
    probed.write_text(
        re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html).replace("</body>", OVERFLOW_PROBE),
        encoding="utf-8",
    )
    dom = dump_dom(probed.as_uri(), tmp_path / "profile", f"--window-size={width},1000")
    assert '<output id="probe">fits</output>' in dom


LINK_PROBE = """<script>
const landed = [];
for (const href of new Set([...document.querySelectorAll("a.ref")].map(link => link.getAttribute("href")))) {
  const link = document.querySelector(`a.ref[href="${href}"]`);
  for (let details = link.closest("details"); details; details = details.parentElement.closest("details")) {
    details.open = true;
  }
  window.scrollTo(0, document.body.scrollHeight);
  link.click();
  const target = document.querySelector(href);
  landed.push([href, location.hash === href, Math.round(target.getBoundingClientRect().top),
               target.textContent.split(" ")[0]].join(" "));
}
const out = document.createElement("output");
out.id = "probe"; out.textContent = landed.join("; ");
document.body.append(out);
</script></body>"""


def test_a_reference_in_a_diff_lands_on_the_text_it_stands_for(tmp_path):
    """Each large text's first reference (in a route's body diff, its `<details>` opened as a user
    would) is clicked from the bottom of the page: the page scrolls to the text itself. The probe
    script goes into a copy without the page's Content-Security-Policy, which forbids it."""
    home = tmp_path / "home"
    session = write_session(large_log(), home / "sessions")
    page = tmp_path / "export.html"
    result = toolscope(home, "export", session.stem, "--format", "html", "-o", str(page))
    assert result.returncode == 0, result.stderr
    probed = tmp_path / "probed.html"
    html = page.read_text(encoding="utf-8")
    probed.write_text(
        re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html).replace("</body>", LINK_PROBE),
        encoding="utf-8",
    )
    dom = dump_dom(probed.as_uri(), tmp_path / "profile", "--window-size=1200,900")
    landed = re.search(r'<output id="probe">(.*?)</output>', dom)
    assert landed is not None
    expected = [
        f"#text-{seq_of(session, kind)} true 0 {name}"
        for kind, name in ((ToolResultItem, "result"), (UserItem, "question"), (ContextItem, "system"))
    ]
    assert landed.group(1).split("; ") == expected


TEXT_PROBE = """<script>
const out = document.createElement("output");
out.id = "probe"; out.textContent = document.body.innerText;
document.body.append(out);
</script></body>"""


def test_every_context_line_says_what_the_context_is(exported, tmp_path):
    """The page's text as Chromium lays it out: a tool change's label and its summary share a line
    (the label stood alone above a list's summary, a stray `Context ·`; issue 24 item 11). The
    probe script goes into a copy without the page's Content-Security-Policy, which forbids it."""
    _session, page = exported
    probed = tmp_path / "probed.html"
    html = page.read_text(encoding="utf-8")
    probed.write_text(
        re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html).replace("</body>", TEXT_PROBE),
        encoding="utf-8",
    )
    dom = dump_dom(probed.as_uri(), tmp_path / "profile", "--window-size=1200,900")
    shown = re.search(r'<output id="probe">(.*?)</output>', dom, re.S)
    assert shown is not None
    lines = [line.strip() for line in shown.group(1).splitlines()]
    context = [line for line in lines if line.startswith("Context")]
    assert "Context · 2 tools added" in context
    assert all(line.removeprefix("Context ·").strip() for line in context), context

"""What each row of the trajectory says: a one-line label, as words with the styles they are drawn in.

A `Label` holds its words in runs, each with the name of a Rich style the interface draws it in
(`app.ui.trajectory.labels`); the search reads a label's words here, with no interface imported.
Text from the session is cut to one printable line; the interface shows it literally.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from markdown_it import MarkdownIt

from app.agent.notices import instructions_notice, tool_change_notice
from app.i18n import _, ngettext
from app.session.events import ToolRegistryUpdate
from app.session.tool_changes import ChangedTool
from app.session.view import Step, Turn
from app.session.view_items import AssistantItem, ContextItem, HeaderItem, RequestErrorItem, RetryItem, SummaryItem, ToolCallItem, ToolResultItem, UserItem
from app.terminal import first_line, printable_line
from app.trajectory.entries import Entry, Unreadable

if TYPE_CHECKING:
    from app.report.cache import CacheDiagnostic


class Label:
    """One row's line: `text` in `style` (the whole line's), then each appended run in its own."""

    __slots__ = ("text", "style", "runs")

    def __init__(self, text: str = "", style: str = "") -> None:
        self.text = text
        self.style = style
        self.runs: list[tuple[str, str]] = []

    def append(self, text: str, style: str = "") -> Label:
        self.runs.append((text, style))
        return self

    @property
    def plain(self) -> str:
        return self.text + "".join(text for text, _style in self.runs)


LABEL_LIMIT = 240
"""Characters of untrusted text in a one-line label; the detail pane has the rest."""
PROMPT_CELLS = 50
"""Cells of a turn's row given to the start of its prompt: the row says what the turn was about and
leaves the tree's width to the rows under it (the user message's row has the rest)."""


def _clip(text: str) -> str:
    line = printable_line(text[: LABEL_LIMIT + 1])
    return line if len(line) <= LABEL_LIMIT else line[:LABEL_LIMIT] + "…"


def _styled(prefix: str, style: str, rest: str = "") -> Label:
    """A label: our own words styled, the untrusted part plain."""
    text = Label(prefix, style=style)
    if rest:
        text.append(" ")
        text.append(_clip(rest))
    return text


def label_of(entry: Entry, broken: CacheDiagnostic | None = None) -> Label:
    """`broken`: the request's cache diagnostic when its route missed its cache (the row's mark)."""
    subject = entry.subject
    if isinstance(subject, Turn):
        label = Label(turn_heading(subject), style="bold")
        prompt = next((item.text for item in subject.items if isinstance(item, UserItem)), "")
        if prompt:
            label.append(" · ")
            label.append(first_line(prompt, PROMPT_CELLS))
        return label
    if isinstance(subject, Step):
        return Label(_("Step {n}").format(n=subject.number), style="dim")
    if isinstance(subject, UserItem):
        return _styled(_("User:"), "bold cyan", subject.text)
    if isinstance(subject, AssistantItem):
        return _request_label(entry, subject, broken)
    if isinstance(subject, RequestErrorItem):
        index = entry.request.index if entry.request is not None else "?"
        failure = subject.failure
        label = Label(_("✗ Request {n} failed · {code}:").format(n=index, code=failure.code), style="bold red")
        _mark(label, broken)
        if failure.message:
            label.append(" ")
            label.append(_clip(failure.message))
        return label
    if isinstance(subject, ContextItem):
        return Label(_clip(_context_summary(subject)), style="magenta")
    if isinstance(subject, ToolCallItem):
        return _styled(_("→ {name}").format(name=_clip(subject.name)), "yellow", subject.arguments)
    if isinstance(subject, ToolResultItem):
        if subject.is_error:
            message = subject.error.message if subject.error is not None else subject.content
            code = subject.error.code if subject.error is not None else ""
            return _styled(_("✗ {name} {code}:").format(name=_clip(subject.name), code=code), "red", message)
        return _styled(_("← {name}:").format(name=_clip(subject.name)), "green", subject.content)
    if isinstance(subject, RetryItem):
        return _styled(
            _("↻ Retry {retry}/{max} after {seconds:.1f} s · {code}").format(
                retry=subject.retry,
                max=subject.max_retries,
                seconds=subject.delay_ms / 1000,
                code=subject.failure.code,
            ),
            "yellow",
        )
    if isinstance(subject, SummaryItem):
        return _styled(_("Compaction (sequence {n}):").format(n=subject.sequence), "bold blue", subject.summary)
    if isinstance(subject, Unreadable):
        return _styled(_("✗ Unreadable line:"), "bold red", subject.reason)
    assert isinstance(subject, HeaderItem)
    header = subject.header
    tools = ngettext("{n} tool", "{n} tools", len(header.tools)).format(n=len(header.tools))
    if "sequence" in entry.kinds:
        return _styled(
            _("═ New projection sequence {n} ·").format(n=header.sequence), "bold blue", f"{header.route} · {tools}"
        )
    return _styled(_("Request header ·"), "dim", f"{header.route} · {header.model} · {tools}")


_INLINE_TEXT = ("text", "code_inline", "html_inline", "image")


def plain_first_line(markdown: str) -> str:
    """The first non-blank line of a model's Markdown answer as the reader sees it: emphasis, code
    marks, heading and list marks and link targets dropped (a line that is no prose, such as a
    fence, stays as it is)."""
    line = next((line for line in markdown.splitlines() if line.strip()), "")
    if _PROSE.fullmatch(line.strip()):
        return line.strip()  # what the parse gives, at a fraction of its cost (a row per answer)
    return parsed_first_line(line)


_PROSE = re.compile(r"[^\W\d_][^\\`*_\[\]<>!&~\x00]*")
"""A line Markdown reads as plain text: it starts with a letter (no block mark: heading, quote,
list, fence, HTML) and holds no character an inline rule acts on."""


def parsed_first_line(line: str) -> str:
    """`line` as Markdown renders it, reduced to its inline text."""
    pieces = [
        child.content
        for token in _markdown().parse(line)
        if token.type == "inline"
        for child in token.children or ()
        if child.type in _INLINE_TEXT
    ]
    return "".join(pieces) or line.strip()


@functools.cache
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark")


def _request_label(entry: Entry, item: AssistantItem, broken: CacheDiagnostic | None) -> Label:
    index = entry.request.index if entry.request is not None else "?"
    label = _styled(_("Request {n}").format(n=index), "bold", "")
    label.append(" · ")
    label.append(_clip(item.route), style="dim")
    _mark(label, broken)
    calls = item.tool_calls
    if calls:
        label.append(" · ")
        label.append(ngettext("{n} tool call", "{n} tool calls", len(calls)).format(n=len(calls)))
    if item.text:
        label.append(" · ")
        label.append(_clip(plain_first_line(item.text)))
    if item.interrupted:
        label.append(" · " + _("interrupted"), style="yellow")
    return label


def _mark(label: Label, broken: CacheDiagnostic | None) -> None:
    """A request's cache break, in the cause's words (the detail pane says where and what)."""
    if broken is not None and broken.cause is not None:
        from app.report.wording import cause_label  # the report model imports httpx: not for every label

        label.append(" · ")
        label.append(_("↯ {cause}").format(cause=cause_label(broken.cause)), style="bold magenta")


def reasoning_label(item: AssistantItem) -> Label:
    return _styled(_("Reasoning:"), "italic dim", item.reasoning)


def answer_label(item: AssistantItem) -> Label:
    return _styled(_("Answer:"), "bold", item.text)


def turn_heading(turn: Turn) -> str:
    """"Turn 3", and how it ended when that is worth a word."""
    heading = _("Turn {n}").format(n=turn.number)
    if turn.end_reason not in (None, "completed"):
        heading += " · " + _end_reason(turn.end_reason)
    return heading


def _end_reason(reason: str) -> str:
    reasons = {
        "aborted": _("cancelled"),
        "error": _("failed"),
        "max-tokens": _("stopped at the token limit"),
        "interrupted": _("interrupted"),
    }
    return reasons.get(reason, reason)


def _context_summary(item: ContextItem) -> str:
    message = item.message
    if isinstance(message, ToolRegistryUpdate):
        return _("ⓘ {notice}").format(notice=tool_change_notice(message).summary)
    return _("ⓘ {notice}").format(notice=instructions_notice())


def changed_tool_label(tool: ChangedTool) -> Label:
    """One tool of a tool change: `+ name · source · description` (`−` for a removed one), the
    sign in its colour, the name and description as the log has them."""
    from app.tools.sources import tool_source

    sign, style = ("+", "green") if tool.added else ("−", "red")
    label = Label(f"{sign} ", style=style).append(_clip(tool.name))
    label.append(" · " + tool_source(tool.name), style="dim")
    if tool.description:
        label.append(" · ")
        label.append(_clip(tool.description))
    return label

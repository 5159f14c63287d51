"""A session as one self-contained HTML file: inline CSS, no script, no external reference (its
only links are to its own elements), so it opens offline and shows the same thing everywhere.

The conversation with its context nodes (several tool changes: the counts, with the names in a
`<details>` list), and per model request a section with each route's declarations, blocks, prefix,
beta header, fallback and the diff of its wire body against the previous request on that route —
all from the report model of `app.report`. A large text is shown once, where its item is; a diff
or a block that carries it links there instead (`app.export.references`). Every string from the
session is scrubbed (`Scrubber`) and HTML-escaped; our localized words are escaped too. The file
is written as it is made (`Lines`).
"""

from __future__ import annotations

import base64
import html
import json
import re
import secrets
from collections.abc import Iterator, Mapping
from typing import TextIO

from app.agent.notices import instructions_notice, tool_change_notice
from app.export.conversation import SequenceStart, TurnStart, walk
from app.export.references import Reference, Texts
from app.export.scrub import Scrubber
from app.export.target import Lines
from app.export.wire_diff import BodyDiffs
from app.i18n import _, current_language, ngettext
from app.llm.projection import UpdateBlock, describe_fallback
from app.report.cost import CostTally, SessionCost, request_cost
from app.report.cost_text import calibration_line, cheapest_line, prices_line, totals_table
from app.report.model import RequestReport, RouteReport
from app.report.prices import PriceBook
from app.report.wording import (
    block_label,
    block_source,
    cache_row,
    prefix_text,
    route_about,
    section_labels,
    state_label,
    tool_change_line,
)
from app.session.events import ToolRegistryUpdate
from app.session.view_items import (
    AssistantItem,
    ContextItem,
    Message,
    RequestErrorItem,
    RetryItem,
    SummaryItem,
    ToolResultItem,
    UserItem,
)
from app.session.indexed_view import IndexedView

STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem;
  color: #1d1d1f; background: #fff; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; border-bottom: 1px solid #ddd; margin-top: 2rem; }
h3 { font-size: 1rem; margin: 1.2rem 0 .3rem; }
pre { background: #f5f5f7; padding: .6rem .8rem; overflow-x: auto; white-space: pre-wrap;
  word-break: break-word; border-radius: 4px; margin: .3rem 0; }
code { font: 13px/1.4 ui-monospace, monospace; }
.context { border-left: 4px solid #7a5af8; background: #f6f3ff; padding: .4rem .8rem; margin: .6rem 0; }
.error { border-left: 4px solid #d92d20; background: #fef3f2; padding: .4rem .8rem; margin: .6rem 0; }
.retry, .sequence { color: #b54708; margin: .6rem 0; }
.request { border: 1px solid #d0d5dd; border-radius: 6px; margin: 1rem 0; padding: .5rem .8rem; }
.request > h3 { margin-top: .2rem; }
.change { font-weight: 600; }
.routes { display: grid; grid-template-columns: repeat(auto-fill, minmax(26rem, 1fr)); gap: .6rem; }
.route { border: 1px solid #eaecf0; border-radius: 4px; padding: .4rem .6rem; min-width: 0; overflow-x: auto; }
.route h4 { margin: 0; font-size: .95rem; } .about { color: #667085; font-size: .85rem; }
.kept { color: #067647; } .broken { color: #b42318; }
.route p { margin: .4rem 0 .1rem; }
table { border-collapse: collapse; font-size: .85rem; } td { padding: 0 .6rem 0 0; vertical-align: top; }
td:not(:last-child) { white-space: nowrap; }
.cost th { text-align: left; padding: 0 .6rem 0 0; } .cost .number { text-align: right; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 0 .8rem; margin: .4rem 0; font-size: .9rem; }
dt { color: #667085; } dd { margin: 0; }
.diff-add { color: #067647; } .diff-del { color: #b42318; }
a.ref { font-style: italic; }
"""


def write_html(
    view: IndexedView, reports: Iterator[RequestReport], scrub: Scrubber, stream: TextIO, tally: CostTally
) -> None:
    """`reports` pass through `tally` (`CostTally.counted`): the session's cost per route closes
    the document."""
    _Html(scrub, stream, tally.prices).render(view, reports, tally)


class _Html:
    def __init__(self, scrub: Scrubber, stream: TextIO, prices: PriceBook) -> None:
        self.scrub = scrub
        self.prices = prices
        self.out = Lines(stream)
        self.turn = 0
        self.texts = Texts()
        self.diffs = BodyDiffs()
        # Opens the token that stands for a large string in a printed body: its nonce keeps session
        # text from forging one.
        self.token_start = f"\ue000{secrets.token_hex(8)}:"
        self.tokens = re.compile(f'"{re.escape(self.token_start)}([A-Za-z0-9_=-]*)\ue001"')

    def esc(self, text: str) -> str:
        return html.escape(self.scrub.text(text), quote=True)

    def code(self, text: str) -> str:
        return f"<code>{self.esc(text)}</code>"

    def pre(self, text: str, anchor: str | None = None) -> str:
        where = f' id="{anchor}"' if anchor is not None else ""
        return f"<pre{where}>{self.esc(text)}</pre>"

    def shown(self, item: Message, part: str, text: str) -> str:
        """`text` in a `<pre>`, with an anchor when it is large (later bodies refer to it)."""
        return self.pre(text, self.texts.show(item, part, text, self.turn))

    def link(self, reference: Reference) -> str:
        return f'<a class="ref" href="#{html.escape(reference.anchor)}">{self.esc(reference.note())}</a>'

    def token(self, reference: Reference | None) -> str | None:
        """What a printed body holds in place of a large string (`body_line` makes it a link)."""
        if reference is None:
            return None
        fields = json.dumps([reference.anchor, reference.what, reference.size, reference.turn])
        return f"{self.token_start}{base64.urlsafe_b64encode(fields.encode()).decode()}\ue001"

    def mark(self, name: str) -> str:
        """A tool name inside our words, marked by two control characters a scrubbed name cannot
        hold; `marked` escapes the whole line, then turns the marks into a code element."""
        return "\0" + self.scrub.text(name) + "\1"

    def marked(self, text: str) -> str:
        return html.escape(text).replace("\0", "<code>").replace("\1", "</code>")

    def words(self, template: str, **values: str) -> str:
        """Our localized words, escaped, with already-escaped values put in their places."""
        return html.escape(template).format(**values)

    # --- the document --------------------------------------------------------------------------

    def render(self, view: IndexedView, reports: Iterator[RequestReport], tally: CostTally) -> None:
        header = view.header
        title = _("Session {id}").format(id=header.id)
        self.out += [
            "<!DOCTYPE html>",
            f'<html lang="{html.escape(current_language().replace("_", "-"))}">',
            '<head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            # No request may leave the file, whatever a future edit puts in it.
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'\">",
            f"<title>{self.esc(title)}</title>",
            f"<style>{STYLE}</style></head>",
            "<body>",
            "<h1>" + self.words(_("Session {id}"), id=self.code(header.id)) + "</h1>",
            "<p>"
            + self.words(
                ngettext(
                    "{count} model request · working directory {cwd}",
                    "{count} model requests · working directory {cwd}",
                    len(view.requests),
                ),
                count=str(len(view.requests)),
                cwd=self.code(header.cwd),
            )
            + "</p>",
        ]
        for entry in walk(view, reports):
            if isinstance(entry, TurnStart):
                self.turn = entry.number
                heading = self.esc(_("Turn {n}").format(n=entry.number))
                self.out.append(f'<h2 id="turn-{entry.number}">{heading}</h2>')
            elif isinstance(entry, SequenceStart):
                text = _("New projection sequence {n}").format(n=entry.number)
                self.out.append(f'<p class="sequence"><em>{self.esc(text)}</em></p>')
            elif isinstance(entry, RequestReport):
                self.request(entry)
            else:
                self.item(entry)
        self.cost(tally.session_cost())
        self.out.append("</body></html>")
        self.out.flush()

    def item(self, item: object) -> None:
        if isinstance(item, UserItem):
            self.out += ["<h3>" + self.esc(_("User")) + "</h3>", self.shown(item, "", item.text)]
        elif isinstance(item, AssistantItem):
            self.assistant(item)
        elif isinstance(item, ToolResultItem):
            title = self.words(_("Tool result {name}"), name=self.code(item.name))
            if item.is_error:
                code = item.error.code if item.error is not None else "ERROR"
                title += " · " + self.words(_("error {code}"), code=self.code(code))
            self.out += [
                f'<div class="tool-result"><strong>{title}</strong> ({self.code(item.call_id)})',
                self.shown(item, "", item.content),
                "</div>",
            ]
        elif isinstance(item, ContextItem):
            self.context(item)
        elif isinstance(item, RequestErrorItem):
            title = self.words(_("Request error {code}"), code=self.code(item.failure.code))
            self.out.append(f'<div class="error"><strong>{title}</strong>{self.pre(item.failure.message)}</div>')
        elif isinstance(item, RetryItem):
            text = self.words(
                _("Retry {n} of {max} after {delay} ms ({code})"),
                n=str(item.retry),
                max=str(item.max_retries),
                delay=str(item.delay_ms),
                code=self.code(item.failure.code),
            )
            self.out.append(f'<p class="retry">{text}</p>')
        elif isinstance(item, SummaryItem):
            heading = self.esc(_("Compaction (sequence {n})").format(n=item.sequence))
            self.out += [f"<h3>{heading}</h3>", self.shown(item, "", item.summary)]

    def assistant(self, item: AssistantItem) -> None:
        heading = self.words(
            _("Assistant · {route} · {model}"), route=self.code(item.route), model=self.code(item.model)
        )
        self.out.append(f"<h3>{heading}</h3>")
        if item.reasoning:
            summary = self.esc(_("Reasoning"))
            reasoning = self.shown(item, "reasoning", item.reasoning)
            self.out.append(f"<details><summary>{summary}</summary>{reasoning}</details>")
        if item.text:
            self.out.append(self.shown(item, "text", item.text))
        for number, call in enumerate(item.tool_calls):
            title = self.words(_("Tool call {name}"), name=self.code(call.name))
            self.out += [
                f'<div class="tool-call"><strong>{title}</strong> ({self.code(call.call_id)})',
                self.shown(item, f"call-{number}", call.arguments),
                "</div>",
            ]
        if item.interrupted:
            self.out.append("<p><em>" + self.esc(_("Interrupted")) + "</em></p>")

    def context(self, item: ContextItem) -> None:
        message = item.message
        label = "<strong>" + self.esc(_("Context")) + "</strong> · "
        if not isinstance(message, ToolRegistryUpdate):
            text = self.shown(item, "", message.text)
            self.out.append(f'<div class="context">{label}{self.esc(instructions_notice())}{text}</div>')
            return
        notice = tool_change_notice(message, self.mark)
        summary = self.marked(notice.summary)
        node = f'<div class="context tool-change" id="context-{item.seq}">'
        if not notice.names:
            self.out.append(f"{node}{label}{summary}</div>")
            return
        names = [f"<li>+ {self.code(name)}</li>" for name in notice.added]
        names += [f"<li>− {self.code(name)}</li>" for name in notice.removed]
        # The label goes in the summary: before the <details> (a block) it stood on a line of its
        # own. The list has an id too: a link to it (…#context-12-tools) opens the list.
        self.out.append(
            f"{node}<details><summary>{label}{summary}</summary>"
            f'<ul id="context-{item.seq}-tools">{"".join(names)}</ul></details></div>'
        )

    def request(self, report: RequestReport) -> None:
        request = report.request
        heading = self.words(
            _("Request {n} · turn {turn}, step {step} · sent on {route}"),
            n=str(request.index),
            turn=str(request.turn),
            step=str(request.step),
            route=self.code(request.route),
        )
        self.out.append(f'<section class="request" id="request-{request.index}"><h3>{heading}</h3>')
        if report.tool_change is not None:
            change = self.marked(tool_change_line(report.tool_change, self.mark))
            self.out.append(f'<p class="change">{change}</p>')
        self.out.append('<div class="routes">')
        large = self.texts.of_request(request)
        for route in report.routes:
            self.route(route, large)
        self.out.append("</div></section>")

    def route(self, report: RouteReport, large: Mapping[str, Reference]) -> None:
        labels = section_labels()
        route = report.route
        rows: list[tuple[str, str]] = []
        if report.error is not None:
            rows.append((labels["error"], f'<span class="broken">{self.esc(report.error)}</span>'))
        else:
            css = "kept" if report.prefix.kept else "broken"
            rows.append((labels["prefix"], f'<span class="{css}">{self.esc(prefix_text(report))}</span>'))
        rows.append((labels["beta"], self.code(report.beta) if report.beta else self.esc(_("none"))))
        if report.projected.fallback:
            rows.append((labels["fallback"], self.esc(describe_fallback(report.projected.fallback))))
        if report.cache is not None:
            row = self.marked(cache_row(report.cache, request_cost(route, report.cache, self.prices), self.mark))
            rows.append((labels["cache"], f'<span class="{"kept" if report.cache.hit else "broken"}">{row}</span>'))
        self.out += [
            f'<article class="route" data-route="{self.esc(route.id)}">',
            f'<h4>{self.code(route.id)}</h4><div class="about">{self.esc(route_about(route))}</div>',
            "<dl>" + "".join(f"<dt>{self.esc(k)}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>",
        ]
        declarations = [
            f"<tr><td>{self.code(d.tool.name)}</td><td>{self.esc(state_label(d.state))}</td>"
            f"<td>{'<code>defer_loading</code>' if d.defer_loading else ''}</td></tr>"
            for d in report.projected.declarations
        ]
        self.table(labels["declarations"], declarations, "declarations")
        blocks = [
            f"<tr><td>{'/messages/' + str(position) if position is not None else '-'}</td>"
            f"<td>{self.esc(block_label(block.kind))}</td>"
            f"<td>{self.block_content(block)}</td>"
            f"<td>{self.esc(block_source(block.seq))}</td></tr>"
            for block, position in report.blocks
        ]
        self.table(labels["blocks"], blocks, "blocks")
        diff = self.diffs.diff(report, lambda text: self.token(large.get(text)))
        if diff:
            lines = [self.diff_line(line) for line in diff]
            summary = self.esc(_("Wire body diff against the previous request"))
            body = "\n".join(lines)
            self.out.append(f"<details><summary>{summary}</summary><pre>{body}</pre></details>")
        self.out.append("</article>")

    def cost(self, totals: SessionCost) -> None:
        """The session's cost per route: the table `toolscope cost` prints, and the cheapest route."""
        header, rows = totals_table(totals)
        numbers = range(2, 7)

        def cells(row: list[str], tag: str) -> str:
            number = ' class="number"'
            return "".join(
                f"<{tag}{number if column in numbers else ''}>{self.esc(text)}</{tag}>" for column, text in enumerate(row)
            )

        self.out += [
            '<section class="cost" id="cost">',
            "<h2>" + self.esc(_("Cost per route")) + "</h2>",
            f"<p>{self.esc(prices_line(totals))}<br>{self.esc(calibration_line(totals))}</p>",
            f"<table><tr>{cells(header, 'th')}</tr>" + "".join(f"<tr>{cells(row, 'td')}</tr>" for row in rows) + "</table>",
            f"<p>{self.esc(cheapest_line(totals))}</p>",
            "</section>",
        ]

    def table(self, label: str, rows: list[str], css: str) -> None:
        if not rows:
            none = self.esc(_("none"))
            self.out.append(f"<p>{self.esc(label)}: {none}</p>")
            return
        self.out.append(f'<p>{self.esc(label)}</p><table class="{css}">{"".join(rows)}</table>')

    def block_content(self, block: UpdateBlock) -> str:
        """A block's tool name, or its instructions text (a link to it when it is large)."""
        if block.kind != "text":
            return self.code(block.name or "")
        reference = self.texts.block(block.seq)
        return self.link(reference) if reference is not None else self.code(block.text or "")

    def diff_line(self, line: str) -> str:
        if line.startswith("+") and not line.startswith("+++"):
            return f'<span class="diff-add">{self.body_line(line)}</span>'
        if line.startswith("-") and not line.startswith("---"):
            return f'<span class="diff-del">{self.body_line(line)}</span>'
        return self.body_line(line)

    def body_line(self, line: str) -> str:
        """A line of a printed body, escaped, each large string's token made a link to the text."""
        pieces = self.tokens.split(line)
        if len(pieces) == 1:
            return self.esc(line)
        return "".join(
            self.link(Reference(*json.loads(base64.urlsafe_b64decode(piece)))) if number % 2 else self.esc(piece)
            for number, piece in enumerate(pieces)
        )

"""A session as Markdown: the conversation, its context nodes and, per request, what each route
received (the report model of `app.report`), written as it is made (`Lines`). A large
instructions text is shown once, in its context node; the blocks that carry it refer to it
(`app.export.references`).

Nothing from the session is trusted (docs/architecture.md §13): every such string is scrubbed (`Scrubber`) and
then either fenced (multi-line text: a fence longer than any backtick run inside) or put in a code
span (names, ids, codes), where Markdown interprets neither HTML nor links. Only our own localized
words stand outside code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TextIO

from app.agent.notices import instructions_notice, tool_change_notice
from app.export.conversation import SequenceStart, TurnStart, walk
from app.export.references import Texts
from app.export.scrub import Scrubber
from app.export.target import Lines
from app.i18n import _, ngettext
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
    RequestErrorItem,
    RetryItem,
    SummaryItem,
    ToolResultItem,
    UserItem,
)
from app.session.indexed_view import IndexedView

_BACKTICKS = re.compile("`+")


def write_markdown(
    view: IndexedView, reports: Iterator[RequestReport], scrub: Scrubber, stream: TextIO, tally: CostTally
) -> None:
    """`reports` pass through `tally` (`CostTally.counted`): the session's cost per route closes
    the document."""
    markdown = _Markdown(scrub, stream, tally.prices)
    markdown.render(view, reports)
    markdown.cost(tally.session_cost())


class _Markdown:
    def __init__(self, scrub: Scrubber, stream: TextIO, prices: PriceBook) -> None:
        self.scrub = scrub
        self.prices = prices
        self.out = Lines(stream, trim_end=True)
        self.turn = 0
        self.texts = Texts()

    # --- untrusted text ------------------------------------------------------------------------

    def code(self, text: str) -> str:
        """A code span on one line, delimited by more backticks than any run inside."""
        text = " ".join(self.scrub.text(text).splitlines()) or " "
        ticks = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
        pad = " " if text[0] in "` " or text[-1] in "` " else ""
        return f"{ticks}{pad}{text}{pad}{ticks}"

    def fence(self, text: str, info: str = "text") -> None:
        text = self.scrub.text(text)
        fence = "`" * max(3, max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
        self.out += [f"{fence}{info}", *text.splitlines(), fence, ""]

    # --- the document --------------------------------------------------------------------------

    def render(self, view: IndexedView, reports: Iterator[RequestReport]) -> None:
        header = view.header
        self.out += [
            "# " + _("Session {id}").format(id=self.code(header.id)),
            "",
            ngettext(
                "{count} model request · working directory {cwd}",
                "{count} model requests · working directory {cwd}",
                len(view.requests),
            ).format(count=len(view.requests), cwd=self.code(header.cwd)),
            "",
        ]
        for entry in walk(view, reports):
            if isinstance(entry, TurnStart):
                self.turn = entry.number
                self.out += ["## " + _("Turn {n}").format(n=entry.number), ""]
            elif isinstance(entry, SequenceStart):
                self.out += ["---", "", "*" + _("New projection sequence {n}").format(n=entry.number) + "*", ""]
            elif isinstance(entry, RequestReport):
                self.request(entry)
            else:
                self.item(entry)
        self.out.flush()

    def item(self, item: object) -> None:
        if isinstance(item, UserItem):
            self.out += ["### " + _("User"), ""]
            self.fence(item.text)
        elif isinstance(item, AssistantItem):
            self.assistant(item)
        elif isinstance(item, ToolResultItem):
            title = _("Tool result {name}").format(name=self.code(item.name))
            if item.is_error:
                code = item.error.code if item.error is not None else "ERROR"
                title += " · " + _("error {code}").format(code=self.code(code))
            self.out += [f"**{title}** ({self.code(item.call_id)})", ""]
            self.fence(item.content)
        elif isinstance(item, ContextItem):
            self.context(item)
        elif isinstance(item, RequestErrorItem):
            failure = item.failure
            self.out += ["**" + _("Request error {code}").format(code=self.code(failure.code)) + "**", ""]
            self.fence(failure.message)
        elif isinstance(item, RetryItem):
            self.out += [
                "**"
                + _("Retry {n} of {max} after {delay} ms ({code})").format(
                    n=item.retry,
                    max=item.max_retries,
                    delay=item.delay_ms,
                    code=self.code(item.failure.code),
                )
                + "**",
                "",
            ]
        elif isinstance(item, SummaryItem):
            self.out += ["### " + _("Compaction (sequence {n})").format(n=item.sequence), ""]
            self.fence(item.summary)

    def assistant(self, item: AssistantItem) -> None:
        self.out += [
            "### "
            + _("Assistant · {route} · {model}").format(
                route=self.code(item.route), model=self.code(item.model)
            ),
            "",
        ]
        if item.reasoning:
            self.out += ["*" + _("Reasoning") + "*", ""]
            self.fence(item.reasoning)
        if item.text:
            self.fence(item.text, "markdown")
        for call in item.tool_calls:
            self.out += [
                "**"
                + _("Tool call {name}").format(name=self.code(call.name))
                + f"** ({self.code(call.call_id)})",
                "",
            ]
            self.fence(call.arguments, "json")
        if item.interrupted:
            self.out += ["*" + _("Interrupted") + "*", ""]

    def context(self, item: ContextItem) -> None:
        message = item.message
        if not isinstance(message, ToolRegistryUpdate):
            self.texts.show(item, "", message.text, self.turn)
            self.out += ["> **" + _("Context") + "** · " + instructions_notice(), ""]
            self.fence(message.text)
            return
        notice = tool_change_notice(message, self.code)
        self.out += ["> **" + _("Context") + "** · " + notice.summary]
        if notice.names:
            self.out += [f">  - + {self.code(name)}" for name in notice.added]
            self.out += [f">  - − {self.code(name)}" for name in notice.removed]
        self.out.append("")

    def request(self, report: RequestReport) -> None:
        request = report.request
        self.out += [
            "#### "
            + _("Request {n} · turn {turn}, step {step} · sent on {route}").format(
                n=request.index, turn=request.turn, step=request.step, route=self.code(request.route)
            ),
            "",
        ]
        if report.tool_change is not None:
            self.out += [tool_change_line(report.tool_change, self.code), ""]
        self.texts.of_request(request)  # (only its blocks refer to a text: this forgets what no later one can carry)
        for route in report.routes:
            self.route(route)
        self.out.append("")

    def route(self, report: RouteReport) -> None:
        labels = section_labels()
        if report.error is not None:
            status = f"{labels['error']}: {self.code(report.error)}"
        else:
            status = f"{labels['prefix']}: {prefix_text(report)}"
        beta = self.code(report.beta) if report.beta else _("none")
        self.out.append(
            f"- **{self.code(report.route.id)}** ({route_about(report.route)}) · {status}"
            f" · {labels['beta']}: {beta}"
        )
        if report.projected.fallback:
            self.out.append(f"  - {labels['fallback']}: {describe_fallback(report.projected.fallback)}")
        declarations = [
            self.code(d.tool.name)
            + " ("
            + state_label(d.state)
            + (", defer_loading" if d.defer_loading else "")
            + ")"
            for d in report.projected.declarations
        ]
        self.out.append(f"  - {labels['declarations']}: " + (", ".join(declarations) or _("none")))
        blocks = [
            f"{block_label(block.kind)} "
            + self.block_content(block)
            + (f" @ /messages/{position}" if position is not None else "")
            + f" ({block_source(block.seq)})"
            for block, position in report.blocks
        ]
        self.out.append(f"  - {labels['blocks']}: " + ("; ".join(blocks) or _("none")))
        if report.cache is not None:
            cost = request_cost(report.route, report.cache, self.prices)
            self.out.append(f"  - {labels['cache']}: " + cache_row(report.cache, cost, self.code))

    def cost(self, totals: SessionCost) -> None:
        """The session's cost per route: the table `toolscope cost` prints, and the cheapest route."""
        header, rows = totals_table(totals)
        numbers = range(2, 7)
        self.out += ["## " + _("Cost per route"), "", prices_line(totals), "", calibration_line(totals), ""]
        self.out += [
            "| " + " | ".join(header) + " |",
            "| " + " | ".join("---:" if column in numbers else "---" for column in range(len(header))) + " |",
        ]
        self.out += ["| " + " | ".join([self.code(row[0]), *row[1:]]) + " |" for row in rows]
        self.out += ["", cheapest_line(totals)]
        self.out.flush()

    def block_content(self, block: UpdateBlock) -> str:
        """A block's tool name, or its instructions text (where it is shown, when it is large: an
        instructions update's note holds none of the session's text)."""
        if block.kind != "text":
            return self.code(block.name or "")
        reference = self.texts.block(block.seq)
        return f"*{reference.note()}*" if reference is not None else self.code(block.text or "")

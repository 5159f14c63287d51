"""A session written in one of the export formats, for `toolscope export` and the chat's palette.

Markdown and HTML render the session with the report model of every given route; JSON is the
session view (`app.export.view_json`) with each request's cache diagnostic per route. All three end
with the session's cost per route (`app.report.cost`), summed from the same reports as they are
written: one pass over the session. Every key the routes read from the environment is redacted
from all three. The export is written as it is made, to where `app.export.target` says (a regular
file replaced whole or not at all, private (0600), since an export holds the whole conversation; a
pipe or a device written through).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from app.export.html import write_html
from app.export.markdown import write_markdown
from app.export.scrub import Scrubber
from app.export.target import Lines, open_target
from app.export.view_json import write_view_json
from app.llm.routes import Route
from app.report.cost import CostTally
from app.report.model import iter_reports
from app.report.prices import PriceBook
from app.session.indexed_view import IndexedView
from app.session.session import Session


def write_export(
    view: IndexedView, routes: Sequence[Route], fmt: str, stream: TextIO, prices: PriceBook | None = None
) -> None:
    """The session as `fmt` (`md`, `html`, `json`), every key of `routes` redacted, costed by
    `prices` (None: the genai-prices data alone), written to `stream` as it is made."""
    scrub = Scrubber.for_routes(routes)
    tally = CostTally(routes, prices if prices is not None else PriceBook.of(None))
    reports = tally.counted(iter_reports(view.requests, routes))
    if fmt == "json":
        write_view_json(view, scrub, Lines(stream), reports, tally)
        return
    write = write_html if fmt == "html" else write_markdown
    write(view, reports, scrub, stream, tally)


def export_file(session_path: Path, routes: Sequence[Route], fmt: str, target: Path) -> None:
    """What `toolscope export SESSION --format FMT -o TARGET` writes (the chat's palette uses it):
    the session read afresh from its file, so a turn being logged meanwhile is not disturbed."""
    session = Session.open(session_path).load()
    with open_target(target) as stream:
        write_export(session.view(), routes, fmt, stream)

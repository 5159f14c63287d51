"""`toolscope export SESSION --format md|html|json [-o FILE]`.

Markdown and HTML render the session with the report model of every route of the catalog; JSON is
the session view (`app.export.view_json`). Every key the catalog's routes read from the
environment is redacted from all three. The session is validated first, so a corrupt log is
refused before anything is written; then the export is written as it is made, to where `-o` says
(`app.export.target`: a regular file is replaced whole or not at all, private (0600), since an
export holds the whole conversation; a pipe or a device is written through).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from app.agent.runtime import catalog_from
from app.config import Config, ConfigError, load_config
from app.export.html import write_html
from app.export.markdown import write_markdown
from app.export.scrub import Scrubber
from app.export.target import Lines, ReaderGone, open_target
from app.export.view_json import write_view_json
from app.i18n import _
# The session commands share inspect's session resolution and its error and warning lines.
from app.commands.inspect import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    _fail,
    resolve_session,
    warn_if_torn,
)
from app.llm.routes import Route, RouteConfigError
from app.paths import config_file
from app.report.model import iter_reports
from app.session.errors import SessionError
from app.session.indexed import IndexedView
from app.session.session import Session


def run(args: argparse.Namespace, config: Config | None = None) -> int:
    """Exit 0 when written, 1 when the session cannot be read or the file cannot be written, 2 for
    a config error."""
    try:
        if config is None:
            config = load_config(config_file(getattr(args, "config", None)))
        routes = list(catalog_from(config))
    except (ConfigError, RouteConfigError) as error:
        return _fail(str(error), EXIT_USAGE)
    try:
        session = Session.open(resolve_session(args.session)).load()
    except SessionError as error:
        return _fail(str(error), EXIT_FAILURE)
    warn_if_torn(session)
    try:
        with open_target(args.output) as stream:
            write_export(session.view(), routes, args.format, stream)
    except ReaderGone:
        return EXIT_OK
    except SessionError as error:
        return _fail(str(error), EXIT_FAILURE)
    except OSError as error:
        reason = error.strerror or str(error)
        path = args.output if args.output not in (None, "-") else _("standard output")
        return _fail(_("cannot write {path}: {reason}").format(path=path, reason=reason), EXIT_FAILURE)
    return EXIT_OK


def write_export(view: IndexedView, routes: Sequence[Route], fmt: str, stream: TextIO) -> None:
    """The session as `fmt` (`md`, `html`, `json`), every key of `routes` redacted, written to
    `stream` as it is made."""
    scrub = Scrubber.for_routes(routes)
    if fmt == "json":
        write_view_json(view, scrub, Lines(stream))
        return
    write = write_html if fmt == "html" else write_markdown
    write(view, iter_reports(view.requests, routes), scrub, stream)


def export_file(session_path: Path, routes: Sequence[Route], fmt: str, target: Path) -> None:
    """What `toolscope export SESSION --format FMT -o TARGET` writes (the chat's palette uses it):
    the session read afresh from its file, so a turn being logged meanwhile is not disturbed."""
    session = Session.open(session_path).load()
    with open_target(target) as stream:
        write_export(session.view(), routes, fmt, stream)

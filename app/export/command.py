"""`toolscope export SESSION --format md|html|json [-o FILE]`.

Markdown and HTML render the session with the report model of every route of the catalog; JSON is
the session view (`app.export.view_json`). Every key the catalog's routes read from the
environment is redacted from all three. With `-o` the file is written whole or not at all (a
temporary file beside it, renamed over it) and private (0600): an export holds the whole
conversation.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from app.agent.runtime import catalog_from
from app.config import Config, ConfigError, load_config
from app.export.html import render_html
from app.export.markdown import render_markdown
from app.export.scrub import Scrubber
from app.export.view_json import view_json
from app.i18n import _
# The session commands share inspect's session resolution and its error and warning lines.
from app.inspect_report import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    _fail,
    resolve_session,
    warn_if_torn,
)
from app.llm.routes import Route, RouteConfigError
from app.paths import config_file
from app.report.model import inspect_requests
from app.session.errors import SessionError
from app.session.session import Session
from app.session.view import SessionView

FILE_MODE = 0o600


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
        session = Session.open(resolve_session(args.session))
        view = session.view()
    except SessionError as error:
        return _fail(str(error), EXIT_FAILURE)
    warn_if_torn(session)
    text = render_export(view, routes, args.format)
    if args.output is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        write_private(Path(args.output), text)
    except OSError as error:
        reason = error.strerror or str(error)
        return _fail(
            _("cannot write {path}: {reason}").format(path=args.output, reason=reason), EXIT_FAILURE
        )
    return EXIT_OK


def render_export(view: SessionView, routes: Sequence[Route], fmt: str) -> str:
    """The session as `fmt` (`md`, `html`, `json`), every key of `routes` redacted."""
    scrub = Scrubber.for_routes(routes)
    if fmt == "json":
        return scrub.json(view_json(view))
    reports = inspect_requests(view.requests, routes)
    render = render_html if fmt == "html" else render_markdown
    return render(view, reports, scrub)


def export_file(session_path: Path, routes: Sequence[Route], fmt: str, target: Path) -> None:
    """What `toolscope export SESSION --format FMT -o TARGET` writes (the chat's palette uses it):
    the session read afresh from its file, so a turn being logged meanwhile is not disturbed."""
    view = Session.open(session_path).view()
    write_private(target, render_export(view, routes, fmt))


def write_private(path: Path, text: str) -> None:
    """All of `text` at `path` with mode 0600, or nothing changed: a temporary file in the same
    directory, flushed, then renamed over `path`."""
    directory = path.parent if str(path.parent) else Path(".")
    descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(descriptor, FILE_MODE)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise

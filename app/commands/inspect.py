"""`toolscope inspect SESSION [--request N] [--route R …] [--body] [--diff] [--full] [--json]`: what
each route receives.

The report itself (projection, wire body, prefix comparison per request and route) is
`app.report.model`; this module resolves the session and the routes and picks the renderer:
`app.report.text` (a summary; the bodies with `--body`, the body diffs with `--diff`; on a
terminal through the pager) or `app.report.json` (always with the bodies). `docs/inspect.md` describes every field.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from app.agent.runtime import catalog_from
from app.config import Config, ConfigError, load_config
from app.i18n import _, ngettext
from app.llm.routes import Route, RouteCatalog, RouteConfigError
from app.pager import show
from app.paths import config_file, sessions_dir
from app.report.json import write_report_json
from app.report.model import inspect_requests, iter_reports
from app.report.text import render_text
from app.session.errors import SessionError, SessionNotFoundError
from app.session.events import SESSION_ID_PATTERN
from app.session.session import Session
from app.terminal import colour_enabled, print_error, print_warning

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2



# --- the command ---------------------------------------------------------------------------------


def run(args: argparse.Namespace, config: Config | None = None) -> int:
    """Exit 0 on success, 1 when the session cannot be read, 2 for a usage or config error."""
    try:
        if config is None:
            config = load_config(config_file(getattr(args, "config", None)))
        catalog = catalog_from(config)
        routes = _chosen_routes(catalog, args.routes)
    except (ConfigError, RouteConfigError) as error:
        return _fail(str(error), EXIT_USAGE)
    try:
        session = Session.open(resolve_session(args.session))
        if args.request is None:
            # Every request is read anyway: validate strictly first, so that a corrupt log is
            # refused before any output. One request costs only what it reads (DESIGN §12).
            session.load()
        requests = session.view().requests
    except SessionError as error:
        return _fail(str(error), EXIT_FAILURE)
    warn_if_torn(session)
    if args.request is not None and not 1 <= args.request <= len(requests):
        return _fail(
            ngettext(
                "request {n} is out of range: the session has {count} request",
                "request {n} is out of range: the session has {count} requests",
                len(requests),
            ).format(n=args.request, count=len(requests)),
            EXIT_USAGE,
        )
    try:
        if args.json:
            # Streamed request by request: a long session's report never sits whole in memory.
            write_report_json(
                sys.stdout, session.id, iter_reports(requests, routes, only=args.request), diffs=args.diff
            )
            return EXIT_OK
        reports = inspect_requests(requests, routes, only=args.request)
    except SessionError as error:  # a line read only now (one request's events) is corrupt
        return _fail(str(error), EXIT_FAILURE)
    text = render_text(
        session.id,
        len(requests),
        reports,
        color=colour_enabled(sys.stdout),
        bodies=args.body,
        diffs=args.diff,
        full=args.full,
    )
    show(text, paged=not args.no_pager)
    return EXIT_OK


def resolve_session(ref: str) -> Path:
    """A session id names `<sessions dir>/<id>.jsonl`; anything else is a path."""
    if SESSION_ID_PATTERN.fullmatch(ref):
        candidate = sessions_dir() / f"{ref}.jsonl"
        if candidate.is_file():
            return candidate
    path = Path(ref).expanduser()
    if path.is_file():
        return path
    raise SessionNotFoundError(ref)


def warn_if_torn(session: Session) -> None:
    """A torn last line (left by a crash) is skipped, not an error: say so on stderr."""
    if session.torn is not None:
        _warn(
            _("{path}: the last line is incomplete (left by a crash) and was not read").format(
                path=session.path
            )
        )


def _chosen_routes(catalog: RouteCatalog, ids: Sequence[str] | None) -> list[Route]:
    if not ids:
        return list(catalog)
    return [catalog.get(route_id) for route_id in dict.fromkeys(ids)]


def _fail(message: str, code: int) -> int:
    print_error(message)
    return code


def _warn(message: str) -> None:
    print_warning(message)

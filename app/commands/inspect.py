"""`toolscope inspect SESSION [--request N] [--route R …] [--body] [--diff] [--full] [--json]`: what
each route receives.

The report itself (projection, wire body, prefix comparison per request and route) is
`app.report.model`; this command resolves the session and the routes and picks the renderer:
`app.report.text` (a summary; the bodies with `--body`, the body diffs with `--diff`; on a
terminal through the pager) or `app.report.json` (always with the bodies). `docs/inspect.md` describes every field.
"""

from __future__ import annotations

import argparse
import sys

from app.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from app.commands.output import fail, warn_if_torn
from app.commands.parsing import add_session_and_routes, chosen_routes, command_parser
from app.i18n import _, ngettext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from app.config import Config


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = command_parser(
        subparsers, "inspect",
        summary=_("show what each route receives for each request of a session"),
        description=_(
            "For each model request of a session, show per route the declared tools, the tool "
            "update blocks, the beta header, any fallback, whether the cached prefix of the "
            "previous request is kept; with --body also the full wire body. On a terminal the "
            "text goes through the pager ($TOOLSCOPE_PAGER, else $PAGER, else less)."
        ),
    )
    add_session_and_routes(parser)
    parser.add_argument(
        "--request",
        type=int,
        metavar="N",
        help=_("only request N (numbered from 1 in log order)"),
    )
    parser.add_argument(
        "--body", action="store_true", help=_("also show each route's full wire body (JSON always has it)")
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help=_("also show each route's wire body diff against the previous request on that route"),
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help=_("show every route in full, also where nothing changed since an earlier request"),
    )
    parser.add_argument("--json", action="store_true", help=_("print one JSON object"))
    parser.add_argument(
        "--no-pager", action="store_true", help=_("never send the text through the pager")
    )
    parser.set_defaults(handler=run)


def run(options: argparse.Namespace, config: Config | None = None) -> int:
    """Exit 0 on success, 1 when the session cannot be read, 2 for a usage or config error."""
    from app.agent.runtime import catalog_from
    from app.llm.routes import RouteConfigError
    from app.pager import show
    from app.paths import sessions_dir
    from app.report.json import write_report_json
    from app.report.model import inspect_requests, iter_reports
    from app.report.prices import PriceBook
    from app.report.text import render_text
    from app.session.errors import SessionError
    from app.session.ids import session_file
    from app.session.session import Session
    from app.terminal import colour_enabled

    try:
        routes = chosen_routes(catalog_from(config), options.routes)
    except RouteConfigError as error:
        return fail(str(error), EXIT_USAGE)
    try:
        session = Session.open(session_file(sessions_dir(), options.session))
        if options.request is None:
            # Every request is read anyway: validate strictly first, so that a corrupt log is
            # refused before any output. One request costs only what it reads (docs/architecture.md §5).
            session.load()
        requests = session.view().requests
    except SessionError as error:
        return fail(str(error), EXIT_FAILURE)
    warn_if_torn(session)
    if options.request is not None and not 1 <= options.request <= len(requests):
        return fail(
            ngettext(
                "request {n} is out of range: the session has {count} request",
                "request {n} is out of range: the session has {count} requests",
                len(requests),
            ).format(n=options.request, count=len(requests)),
            EXIT_USAGE,
        )
    try:
        if options.json:
            # Streamed request by request: a long session's report never sits whole in memory.
            write_report_json(
                sys.stdout, session.id, iter_reports(requests, routes, only=options.request), diffs=options.diff
            )
            return EXIT_OK
        reports = inspect_requests(requests, routes, only=options.request)
    except SessionError as error:  # a line read only now (one request's events) is corrupt
        return fail(str(error), EXIT_FAILURE)
    text = render_text(
        session.id,
        len(requests),
        reports,
        color=colour_enabled(sys.stdout),
        prices=PriceBook.of(config),
        bodies=options.body,
        diffs=options.diff,
        full=options.full,
    )
    show(text, paged=not options.no_pager)
    return EXIT_OK

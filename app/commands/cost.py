"""`toolscope cost SESSION [--route R …] [--json]`: what the session costs on each route, and on each
tool-update mode (docs/cost.md).

The model is `app.report.cost` (the cache diagnostic of every request, summed per route,
calibrated, priced); `app.report.cost_text` and `app.report.cost_json` write it.
"""

from __future__ import annotations

import argparse
import sys

from app.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from app.commands.output import fail, warn_if_torn
from app.commands.parsing import add_session_and_routes, chosen_routes, command_parser
from app.i18n import _

TYPE_CHECKING = False
if TYPE_CHECKING:
    from app.config import Config


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = command_parser(
        subparsers, "cost",
        summary=_("show what a session costs on each route"),
        description=_(
            "For every route: the requests, how many the route's prompt cache would serve and why "
            "the others miss it, the input tokens and the part sent uncached, and the estimated "
            "cost; then what the session would cost on each tool-update mode, and the cheapest "
            "route. Prices come from the genai-prices data shipped with toolscope and [prices] in "
            "config.toml."
        ),
    )
    add_session_and_routes(parser)
    parser.add_argument("--json", action="store_true", help=_("print one JSON object"))
    parser.set_defaults(handler=run)


def run(options: argparse.Namespace, config: Config | None = None) -> int:
    """Exit 0 on success, 1 when the session cannot be read, 2 for a usage or config error."""
    from app.agent.runtime import catalog_from
    from app.llm.routes import RouteConfigError
    from app.paths import sessions_dir
    from app.report.cost_record import recorded_cost
    from app.report.cost_json import write_cost_json
    from app.report.cost_text import render_cost_text
    from app.report.prices import PriceBook
    from app.session.errors import SessionError
    from app.session.ids import session_file
    from app.session.session import Session

    try:
        routes = chosen_routes(catalog_from(config), options.routes)
    except RouteConfigError as error:
        return fail(str(error), EXIT_USAGE)
    try:
        session = Session.open(session_file(sessions_dir(), options.session))
        # Every line is validated before anything is printed: a corrupt log is refused with file
        # and line, in the pass that folds it when the session was not validated before.
        cost = recorded_cost(session, routes, PriceBook.of(config))
    except SessionError as error:
        return fail(str(error), EXIT_FAILURE)
    warn_if_torn(session)
    if options.json:
        write_cost_json(sys.stdout, session.id, cost.requests, cost)
    else:
        sys.stdout.write(render_cost_text(session.id, cost.requests, cost))
    return EXIT_OK

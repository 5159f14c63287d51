"""`toolscope view [SESSION]`: browse a session's trajectory, or choose one in the session picker
first."""

from __future__ import annotations

import argparse

from app.commands.output import warn_if_torn
from app.commands.parsing import command_parser
from app.i18n import _

TYPE_CHECKING = False
if TYPE_CHECKING:
    from app.config import Config


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = command_parser(
        subparsers, "view",
        summary=_("browse a session's trajectory (the session picker without SESSION)"),
        description=_(
            "Browse a session as a tree of turns, steps and requests or as a flat list of events, "
            "with filters, search and each event's JSON. Without SESSION, choose one from the "
            "session picker first."
        ),
    )
    parser.add_argument(
        "session",
        metavar="SESSION",
        nargs="?",
        help=_("a session id (in the sessions dir) or a file path"),
    )
    parser.set_defaults(handler=run)


def run(options: argparse.Namespace, config: Config | None) -> int:
    """A bad id or file fails here, in one line, before the interface starts."""
    from app.agent.runtime import catalog_from
    from app.paths import sessions_dir
    from app.session.ids import session_file
    from app.session.listing import list_sessions
    from app.trajectory.source import SessionFileSource
    from app.ui.trajectory.app import run_trajectory

    catalog = catalog_from(config)
    if options.session is None:
        return run_trajectory(None, list_sessions(), catalog)
    source = SessionFileSource.open(session_file(sessions_dir(), options.session))
    if source.session is not None:  # else opened by the trajectory, after it has indexed the file
        warn_if_torn(source.session)
    return run_trajectory(source, catalog=catalog)

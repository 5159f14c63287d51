"""`toolscope export SESSION --format md|html|json [-o FILE]`.

The session is validated first, so a corrupt log is refused before anything is written; then the
export is written as it is made (`app.export.write`), with every key the catalog's routes read from
the environment redacted, to where `-o` says.
"""

from __future__ import annotations

import argparse

from app.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from app.commands.output import fail, warn_if_torn
from app.commands.parsing import command_parser
from app.i18n import _

TYPE_CHECKING = False
if TYPE_CHECKING:
    from app.config import Config


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = command_parser(
        subparsers, "export",
        summary=_("write a session as Markdown, self-contained HTML or JSON"),
        description=_(
            "Write a session as Markdown or one self-contained HTML file (the conversation, every "
            "tool change, and per request the tools each route received), or as the JSON of its "
            "session view. API keys from the environment are redacted."
        ),
    )
    parser.add_argument(
        "session", metavar="SESSION", help=_("a session id (in the sessions dir) or a file path")
    )
    parser.add_argument(
        "--format", required=True, choices=("md", "html", "json"), help=_("the output format")
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help=_(
            "write to FILE instead of standard output (- is standard output): a regular file is "
            "replaced whole (mode 0600), a FIFO or a device is written through"
        ),
    )
    parser.set_defaults(handler=run)


def run(options: argparse.Namespace, config: Config | None) -> int:
    """Exit 0 when written, 1 when the session cannot be read or the file cannot be written, 2 for
    a config error."""
    from app.agent.runtime import catalog_from
    from app.export.target import ReaderGone, open_target
    from app.export.write import write_export
    from app.llm.routes import RouteConfigError
    from app.paths import sessions_dir
    from app.report.prices import PriceBook
    from app.session.errors import SessionError
    from app.session.ids import session_file
    from app.session.session import Session

    try:
        routes = list(catalog_from(config))
    except RouteConfigError as error:
        return fail(str(error), EXIT_USAGE)
    try:
        session = Session.open(session_file(sessions_dir(), options.session)).load()
    except SessionError as error:
        return fail(str(error), EXIT_FAILURE)
    warn_if_torn(session)
    try:
        with open_target(options.output) as stream:
            write_export(session.view(), routes, options.format, stream, PriceBook.of(config))
    except ReaderGone:
        return EXIT_OK
    except SessionError as error:
        return fail(str(error), EXIT_FAILURE)
    except OSError as error:
        reason = error.strerror or str(error)
        path = options.output if options.output not in (None, "-") else _("standard output")
        return fail(_("cannot write {path}: {reason}").format(path=path, reason=reason), EXIT_FAILURE)
    return EXIT_OK

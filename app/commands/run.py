"""`toolscope run [--route R] [--session ID|FILE | -c] [--json] [--approve] [PROMPT | -]`: one turn
without the interface (`app.agent.headless`), on the same session log the chat writes.

Usage and config problems (no prompt, an empty one, an unknown route, a route without its API key)
are found before any session is created or opened. Exit 0 when the turn completed, 1 when it
failed, 2 for those problems, 130 on Ctrl+C.
"""

from __future__ import annotations

import argparse
import sys

from app.commands import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from app.commands.output import fail
from app.commands.parsing import add_route_and_session, command_parser
from app.i18n import _

TYPE_CHECKING = False
if TYPE_CHECKING:
    from app.config import Config


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = command_parser(
        subparsers, "run",
        summary=_("run one turn without the interface and print the answer"),
        description=_(
            "Send PROMPT as one turn, on the same session log the chat writes. The answer goes to "
            "stdout (or every logged event as a JSON line with --json); tool changes, tool calls "
            "and problems go to stderr."
        ),
    )
    parser.add_argument(
        "prompt",
        metavar="PROMPT",
        nargs="?",
        help=_("what to ask; '-' or none reads it from stdin when stdin is not a terminal"),
    )
    add_route_and_session(parser)
    parser.add_argument(
        "--json", action="store_true", help=_("print every logged event as one JSON line")
    )
    parser.add_argument(
        "--approve",
        action="store_true",
        help=_("let tools that write files or run commands act without asking"),
    )
    parser.set_defaults(handler=run)


def run(options: argparse.Namespace, config: Config | None) -> int:
    prompt = options.prompt
    if prompt is None or prompt == "-":
        if sys.stdin is None or (prompt is None and sys.stdin.isatty()):
            return fail(_("no prompt: give PROMPT, or pipe it on stdin"), EXIT_USAGE)
        prompt = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    if not prompt.strip():
        return fail(_("the prompt is empty: nothing to send"), EXIT_USAGE)

    from app.agent.runtime import catalog_from, default_route_id, missing_key

    catalog = catalog_from(config)
    route_id = options.route or default_route_id(catalog, config)
    problem = missing_key(catalog.get(route_id))
    if problem is not None:
        return fail(_("route {route}: {problem}").format(route=route_id, problem=problem), EXIT_USAGE)

    import asyncio

    from app.agent.headless import HeadlessListener, run_turn

    listener = HeadlessListener(json_events=options.json, out=sys.stdout, err=sys.stderr)
    try:
        failure = asyncio.run(
            run_turn(
                prompt,
                config=config,
                catalog=catalog,
                route_id=route_id,
                session=options.session,
                continue_latest=options.continue_,
                approve=options.approve,
                listener=listener,
            )
        )
    except KeyboardInterrupt:
        # asyncio.run cancelled the turn first, so the log already holds its closers.
        print(file=sys.stdout)
        listener.note(_("Interrupted: the turn was closed as aborted."))
        listener.report_session()
        return EXIT_INTERRUPTED
    if failure is not None:
        return fail(failure.message, EXIT_FAILURE)
    return EXIT_OK

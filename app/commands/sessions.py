"""`toolscope sessions [-n N] [--json]`: the saved sessions, newest first; `toolscope sessions rm
ID [-y]`: delete one."""

from __future__ import annotations

import argparse
import os
import sys

from app.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from app.commands.output import fail, table
from app.commands.parsing import command_parser
from app.i18n import _, ngettext
from app.terminal import json_text, printable_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from app.config import Config
    from app.session.listing import SessionSummary


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = command_parser(
        subparsers, "sessions",
        summary=_("list saved sessions, newest first, or remove one"),
        description=_("List saved sessions, newest first."),
    )
    parser.add_argument(
        "-n", type=_positive, metavar="N", dest="limit", help=_("only the N newest sessions")
    )
    parser.add_argument("--json", action="store_true", help=_("print the list as JSON"))
    parser.set_defaults(handler=run)
    actions = parser.add_subparsers(title=_("commands"), metavar="COMMAND")
    remove_parser = command_parser(
        actions, "rm",
        summary=_("delete a session"),
        description=_(
            "Delete the session ID (and any torn lines set aside from it). Asks first on a "
            "terminal; elsewhere --yes is required. Refused while the session is open for "
            "writing or forks of it need its events."
        ),
    )
    remove_parser.add_argument("session", metavar="ID", help=_("the id of the session to delete"))
    remove_parser.add_argument(
        "-y", "--yes", action="store_true", help=_("delete without asking")
    )
    remove_parser.set_defaults(handler=remove)


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(
            _("expected a whole number of at least 1, got '{value}'").format(value=value)
        )
    return number


def run(options: argparse.Namespace, config: Config | None) -> int:
    from app.session.listing import list_sessions

    summaries = list_sessions()[: options.limit]
    if options.json:
        _print_sessions_json(summaries)
        return EXIT_OK
    if not summaries:
        print(_("No sessions yet."))
        return EXIT_OK
    headings = [
        _("ID"), _("Created"), _("Last active"), _("Route"), _("Directory"), _("Title"), _("Events"),
        _("Size"),
    ]
    rows = [_session_row(summary) for summary in summaries]
    right_aligned = (False,) * 6 + (True, True)
    dimmed = [summary.problem is not None for summary in summaries]
    count = len(summaries)
    total = ngettext("{count} session", "{count} sessions", count).format(count=count)
    sys.stdout.write(table(headings, rows, right_aligned, dimmed) + total + "\n")
    return EXIT_OK


def remove(options: argparse.Namespace, config: Config | None) -> int:
    """`sessions rm`."""
    from app.session.store import SessionStore

    store = SessionStore()
    if not options.yes:
        if not (sys.stdin.isatty() and sys.stderr.isatty()):
            return fail(
                _("not deleting {id} without confirmation: add --yes").format(id=options.session),
                EXIT_USAGE,
            )
        store.find(options.session)  # a missing session is reported before the question
        sys.stderr.write(_("Delete session {id}? [y/N] ").format(id=options.session))
        sys.stderr.flush()
        answer = sys.stdin.readline().strip().lower()
        if answer not in ("y", "yes"):
            print(_("Nothing deleted."), file=sys.stderr)
            return EXIT_FAILURE
    store.remove(options.session)
    print(_("Deleted session {id}.").format(id=options.session), file=sys.stderr)
    return EXIT_OK


def _session_row(summary: SessionSummary) -> list[str]:
    from app.display import human_size, local_time, session_problem_text

    last_active = local_time(summary.last_active)
    if summary.problem is not None:
        problem = session_problem_text(summary.problem)
        return [printable_line(summary.id), "-", last_active, "-", "-", problem, "-", human_size(summary.size)]
    return [
        printable_line(summary.id),
        local_time(summary.created_at),
        last_active,
        printable_line(summary.route or "-"),
        printable_line(_home_relative(summary.cwd or "-")),
        printable_line(summary.title),
        str(summary.events),
        human_size(summary.size),
    ]


def _home_relative(path: str) -> str:
    """`~/…` for a directory under the home directory, as shells show it."""
    home = os.path.expanduser("~")
    if home not in ("", "/") and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home) :]
    return path


def _print_sessions_json(summaries: list[SessionSummary]) -> None:
    payload = [
        {
            "id": summary.id,
            "path": str(summary.path),
            "createdAt": summary.created_at,
            "lastActive": summary.last_active,
            "route": summary.route,
            "cwd": summary.cwd,
            "title": summary.title,
            "events": None if summary.problem else summary.events,
            "size": summary.size,
            "problem": summary.problem,
        }
        for summary in summaries
    ]
    print(json_text(payload, indent=2))

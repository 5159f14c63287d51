"""The `toolscope` command (also `python -m app`).

`--version` is answered before anything else is imported, so this module imports only `sys` at the
top; everything else is imported by the code that needs it (pydantic only when a config file
exists). A subcommand is one function that adds its parser and sets `handler(options, config)`,
plus one entry in `COMMANDS`; only commands that work are registered.

Exit codes: 0 done, 1 runtime error (a session that cannot be read, a failed turn), 2 usage or
config error. Expected failures print one localized line to stderr, never a traceback.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import TextIO

    from app.config import Config
    from app.session.listing import SessionSummary

    # A command's handler; `config` is None when there is no config file (all defaults).
    Handler = Callable[[argparse.Namespace, Config | None], int]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if _asks_for_version(args):
        from app import __version__

        print(f"toolscope {__version__}")
        return EXIT_OK
    try:
        return _run(args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`toolscope sessions | head`): silence the final flush too.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILURE


def _asks_for_version(args: list[str]) -> bool:
    options = args[: args.index("--")] if "--" in args else args
    return "--version" in options


def _run(args: list[str]) -> int:
    from app import i18n
    from app.paths import config_file
    from app.session.errors import SessionError

    cli_language = _option_value(args, "--lang")
    # Errors in the config file are reported in the language known so far.
    i18n.setup_language(cli_language)
    path = config_file(_option_value(args, "--config"))
    config = None
    if path is not None:
        # Only a config file costs the pydantic import; without one every setting is its default.
        from app.config import ConfigError, load_config

        try:
            config = load_config(path)
        except ConfigError as error:
            return _fail(str(error), EXIT_USAGE)
        i18n.setup_language(cli_language, config.defaults.lang)

    parser = _build_parser()
    options = parser.parse_args(args)
    handler: Handler | None = getattr(options, "handler", None)
    if handler is None:
        # No command: the chat, on the default route and a new session.
        options.route = options.session = None
        options.continue_latest = False
        handler = _chat
    try:
        return handler(options, config)
    except SessionError as error:
        return _fail(str(error), EXIT_FAILURE)
    except BrokenPipeError:
        raise
    except OSError as error:
        # The file system said no (a missing or unreadable data dir): the user's to fix, not a bug.
        where = f"{error.filename}: " if error.filename else ""
        return _fail(where + (error.strerror or str(error)), EXIT_FAILURE)
    except Exception as error:
        # A command's own config problem (a route override, say) is a usage error too.
        if not _is_config_error(error):
            raise
        return _fail(str(error), EXIT_USAGE)


def _is_config_error(error: Exception) -> bool:
    """Asked without importing `app.config` (pydantic): if it was never imported, it raised nothing."""
    module = sys.modules.get("app.config")
    return module is not None and isinstance(error, module.ConfigError)


def _option_value(args: list[str], name: str) -> str | None:
    """The value of a global option, read before the parser exists (it needs the language)."""
    value = None
    for index, token in enumerate(args):
        if token == "--":
            break
        if token == name and index + 1 < len(args):
            value = args[index + 1]
        elif token.startswith(name + "="):
            value = token.partition("=")[2]
    return value


def _fail(message: str, code: int) -> int:
    from app.i18n import _

    line = _("toolscope: error: {message}").format(message=message)
    print(_paint(line, "31", _colour(sys.stderr)), file=sys.stderr)
    return code


# --- the parser ------------------------------------------------------------------------------


def _build_parser() -> argparse.ArgumentParser:
    import argparse

    from app import __version__
    from app.i18n import _

    _localize_argparse()
    # Global options are accepted after a subcommand too; SUPPRESS keeps a subcommand's
    # missing option from overwriting the value given before it.
    shared = argparse.ArgumentParser(add_help=False)
    _add_global_options(shared, default=argparse.SUPPRESS)

    parser = argparse.ArgumentParser(
        prog="toolscope",
        description=_(
            "A terminal agent chat that shows exactly which tools each provider route received."
        ),
        epilog=_(
            "Without a command, toolscope opens the chat (as `toolscope chat`).\n"
            "\n"
            "environment:\n"
            "  TOOLSCOPE_HOME        data directory (sessions, cache, config.toml)\n"
            "  TOOLSCOPE_CONFIG      config file, when --config is not given\n"
            "  LC_ALL, LC_MESSAGES, LANG\n"
            "                        language, when neither --lang nor the config sets one\n"
            "  NO_COLOR              never colour the output"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"toolscope {__version__}",
        help=_("print the version and exit"),
    )
    _add_global_options(parser, default=None)
    subparsers = parser.add_subparsers(title=_("commands"), metavar="COMMAND")
    for add_command in COMMANDS:
        add_command(subparsers, shared)
    return parser


def _add_global_options(parser: argparse.ArgumentParser, *, default: object) -> None:
    from app.i18n import _

    parser.add_argument(
        "--config",
        metavar="FILE",
        default=default,
        help=_("read this config file (default: $TOOLSCOPE_CONFIG, else config.toml in the data dir)"),
    )
    parser.add_argument(
        "--lang",
        type=_language,
        default=default,
        help=_("interface language: en or zh_CN (default: config, then LC_ALL/LC_MESSAGES/LANG)"),
    )


def _language(value: str) -> str:
    import argparse

    from app.i18n import SUPPORTED, _, normalize_language

    language = normalize_language(value)
    if language is None:
        raise argparse.ArgumentTypeError(
            _("unsupported language '{lang}' (available: {available})").format(
                lang=value, available=", ".join(SUPPORTED)
            )
        )
    return language


def _localize_argparse() -> None:
    """Send argparse's own words (usage, option titles, errors) through our catalogs."""
    import argparse

    from app import i18n
    from app.i18n import N_

    argparse._ = i18n._  # type: ignore[attr-defined]
    argparse.ngettext = i18n.ngettext  # type: ignore[attr-defined]
    # The argparse messages toolscope's parsers can show, marked so extraction puts them in
    # the catalogs (argparse looks them up itself).
    N_("usage: ")
    N_("positional arguments")
    N_("options")
    N_("show this help message and exit")
    N_("%(prog)s: error: %(message)s\n")
    N_("argument %(argument_name)s: %(message)s")
    N_("unrecognized arguments: %s")
    N_("the following arguments are required: %s")
    N_("expected one argument")
    N_("invalid choice: %(value)r (choose from %(choices)s)")
    N_("invalid %(type)s value: %(value)r")


# --- commands ------------------------------------------------------------------------------


def _add_sessions(subparsers: argparse._SubParsersAction, shared: argparse.ArgumentParser) -> None:
    from app.i18n import _

    parser = subparsers.add_parser(
        "sessions",
        parents=[shared],
        help=_("list saved sessions, newest first"),
        description=_("List saved sessions, newest first."),
        allow_abbrev=False,
    )
    parser.add_argument("--json", action="store_true", help=_("print the list as JSON"))
    parser.set_defaults(handler=_sessions)


def _sessions(options: argparse.Namespace, config: Config | None) -> int:
    from app.i18n import _, ngettext
    from app.session.listing import list_sessions

    summaries = list_sessions()
    if options.json:
        _print_sessions_json(summaries)
        return EXIT_OK
    if not summaries:
        print(_("No sessions yet."))
        return EXIT_OK
    headings = [_("ID"), _("Created"), _("Title"), _("Events"), _("Size")]
    rows = [_session_row(summary) for summary in summaries]
    measured = [[_width(cell) for cell in row] for row in [headings, *rows]]
    widths = [max(column) for column in zip(*measured)]
    right_aligned = (False, False, False, True, True)

    def line(cells: list[str], cell_widths: list[int]) -> str:
        padded = []
        for cell, cell_width, width, right in zip(cells, cell_widths, widths, right_aligned):
            gap = " " * (width - cell_width)
            padded.append(gap + cell if right else cell + gap)
        return "  ".join(padded).rstrip()

    colour = _colour(sys.stdout)
    out = [_paint(line(headings, measured[0]), "1", colour)]
    for summary, row, row_widths in zip(summaries, rows, measured[1:]):
        out.append(_paint(line(row, row_widths), "2", colour and summary.problem is not None))
    count = len(summaries)
    out.append(ngettext("{count} session", "{count} sessions", count).format(count=count))
    sys.stdout.write("\n".join(out) + "\n")
    return EXIT_OK


def _session_row(summary: SessionSummary) -> list[str]:
    import time

    if summary.problem is not None:
        return [summary.id, "-", _problem_text(summary.problem), "-", _human_size(summary.size)]
    created = time.strftime("%Y-%m-%d %H:%M", time.localtime(summary.created_at / 1000))
    from app.terminal import printable

    title = printable(summary.title)
    return [summary.id, created, title, str(summary.events), _human_size(summary.size)]


def _problem_text(problem: str) -> str:
    from app.i18n import _
    from app.session import listing

    reasons = {
        listing.EMPTY: _("(unreadable: empty file)"),
        listing.UNSUPPORTED_VERSION: _("(unreadable: unsupported format version)"),
        listing.INVALID_HEADER: _("(unreadable: not a session log)"),
    }
    return reasons[problem]


def _print_sessions_json(summaries: list[SessionSummary]) -> None:
    import json

    payload = [
        {
            "id": summary.id,
            "path": str(summary.path),
            "createdAt": summary.created_at,
            "title": summary.title,
            "events": None if summary.problem else summary.events,
            "size": summary.size,
            "problem": summary.problem,
        }
        for summary in summaries
    ]
    print(json.dumps(payload, ensure_ascii=False, indent=2))


def _add_inspect(subparsers: argparse._SubParsersAction, shared: argparse.ArgumentParser) -> None:
    from app.i18n import _

    parser = subparsers.add_parser(
        "inspect",
        parents=[shared],
        help=_("show what each route receives for each request of a session"),
        description=_(
            "For each model request of a session, show per route the declared tools, the tool "
            "update blocks, the beta header, any fallback, whether the cached prefix of the "
            "previous request is kept, and the full wire body."
        ),
        allow_abbrev=False,
    )
    parser.add_argument(
        "session", metavar="SESSION", help=_("a session id (in the sessions dir) or a file path")
    )
    parser.add_argument(
        "--request",
        type=int,
        metavar="N",
        help=_("only request N (numbered from 1 in log order)"),
    )
    parser.add_argument(
        "--route",
        action="append",
        dest="routes",
        metavar="R",
        help=_("only route R (repeatable; default: every route of the catalog)"),
    )
    parser.add_argument("--json", action="store_true", help=_("print one JSON object"))
    parser.set_defaults(handler=_inspect)


def _inspect(options: argparse.Namespace, config: Config | None) -> int:
    from app.inspect_report import run

    return run(options, config)


def _add_run(subparsers: argparse._SubParsersAction, shared: argparse.ArgumentParser) -> None:
    from app.i18n import _

    parser = subparsers.add_parser(
        "run",
        parents=[shared],
        help=_("run one turn without the interface and print the answer"),
        description=_(
            "Send PROMPT as one turn, on the same session log the chat writes. The answer goes to "
            "stdout (or every logged event as a JSON line with --json); tool changes, tool calls "
            "and problems go to stderr."
        ),
        allow_abbrev=False,
    )
    parser.add_argument("prompt", metavar="PROMPT", help=_("what to ask"))
    parser.add_argument("--route", metavar="R", help=_("the route to use (default: from the config)"))
    parser.add_argument(
        "--session", metavar="ID|FILE", help=_("continue this session instead of starting one")
    )
    parser.add_argument(
        "--json", action="store_true", help=_("print every logged event as one JSON line")
    )
    parser.add_argument(
        "--approve",
        action="store_true",
        help=_("let tools that write files or run commands act without asking"),
    )
    parser.set_defaults(handler=_run_headless)


def _run_headless(options: argparse.Namespace, config: Config | None) -> int:
    from app.agent.headless import run
    from app.llm.routes import RouteConfigError

    try:
        return run(options, config)
    except RouteConfigError as error:
        return _fail(str(error), EXIT_USAGE)


def _add_chat(subparsers: argparse._SubParsersAction, shared: argparse.ArgumentParser) -> None:
    from app.i18n import _

    parser = subparsers.add_parser(
        "chat",
        parents=[shared],
        help=_("open the full-screen chat (the default command)"),
        description=_(
            "Open the full-screen chat: a new session, or one continued with --session or -c."
        ),
        allow_abbrev=False,
    )
    parser.add_argument("--route", metavar="R", help=_("the route to use (default: from the config)"))
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--session", metavar="ID|FILE", help=_("continue this session instead of starting one")
    )
    where.add_argument(
        "-c",
        "--continue",
        dest="continue_latest",
        action="store_true",
        help=_("continue the most recent session"),
    )
    parser.set_defaults(handler=_chat)


def _chat(options: argparse.Namespace, config: Config | None) -> int:
    """Resolve the route and the session first, so a bad one is a one-line error, not a dead app."""
    from pathlib import Path

    from app.agent.runtime import catalog_from, default_route_id
    from app.i18n import _
    from app.llm.routes import RouteConfigError
    from app.session.listing import list_sessions
    from app.session.store import SessionStore

    try:
        catalog = catalog_from(config)
        route_id = options.route or default_route_id(catalog, config)
        catalog.get(route_id)
    except RouteConfigError as error:
        return _fail(str(error), EXIT_USAGE)
    session_path = None
    if options.session:
        session_path = SessionStore().resolve(options.session)
    elif options.continue_latest:
        readable = [summary for summary in list_sessions() if summary.problem is None]
        if not readable:
            return _fail(_("there is no session to continue yet"), EXIT_FAILURE)
        session_path = Path(readable[0].path)

    from app.ui.app import ChatOptions, run_chat

    return run_chat(
        ChatOptions(catalog=catalog, route_id=route_id, session_path=session_path, config=config)
    )


COMMANDS: tuple[Callable[[argparse._SubParsersAction, argparse.ArgumentParser], None], ...] = (
    _add_chat,
    _add_sessions,
    _add_inspect,
    _add_run,
)


# --- output helpers ----------------------------------------------------------------------------


def _human_size(size: int) -> str:
    from app.i18n import _, ngettext

    if size < 1024:
        return ngettext("{count} byte", "{count} bytes", size).format(count=size)
    value, unit = size / 1024, "KiB"
    for larger in ("MiB", "GiB"):
        if value < 1024:
            break
        value, unit = value / 1024, larger
    return _("{value:.1f} {unit}").format(value=value, unit=unit)


def _width(text: str) -> int:
    """Terminal cells: wide (CJK) characters take two."""
    if text.isascii():
        return len(text)
    import re
    import unicodedata

    others = re.sub(r"[\x00-\x7f]+", "", text)
    return len(text) + sum(unicodedata.east_asian_width(char) in "WF" for char in others)


def _colour(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set or TERM is dumb."""
    import os

    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _paint(text: str, sgr: str, colour: bool) -> str:
    return f"\x1b[{sgr}m{text}\x1b[0m" if colour else text

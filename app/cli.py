"""The `toolscope` command (also `python -m app`).

`--version` is answered before anything else is imported, so this module imports only `sys` at the
top; everything else is imported by the code that needs it (pydantic only when a config file
exists). A subcommand is one function that adds its parser (`_command_parser`) and sets
`handler(options, config)`, plus one entry in `COMMANDS`; only commands that work are registered.

Exit codes: 0 done, 1 runtime error (a session that cannot be read, a failed turn), 2 usage or
config error. Expected failures print one localized line to stderr, never a traceback.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import IO

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
    from app.streams import guard_standard_streams

    # A reader that goes away (`toolscope run … | head -1`) silences the output, never the command.
    guard_standard_streams()
    try:
        return _run(args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


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
    chat_options = (options.chat_route, options.chat_session, options.chat_continue_)
    if handler is None:
        # No command: the chat, with the route and session options given without its name.
        options.route, options.session, options.continue_ = chat_options
        handler = _chat
    elif any(chat_options):
        from app.i18n import _

        parser.error(_("--route, --session and -c go after the command's name (or without a command, for the chat)"))
    try:
        return handler(options, config)
    except SessionError as error:
        return _fail(str(error), EXIT_FAILURE)
    except OSError as error:
        # The file system said no (a missing or unreadable data dir): the user's to fix, not a bug.
        where = f"{error.filename}: " if error.filename else ""
        return _fail(where + (error.strerror or str(error)), EXIT_FAILURE)
    except Exception as error:
        # A command's own config problem (a route override, say) is a usage error too.
        if not _is_config_error(error):
            raise
        return _fail(str(error), EXIT_USAGE)


_CONFIG_ERRORS = (("app.config", "ConfigError"), ("app.llm.routes", "RouteConfigError"))


def _is_config_error(error: Exception) -> bool:
    """A bad config file or route, asked without importing the modules (pydantic): a module that
    was never imported raised nothing."""
    for module_name, class_name in _CONFIG_ERRORS:
        module = sys.modules.get(module_name)
        if module is not None and isinstance(error, getattr(module, class_name)):
            return True
    return False


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
    from app.terminal import print_error

    print_error(message)
    return code


# --- the parser ------------------------------------------------------------------------------


def _build_parser() -> argparse.ArgumentParser:
    import argparse

    from app import __version__
    from app.i18n import _
    from app.terminal import printable

    class Parser(argparse.ArgumentParser):
        """Usage, help and errors through the one printable path: an error quotes the argument it
        refuses (a prompt starting with `-`), escape sequences and all. Subparsers are made of the
        parent's class."""

        def _print_message(self, message: str, file: IO[str] | None = None) -> None:
            super()._print_message(printable(message), file)

    _localize_argparse()
    # Global options are accepted after a subcommand too; SUPPRESS keeps a subcommand's
    # missing option from overwriting the value given before it.
    shared = Parser(add_help=False)
    _add_global_options(shared, default=argparse.SUPPRESS)

    parser = Parser(
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
    # `toolscope -c` is `toolscope chat -c`: the chat's options work without the command's name.
    _add_route_and_session(parser, dest_prefix="chat_")
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


def _command_parser(
    subparsers: argparse._SubParsersAction,
    shared: argparse.ArgumentParser,
    name: str,
    *,
    summary: str,
    description: str,
) -> argparse.ArgumentParser:
    """One command's parser: the global options accepted after it too, no abbreviations."""
    return subparsers.add_parser(
        name, parents=[shared], help=summary, description=description, allow_abbrev=False
    )


def _add_route_and_session(parser: argparse.ArgumentParser, *, dest_prefix: str = "") -> None:
    """`--route R` and `--session ID|FILE | -c`, the same for `run` and `chat` (and for the chat
    without its command's name, under prefixed names so a command's own values never mix with them)."""
    from app.i18n import _

    parser.add_argument(
        "--route", metavar="R", dest=dest_prefix + "route", help=_("the route to use (default: from the config)")
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--session",
        metavar="ID|FILE",
        dest=dest_prefix + "session",
        help=_("continue this session instead of starting one"),
    )
    which.add_argument(
        "-c",
        "--continue",
        dest=dest_prefix + "continue_",
        action="store_true",
        help=_("continue the session written to last"),
    )


def _add_sessions(subparsers: argparse._SubParsersAction, shared: argparse.ArgumentParser) -> None:
    from app.i18n import _

    parser = _command_parser(
        subparsers,
        shared,
        "sessions",
        summary=_("list saved sessions, newest first, or remove one"),
        description=_("List saved sessions, newest first."),
    )
    parser.add_argument(
        "-n", type=_positive, metavar="N", dest="limit", help=_("only the N newest sessions")
    )
    parser.add_argument("--json", action="store_true", help=_("print the list as JSON"))
    parser.set_defaults(handler=_sessions)
    actions = parser.add_subparsers(title=_("commands"), metavar="COMMAND")
    remove = _command_parser(
        actions,
        shared,
        "rm",
        summary=_("delete a session"),
        description=_(
            "Delete the session ID (and any torn lines set aside from it). Asks first on a "
            "terminal; elsewhere --yes is required. Refused while the session is open for "
            "writing or forks of it need its events."
        ),
    )
    remove.add_argument("session", metavar="ID", help=_("the id of the session to delete"))
    remove.add_argument(
        "-y", "--yes", action="store_true", help=_("delete without asking")
    )
    remove.set_defaults(handler=_remove_session)


def _positive(value: str) -> int:
    import argparse

    from app.i18n import _

    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(
            _("expected a whole number of at least 1, got '{value}'").format(value=value)
        )
    return number


def _sessions(options: argparse.Namespace, config: Config | None) -> int:
    from app.i18n import _, ngettext
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
    sys.stdout.write(_table(headings, rows, right_aligned, dimmed) + total + "\n")
    return EXIT_OK


def _remove_session(options: argparse.Namespace, config: Config | None) -> int:
    from app.i18n import _
    from app.session.store import SessionStore

    store = SessionStore()
    if not options.yes:
        if not (sys.stdin.isatty() and sys.stderr.isatty()):
            return _fail(
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


def _table(
    headings: list[str], rows: list[list[str]], right_aligned: tuple[bool, ...], dimmed: list[bool]
) -> str:
    """Aligned columns (wide characters counted as two cells), the heading bold on a terminal."""
    measured = [[_width(cell) for cell in row] for row in [headings, *rows]]
    widths = [max(column) for column in zip(*measured)]

    def line(cells: list[str], cell_widths: list[int]) -> str:
        padded = []
        for cell, cell_width, width, right in zip(cells, cell_widths, widths, right_aligned):
            gap = " " * (width - cell_width)
            padded.append(gap + cell if right else cell + gap)
        return "  ".join(padded).rstrip()

    from app.terminal import BOLD, DIM, colour_enabled, paint

    colour = colour_enabled(sys.stdout)
    out = [paint(line(headings, measured[0]), BOLD, colour)]
    for row, row_widths, dim in zip(rows, measured[1:], dimmed):
        out.append(paint(line(row, row_widths), DIM, colour and dim))
    return "\n".join(out) + "\n"


def _session_row(summary: SessionSummary) -> list[str]:
    from app.display import human_size, local_time, session_problem_text
    from app.terminal import printable_line

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
    import os

    home = os.path.expanduser("~")
    if home not in ("", "/") and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home) :]
    return path


def _print_sessions_json(summaries: list[SessionSummary]) -> None:
    from app.terminal import json_text

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


def _add_inspect(subparsers: argparse._SubParsersAction, shared: argparse.ArgumentParser) -> None:
    from app.i18n import _

    parser = _command_parser(
        subparsers,
        shared,
        "inspect",
        summary=_("show what each route receives for each request of a session"),
        description=_(
            "For each model request of a session, show per route the declared tools, the tool "
            "update blocks, the beta header, any fallback, whether the cached prefix of the "
            "previous request is kept; with --body also the full wire body. On a terminal the "
            "text goes through the pager ($TOOLSCOPE_PAGER, else $PAGER, else less)."
        ),
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
    parser.set_defaults(handler=_inspect)


def _inspect(options: argparse.Namespace, config: Config | None) -> int:
    from app.inspect_report import run

    return run(options, config)


def _add_run(subparsers: argparse._SubParsersAction, shared: argparse.ArgumentParser) -> None:
    from app.i18n import _

    parser = _command_parser(
        subparsers,
        shared,
        "run",
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
    _add_route_and_session(parser)
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
    from app.agent.headless import UsageError, run
    from app.i18n import _

    prompt = options.prompt
    if prompt is None or prompt == "-":
        if sys.stdin is None or (prompt is None and sys.stdin.isatty()):
            return _fail(_("no prompt: give PROMPT, or pipe it on stdin"), EXIT_USAGE)
        prompt = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    if not prompt.strip():
        return _fail(_("the prompt is empty: nothing to send"), EXIT_USAGE)
    try:
        return run(options, config, prompt)
    except UsageError as error:
        return _fail(str(error), EXIT_USAGE)


def _add_routes(subparsers: argparse._SubParsersAction, shared: argparse.ArgumentParser) -> None:
    from app.i18n import _

    parser = _command_parser(
        subparsers,
        shared,
        "routes",
        summary=_("list the routes: dialect, model, tool updates, whether the key is set"),
        description=_(
            "List the routes of the catalog (built-in and from the config): each one's wire "
            "dialect, model, tool-update mode and whether its API key is set (never the key)."
        ),
    )
    parser.add_argument("--json", action="store_true", help=_("print the list as JSON"))
    parser.set_defaults(handler=_routes)


def _routes(options: argparse.Namespace, config: Config | None) -> int:
    from app.agent.runtime import catalog_from, default_route_id
    from app.i18n import _
    from app.llm.routes import Route
    from app.terminal import json_text, printable

    catalog = catalog_from(config)
    default = default_route_id(catalog, config)
    routes = list(catalog)

    if options.json:
        payload = [
            {
                "id": route.id,
                "label": route.display_label,
                "dialect": route.dialect,
                "model": route.model,
                "baseUrl": route.base_url,
                "toolUpdate": route.tool_update,
                "apiKeyEnv": route.api_key_env,
                "key": route.key_state(),
                "default": route.id == default,
            }
            for route in routes
        ]
        print(json_text(payload, indent=2))
        return EXIT_OK

    def key_text(route: Route) -> str:
        state = route.key_state()
        if state == "not-needed":
            return _("not needed")
        if state == "set":
            return _("set ({name})").format(name=route.api_key_env)
        return _("missing ({name})").format(name=route.api_key_env)

    headings = ["  " + _("Route"), _("Dialect"), _("Model"), _("Tool updates"), _("API key")]
    rows = [
        [
            printable(("* " if route.id == default else "  ") + route.id),
            route.dialect,
            printable(route.model),
            route.tool_update,
            key_text(route),
        ]
        for route in routes
    ]
    sys.stdout.write(_table(headings, rows, (False,) * 5, [False] * len(rows)))
    print(_("* the default route"))
    return EXIT_OK


def _add_chat(subparsers: argparse._SubParsersAction, shared: argparse.ArgumentParser) -> None:
    from app.i18n import _

    parser = _command_parser(
        subparsers,
        shared,
        "chat",
        summary=_("open the full-screen chat (the default command)"),
        description=_(
            "Open the full-screen chat: a new session, or one continued with --session or -c."
        ),
    )
    _add_route_and_session(parser)
    parser.set_defaults(handler=_chat)


def _chat(options: argparse.Namespace, config: Config | None) -> int:
    """Hold the terminal before the slow imports, so keys typed meanwhile are not misread.

    The garbage collector waits for the first frame (`ToolscopeApp.on_ready` starts it again):
    start-up makes hardly any garbage, but its collections walk every object the imports build.
    """
    import gc

    from app.ui.type_ahead import hold_terminal

    gc.disable()
    held = hold_terminal(sys.stdin.fileno()) if sys.stdin is not None else None
    try:
        return _open_chat(options, config)
    finally:
        gc.enable()  # however the chat ended (a bad route stops it before its first frame)
        if held is not None:
            held.release()


def _open_chat(options: argparse.Namespace, config: Config | None) -> int:
    """Resolve the route and the session first, so a bad one is a one-line error, not a dead app."""
    from app.agent.runtime import catalog_from, default_route_id, latest_session
    from app.llm.routes import RouteConfigError

    try:
        catalog = catalog_from(config)
        route_id = options.route or default_route_id(catalog, config)
        catalog.get(route_id)
    except RouteConfigError as error:
        return _fail(str(error), EXIT_USAGE)
    session_path = None
    if options.session or options.continue_:
        # Found without the session store (pydantic and the event models): the resumed chat's first
        # frame would wait for that import here, before the app starts.
        from app.paths import sessions_dir
        from app.session.ids import session_file

        directory = sessions_dir()
        session_path = session_file(directory, options.session or latest_session(directory))

    from app.ui.app import ChatOptions, run_chat

    return run_chat(
        ChatOptions(catalog=catalog, route_id=route_id, session_path=session_path, config=config)
    )


def _add_view(subparsers: argparse._SubParsersAction, shared: argparse.ArgumentParser) -> None:
    from app.i18n import _

    parser = _command_parser(
        subparsers,
        shared,
        "view",
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
    parser.set_defaults(handler=_view)


def _view(options: argparse.Namespace, config: Config | None) -> int:
    """A bad id or file fails here, in one line, before the interface starts."""
    from app.agent.runtime import catalog_from
    from app.inspect_report import resolve_session, warn_if_torn
    from app.session.listing import list_sessions
    from app.trajectory.source import SessionFileSource
    from app.ui.trajectory.app import run_trajectory

    catalog = catalog_from(config)
    if options.session is None:
        return run_trajectory(None, list_sessions(), catalog)
    source = SessionFileSource.open(resolve_session(options.session))
    if source.session is not None:  # else opened by the trajectory, after it has indexed the file
        warn_if_torn(source.session)
    return run_trajectory(source, catalog=catalog)


def _add_export(subparsers: argparse._SubParsersAction, shared: argparse.ArgumentParser) -> None:
    from app.i18n import _

    parser = _command_parser(
        subparsers,
        shared,
        "export",
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
    parser.set_defaults(handler=_export)


def _export(options: argparse.Namespace, config: Config | None) -> int:
    from app.export.command import run

    return run(options, config)


COMMANDS: tuple[Callable[[argparse._SubParsersAction, argparse.ArgumentParser], None], ...] = (
    _add_chat,
    _add_sessions,
    _add_inspect,
    _add_run,
    _add_routes,
    _add_export,
    _add_view,
)


# --- output helpers ----------------------------------------------------------------------------


def _width(text: str) -> int:
    """Terminal cells: wide (CJK) characters take two."""
    if text.isascii():
        return len(text)
    import re
    import unicodedata

    others = re.sub(r"[\x00-\x7f]+", "", text)
    return len(text) + sum(unicodedata.east_asian_width(char) in "WF" for char in others)

"""The `toolscope` command (also `python -m app`).

Reads the language and the config file, builds the parser from the commands' modules
(`app.commands`, one per command; only commands that work are registered) and runs the handler
the arguments name, turning an expected failure into one line and its exit code.
`--version` is answered before anything else is imported, so this module imports only `sys` and
the exit codes at the top; everything else is imported by the code that needs it (pydantic only
when a config file exists).
"""

from __future__ import annotations

import sys

from app.commands import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import IO

    from app.config import Config

    # A command's handler; `config` is None when there is no config file (all defaults).
    Handler = Callable[[argparse.Namespace, Config | None], int]


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
    from app.commands.output import fail
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
            return fail(str(error), EXIT_USAGE)
        i18n.setup_language(cli_language, config.defaults.lang)

    parser = _build_parser()
    options = parser.parse_args(args)
    handler: Handler | None = getattr(options, "handler", None)
    chat_options = (options.chat_route, options.chat_session, options.chat_continue_)
    if handler is None:
        # No command: the chat, with the route and session options given without its name.
        options.route, options.session, options.continue_ = chat_options
        from app.commands import chat

        handler = chat.run
    elif any(chat_options):
        from app.i18n import _

        parser.error(_("--route, --session and -c go after the command's name (or without a command, for the chat)"))
    try:
        return handler(options, config)
    except SessionError as error:
        return fail(str(error), EXIT_FAILURE)
    except OSError as error:
        # The file system said no (a missing or unreadable data dir): the user's to fix, not a bug.
        where = f"{error.filename}: " if error.filename else ""
        return fail(where + (error.strerror or str(error)), EXIT_FAILURE)
    except Exception as error:
        # A command's own config problem (a route override, say) is a usage error too.
        if not _is_config_error(error):
            raise
        return fail(str(error), EXIT_USAGE)


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


# --- the parser ------------------------------------------------------------------------------


def _build_parser() -> argparse.ArgumentParser:
    import argparse

    from app import __version__
    from app.commands import chat, cost, export, inspect, routes, run, sessions, view
    from app.commands.parsing import add_global_options, add_route_and_session
    from app.i18n import _
    from app.terminal import printable

    class Parser(argparse.ArgumentParser):
        """Usage, help and errors through the one printable path: an error quotes the argument it
        refuses (a prompt starting with `-`), escape sequences and all. Subparsers are made of the
        parent's class."""

        def _print_message(self, message: str, file: IO[str] | None = None) -> None:
            super()._print_message(printable(message), file)

    _localize_argparse()
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
    add_global_options(parser, default=None)
    # `toolscope -c` is `toolscope chat -c`: the chat's options work without the command's name.
    add_route_and_session(parser, dest_prefix="chat_")
    subparsers = parser.add_subparsers(title=_("commands"), metavar="COMMAND")
    for command in (chat, sessions, inspect, cost, run, routes, export, view):  # in the order --help lists them
        command.add_parser(subparsers)
    return parser


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

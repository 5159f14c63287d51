"""What the commands' parsers share: the global options (accepted before a command's name and after
it), a command's parser, the route and session options of `chat` and `run`, and the session and
routes a report (`inspect`, `cost`) reads."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from app.i18n import SUPPORTED, _, normalize_language

TYPE_CHECKING = False
if TYPE_CHECKING:
    from app.llm.routes import Route, RouteCatalog


def add_global_options(parser: argparse.ArgumentParser, *, default: object) -> None:
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
    language = normalize_language(value)
    if language is None:
        raise argparse.ArgumentTypeError(
            _("unsupported language '{lang}' (available: {available})").format(
                lang=value, available=", ".join(SUPPORTED)
            )
        )
    return language


def command_parser(
    subparsers: argparse._SubParsersAction, name: str, *, summary: str, description: str
) -> argparse.ArgumentParser:
    """One command's parser: the global options accepted after it too, no abbreviations."""
    # SUPPRESS keeps a command's missing global option from overwriting the value given before it.
    shared = argparse.ArgumentParser(add_help=False)
    add_global_options(shared, default=argparse.SUPPRESS)
    return subparsers.add_parser(
        name, parents=[shared], help=summary, description=description, allow_abbrev=False
    )


def add_route_and_session(parser: argparse.ArgumentParser, *, dest_prefix: str = "") -> None:
    """`--route R` and `--session ID|FILE | -c`, the same for `run` and `chat` (and for the chat
    without its command's name, under prefixed names so a command's own values never mix with them)."""
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


def add_session_and_routes(parser: argparse.ArgumentParser) -> None:
    """`SESSION` and `--route R …`, the same for `inspect` and `cost`."""
    parser.add_argument(
        "session", metavar="SESSION", help=_("a session id (in the sessions dir) or a file path")
    )
    parser.add_argument(
        "--route",
        action="append",
        dest="routes",
        metavar="R",
        help=_("only route R (repeatable; default: every route of the catalog)"),
    )


def chosen_routes(catalog: RouteCatalog, ids: Sequence[str] | None) -> list[Route]:
    """The routes named by `--route` (each once, in order), or every route of the catalog."""
    if not ids:
        return list(catalog)
    return [catalog.get(route_id) for route_id in dict.fromkeys(ids)]

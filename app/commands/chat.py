"""`toolscope chat [--route R] [--session ID|FILE | -c]`: the full-screen chat, also run without
the command's name (`app.cli` gives it the chat options given before any command)."""

from __future__ import annotations

import argparse
import sys

from app.commands import EXIT_USAGE
from app.commands.output import fail
from app.commands.parsing import add_route_and_session, command_parser
from app.i18n import _

TYPE_CHECKING = False
if TYPE_CHECKING:
    from app.config import Config


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = command_parser(
        subparsers, "chat",
        summary=_("open the full-screen chat (the default command)"),
        description=_(
            "Open the full-screen chat: a new session, or one continued with --session or -c."
        ),
    )
    add_route_and_session(parser)
    parser.set_defaults(handler=run)


def run(options: argparse.Namespace, config: Config | None) -> int:
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
        return fail(str(error), EXIT_USAGE)
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

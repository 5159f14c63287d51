"""`toolscope routes [--json]`: the route catalog, each route's dialect, model, tool-update mode and
whether its API key is set (never the key)."""

from __future__ import annotations

import argparse
import sys

from app.commands import EXIT_OK
from app.commands.output import table
from app.commands.parsing import command_parser
from app.i18n import _
from app.terminal import json_text, printable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from app.config import Config
    from app.llm.routes import Route


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = command_parser(
        subparsers, "routes",
        summary=_("list the routes: dialect, model, tool updates, whether the key is set"),
        description=_(
            "List the routes of the catalog (built-in and from the config): each one's wire "
            "dialect, model, tool-update mode and whether its API key is set (never the key)."
        ),
    )
    parser.add_argument("--json", action="store_true", help=_("print the list as JSON"))
    parser.set_defaults(handler=run)


def run(options: argparse.Namespace, config: Config | None) -> int:
    from app.agent.runtime import catalog_from, default_route_id

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
    sys.stdout.write(table(headings, rows, (False,) * 5, [False] * len(rows)))
    print(_("* the default route"))
    return EXIT_OK

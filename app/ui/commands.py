"""Command palette providers that open the tools screen, the route picker and the session picker.

Each provider runs an action the App defines (the App owns the registry, the catalog and the
session, and knows what to do with the result):

- `app.action_open_tools()` — push `ToolsScreen(registry)`;
- `app.action_pick_route()` — push `RoutePickerScreen(catalog, current)` and switch to the chosen
  route;
- `app.action_pick_session()` — push `SessionPickerScreen(list_sessions())` and resume the chosen
  session.

List them in the App's `COMMANDS` (e.g. `App.COMMANDS | SCREEN_COMMANDS`). Titles are translated
when the palette asks, so a language switched at run time applies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from textual.command import DiscoveryHit, Hit, Hits, Provider

from app.i18n import _


class _ActionCommand(Provider):
    """One palette command: its title, its help, and the App action it runs."""

    action: ClassVar[str]

    def title(self) -> str:
        raise NotImplementedError

    def help(self) -> str:
        raise NotImplementedError

    def _command(self) -> Callable[[], Any]:
        return getattr(self.app, f"action_{self.action}")

    async def discover(self) -> Hits:
        yield DiscoveryHit(self.title(), self._command(), help=self.help())

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        title = self.title()
        score = matcher.match(title)
        if score > 0:
            yield Hit(score, matcher.highlight(title), self._command(), text=title, help=self.help())


class ToolsCommand(_ActionCommand):
    action = "open_tools"

    def title(self) -> str:
        return _("Tools: switch plugins and MCP servers")

    def help(self) -> str:
        return _("Every tool source with its tools and state; switch plugins and servers on or off.")


class RouteCommand(_ActionCommand):
    action = "pick_route"

    def title(self) -> str:
        return _("Switch route")

    def help(self) -> str:
        return _("Choose the provider route for the next request.")


class SessionCommand(_ActionCommand):
    action = "pick_session"

    def title(self) -> str:
        return _("Resume a session")

    def help(self) -> str:
        return _("Choose an earlier session to continue.")


SCREEN_COMMANDS: frozenset[type[Provider]] = frozenset({ToolsCommand, RouteCommand, SessionCommand})
"""The providers above, for the App's `COMMANDS`."""

"""Command palette providers that open the tools screen, the route picker and the session picker.

Each provider runs an action the App defines (the App owns the registry, the catalog and the
session, and knows what to do with the result):

- `app.action_open_tools()` — push `ToolsScreen(registry, settings)`;
- `app.action_pick_route()` — push `RoutePickerScreen(catalog, current)` and switch to the chosen
  route;
- `app.action_pick_session()` — push `SessionPickerScreen(list_sessions)` (read in a thread) and resume the chosen
  session;
- `app.action_export(fmt)` — export the session as `md`, `html` or `json` (`EXPORT_COMMANDS`);
- `app.action_open_trajectory()` — push the `TrajectoryScreen` on the live session.

`SystemCommands` shows Textual's own commands (theme, quit, keys…) in the current language.

List them in the App's `COMMANDS` (e.g. `{SystemCommands} | SCREEN_COMMANDS`). Titles are translated
when the palette asks, so a language switched at run time applies.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.fuzzy import Matcher

from app.i18n import N_, _
from app.ui.text import literal, matched


def translated_hit(matcher: Matcher, title: str, help_text: str, command: Callable[[], Any]) -> Hit | None:
    """A hit when the query matches the shown title or the English one (as VS Code's palette does):
    a user of the Chinese interface who types `export` finds 导出为 Markdown. `title` and
    `help_text` are the English (`N_`) words."""
    shown = _(title)
    score = matcher.match(shown)
    display = matched(matcher, shown) if score else literal(shown)
    score = max(score, matcher.match(title))
    return Hit(score, display, command, text=shown, help=literal(_(help_text))) if score > 0 else None


class _ActionCommand(Provider):
    """One palette command: the App action it runs, its title and help (translated when shown)."""

    action: ClassVar[str]
    title: ClassVar[str]  # marked with N_
    help_text: ClassVar[str]  # marked with N_

    def _command(self) -> Callable[[], Any]:
        return partial(self.app.run_action, self.action)

    async def discover(self) -> Hits:
        yield DiscoveryHit(literal(_(self.title)), self._command(), help=literal(_(self.help_text)))

    async def search(self, query: str) -> Hits:
        if hit := translated_hit(self.matcher(query), self.title, self.help_text, self._command()):
            yield hit


class ToolsCommand(_ActionCommand):
    action = "open_tools"
    title = N_("Tools: switch plugins and MCP servers")
    help_text = N_("Every tool source with its tools and state; switch plugins and servers on or off.")


class RouteCommand(_ActionCommand):
    action = "pick_route"
    title = N_("Switch route")
    help_text = N_("Choose the provider route for the next request.")


class SessionCommand(_ActionCommand):
    action = "pick_session"
    title = N_("Resume a session")
    help_text = N_("Choose an earlier session to continue.")


class ExportMarkdownCommand(_ActionCommand):
    action = "export('md')"
    title = N_("Export as Markdown")
    help_text = N_("The conversation and what each route received, as toolscope-ID.md in the working directory.")


class ExportHtmlCommand(_ActionCommand):
    action = "export('html')"
    title = N_("Export as HTML")
    help_text = N_("One self-contained page (works offline), as toolscope-ID.html in the working directory.")


class ExportJsonCommand(_ActionCommand):
    action = "export('json')"
    title = N_("Export as JSON")
    help_text = N_("The session view as data, as toolscope-ID.json in the working directory.")


EXPORT_COMMANDS: frozenset[type[Provider]] = frozenset(
    {ExportMarkdownCommand, ExportHtmlCommand, ExportJsonCommand}
)
"""The export commands: the App implements `action_export(fmt)` with `fmt` one of md, html, json."""


class TrajectoryCommand(_ActionCommand):
    action = "open_trajectory"
    title = N_("Trajectory")
    help_text = N_("Browse this session's turns, requests, tool changes and errors as it grows.")


SCREEN_COMMANDS: frozenset[type[Provider]] = frozenset(
    {ToolsCommand, RouteCommand, SessionCommand, TrajectoryCommand}
)
"""The providers above, for the App's `COMMANDS`."""


TEXTUAL_COMMAND_WORDS = (
    N_("Theme"),
    N_("Change the current theme"),
    N_("Quit"),
    N_("Quit the application as soon as possible"),
    N_("Keys"),
    N_("Hide the keys and widget help panel"),
    N_("Show help for the focused widget and a summary of available keys"),
    N_("Minimize"),
    N_("Minimize the widget and restore to normal size"),
    N_("Maximize"),
    N_("Maximize the focused widget"),
    N_("Screenshot"),
    N_("Save an SVG 'screenshot' of the current screen"),
)
"""Textual's words for its system commands (`App.get_system_commands`), in the catalog so that
`SystemCommands` shows them translated; words Textual changes show in English until added here."""


class SystemCommands(Provider):
    """Textual's system commands (theme, quit, keys, maximize, screenshot) in the current language;
    the apps list it in place of Textual's own provider, which shows its English words."""

    async def discover(self) -> Hits:
        commands = sorted(self.app.get_system_commands(self.screen), key=lambda command: _(command.title))
        for title, help_text, callback, discover in commands:
            if discover:
                yield DiscoveryHit(literal(_(title)), callback, help=literal(_(help_text)))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, callback, _discover in self.app.get_system_commands(self.screen):
            if hit := translated_hit(matcher, title, help_text, callback):
                yield hit

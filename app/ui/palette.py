"""Command-palette entries for the chat's own actions (the screens add theirs in `commands.py`)."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from app.ui import slash
from app.ui.text import literal, matched


SCREEN_ACTIONS = frozenset({"open_tools", "pick_route", "pick_session", "open_trajectory"})
"""Actions whose palette entries come with their screens (`app.ui.commands`)."""


class ChatCommands(Provider):
    """The chat's own slash commands in the palette (Ctrl+P): titled by what they do, in the current
    language, with the name typed in the prompt (`/compact`) as their help."""

    def _commands(self) -> list[slash.SlashCommand]:
        return [command for command in slash.COMMANDS if command.action not in SCREEN_ACTIONS]

    async def discover(self) -> Hits:
        for command in self._commands():
            run = partial(self.app.run_action, command.action)
            yield DiscoveryHit(literal(command.description), run, help=literal(command.name))

    async def search(self, query: str) -> Hits:
        """Matched on the shown title, the English one and the typed name: `compact` finds
        总结对话并开始新序列."""
        matcher = self.matcher(query)
        for command in self._commands():
            title = command.description
            shown = matcher.match(title)
            score = max(shown, matcher.match(command.help), matcher.match(command.name.lstrip("/")))
            if score > 0:
                display = matched(matcher, title) if shown else literal(title)
                run = partial(self.app.run_action, command.action)
                yield Hit(score, display, run, text=title, help=literal(command.name))

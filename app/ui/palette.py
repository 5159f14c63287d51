"""Command-palette entries for the chat's own actions (the screens add theirs in `commands.py`)."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from app.ui import slash
from app.ui.text import literal, matched


SCREEN_ACTIONS = frozenset({"open_tools", "pick_route", "pick_session", "open_trajectory"})
"""Actions whose palette entries come with their screens (`app.ui.commands`)."""


class ChatCommands(Provider):
    """The chat's own slash commands in the palette (Ctrl+P)."""

    def _entries(self) -> list[tuple[str, str, str]]:
        return [
            (command.name.lstrip("/"), command.description, command.action)
            for command in slash.COMMANDS
            if command.action not in SCREEN_ACTIONS
        ]

    async def discover(self) -> Hits:
        for name, help_text, action in self._entries():
            yield DiscoveryHit(literal(name), partial(self.app.run_action, action), help=literal(help_text))

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, action in self._entries():
            score = max(matcher.match(name), matcher.match(help_text))
            if score > 0:
                command = partial(self.app.run_action, action)
                yield Hit(score, matched(matcher, name), command, text=name, help=literal(help_text))

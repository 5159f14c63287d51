"""The composer's slash commands: name, what it does, and the app action it runs."""

from __future__ import annotations

from app.i18n import N_, _


class SlashCommand:
    """One slash command: a plain class (docs/decisions.md, *Plain classes*)."""

    __slots__ = ("name", "help", "action")

    def __init__(self, name: str, help: str, action: str) -> None:
        self.name = name
        self.help = help
        """Untranslated (`N_`): shown through `description`, in the language of the moment."""
        self.action = action

    @property
    def description(self) -> str:
        return _(self.help)


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("/route", N_("Switch the route (provider and model)"), "pick_route"),
    SlashCommand("/tools", N_("Switch plugins and MCP servers on or off"), "open_tools"),
    SlashCommand("/compact", N_("Summarise the conversation and start a new sequence"), "compact"),
    SlashCommand("/new-sequence", N_("Start a new projection sequence"), "new_sequence"),
    SlashCommand("/sessions", N_("Resume another session"), "pick_session"),
    SlashCommand("/inspect", N_("Inspect what each route received"), "inspect"),
    SlashCommand("/lang", N_("Switch the interface language"), "switch_language"),
    SlashCommand("/theme", N_("Choose a colour theme"), "change_theme"),
    SlashCommand("/help", N_("Keys and commands"), "help"),
    SlashCommand("/quit", N_("Quit toolscope"), "quit"),
)


def matching(text: str) -> list[SlashCommand]:
    """Commands the composer's text could be the start of (only while it is one `/word`)."""
    if not text.startswith("/") or any(char.isspace() for char in text):
        return []
    return [command for command in COMMANDS if command.name.startswith(text)]


def find(text: str) -> SlashCommand | None:
    name = text.strip()
    return next((command for command in COMMANDS if command.name == name), None)

"""How a tool change is worded, the one presentation shared by `toolscope run` and the chat.

One change names the tool ("Tool added: grep"); several give the counts ("3 tools added,
1 removed") and then the names, which the chat shows in an expandable list.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.i18n import _, ngettext

if TYPE_CHECKING:
    from app.session import structs
    from app.session.events import ToolRegistryUpdate


@dataclass(frozen=True, slots=True)
class ToolChangeNotice:
    summary: str
    added: tuple[str, ...]
    removed: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """Every name the notice stands for, additions first (empty for a single change)."""
        return () if len(self.added) + len(self.removed) == 1 else self.added + self.removed

    def lines(self) -> list[str]:
        """The notice as plain lines: the summary, then one line per changed tool if several."""
        if not self.names:
            return [self.summary]
        return [
            self.summary,
            *(_("  + {name}").format(name=name) for name in self.added),
            *(_("  − {name}").format(name=name) for name in self.removed),
        ]


def tool_change_notice(
    update: ToolRegistryUpdate | structs.ToolRegistryUpdate, quote: Callable[[str], str] = str
) -> ToolChangeNotice:
    """`quote` formats a tool name inside the summary: an export puts it in a code span."""
    added = tuple(addition.name for addition in update.additions)
    removed = tuple(update.removals)
    if len(added) + len(removed) == 1:
        summary = (
            _("Tool added: {name}").format(name=quote(added[0]))
            if added
            else _("Tool removed: {name}").format(name=quote(removed[0]))
        )
    elif added and removed:
        summary = _("{added}, {removed}").format(
            added=ngettext("{n} tool added", "{n} tools added", len(added)).format(n=len(added)),
            removed=ngettext("{n} removed", "{n} removed", len(removed)).format(n=len(removed)),
        )
    elif added:
        summary = ngettext("{n} tool added", "{n} tools added", len(added)).format(n=len(added))
    else:
        summary = ngettext("{n} tool removed", "{n} tools removed", len(removed)).format(
            n=len(removed)
        )
    return ToolChangeNotice(summary=summary, added=added, removed=removed)


def instructions_notice() -> str:
    return _("Instructions updated")

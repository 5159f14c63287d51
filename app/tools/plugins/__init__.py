"""The plugin catalog: named tool groups the user switches on and off while chatting.

A plugin's place in the registry is fixed when the registry is built (configuration order, then
this catalog's order), so switching one on or off only adds or removes its own tools.
"""

from __future__ import annotations

from app.tools.plugins import calculator, clock
from app.tools.source_state import Plugin


def available_plugins() -> tuple[Plugin, ...]:
    """Every plugin toolscope ships, in catalog (alphabetical) order."""
    return (calculator.create_plugin(), clock.create_plugin())

"""Where a tool in a session came from, told by its name.

A session's headers list each tool's name, description and schema, not its source. The registry
names every tool after its source (`docs/tools.md`): the built-ins and the shipped plugins have
fixed names, and an MCP server's tools are always `<server>__<tool>`. So the name tells the
source, in the chat and in a session file read years later alike, with no registry running.
"""

from __future__ import annotations

import functools
from pathlib import Path

from app.i18n import _


def tool_source(name: str) -> str:
    """The source of the tool `name` in the user's words: "built-in", "plugin calculator",
    "MCP server git" (the server's name as the tool's name spells it: characters a name cannot hold
    became `_`)."""
    if name in _builtin_names():
        return _("built-in")
    plugin = _plugin_of().get(name)
    if plugin is not None:
        return _("plugin {name}").format(name=plugin)
    server, separator, _tool = name.partition("__")
    if separator and server:
        return _("MCP server {name}").format(name=server)
    return _("source unknown")


@functools.cache
def _builtin_names() -> frozenset[str]:
    from app.tools.builtins import builtin_tools
    from app.tools.file_tools import Workspace

    return frozenset(tool.name for tool in builtin_tools(Workspace(Path("/"))))


@functools.cache
def _plugin_of() -> dict[str, str]:
    from app.tools.plugins import available_plugins

    return {tool.name: plugin.name for plugin in available_plugins() for tool in plugin.tools}

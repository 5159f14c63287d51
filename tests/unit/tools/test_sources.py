"""A tool's source told by its name, as the registry names tools (docs/tools.md)."""

from __future__ import annotations

import pytest

from app.tools.mcp_source import mcp_tool_name
from app.tools.sources import tool_source


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("read_file", "built-in"),
        ("run_command", "built-in"),
        ("calculate", "plugin calculator"),
        ("convert_time", "plugin clock"),
        (mcp_tool_name("lab", "echo"), "MCP server lab"),
        (mcp_tool_name("git", "files.read"), "MCP server git"),
        ("mystery", "source unknown"),
        ("__odd", "source unknown"),
    ],
)
def test_the_name_tells_the_source(name: str, source: str) -> None:
    assert tool_source(name) == source

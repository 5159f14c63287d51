"""Tool registry, built-in tools, plugins and MCP sources (DESIGN §1)."""

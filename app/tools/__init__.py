"""Tool registry, built-in tools, plugins and MCP sources (docs/architecture.md §12)."""

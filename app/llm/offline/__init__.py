"""The embedded offline demo model: no key, no sockets, the real `deepseek-chat` wire (docs/architecture.md §9)."""

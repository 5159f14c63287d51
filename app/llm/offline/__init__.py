"""The embedded offline demo model: no key, no sockets, the real `deepseek-chat` wire (DESIGN §8)."""

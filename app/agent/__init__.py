"""The agent loop, retry and compaction (DESIGN §3, §7)."""

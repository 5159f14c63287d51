"""The agent loop, retry and compaction (docs/architecture.md §3, §7, §9)."""

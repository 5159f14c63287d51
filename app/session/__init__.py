"""Session log: event models, durable store, strict reader, and the one reducer (docs/architecture.md §4–§6)."""

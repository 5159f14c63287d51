"""Stream-event contract, errors, route catalog, projection, wire dialects (docs/architecture.md §8, §9)."""

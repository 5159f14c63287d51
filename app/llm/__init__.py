"""Stream-event contract, errors, route catalog, projection, wire dialects (DESIGN §1, §5–§8)."""

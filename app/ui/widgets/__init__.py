"""The chat's widgets: one small widget per kind of thing the conversation shows."""

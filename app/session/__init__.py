"""Session log: event models, durable store, strict reader, and the one reducer (DESIGN §2–§4)."""

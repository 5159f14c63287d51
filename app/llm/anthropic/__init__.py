"""The `anthropic-messages` wire dialect: the Messages API, as Anthropic and compatible endpoints speak it."""

"""The `toolscope` commands (`docs/cli.md`)."""

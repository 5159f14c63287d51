"""Session ids, the files they name and the format's version, without the event models: the chat
resolves `--session` and `-c`, and reads a resumed log's header, before its first frame, which must
not wait for pydantic."""

from __future__ import annotations

import re
from pathlib import Path

from app.session.errors import SessionNotFoundError

FORMAT_VERSION = 1
"""The session log format this build reads and writes (docs/architecture.md §4)."""

SESSION_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""What a session id may be: the writer's `20260101-120000-a1b2c3` and other plain names. Ids double
as file names and are printed, so a file from someone else cannot name a path elsewhere or carry
escape sequences in one."""


def session_file(directory: Path, ref: str | Path) -> Path:
    """The file of a session given by id (in the store at `directory`) or by path."""
    if isinstance(ref, str) and SESSION_ID_PATTERN.fullmatch(ref):
        candidate = directory / f"{ref}.jsonl"
        if candidate.is_file():
            return candidate
    path = Path(ref).expanduser()
    if path.is_file():
        return path
    raise SessionNotFoundError(str(ref))

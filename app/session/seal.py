"""The account's key for the caches toolscope keeps beside its data (the line index, the listing,
the MCP servers' last-seen tools).

A cache is untrusted input: it travels with copied sessions, anyone may damage it, and what it
says lets a reader skip work (a scan, a fold, strict validation). So every cache is sealed with a
MAC under a random key only this account can read (`<data home>/cache/key`, 0600): a reader
believes a cache only when its seal checks out, i.e. when this account's toolscope wrote exactly
those bytes. A damaged, foreign or crafted cache fails the check and is rebuilt; it can never
change an answer. Without a usable key (a read-only data dir) caches are neither read nor written.
"""

from __future__ import annotations

import hmac
import os
import stat
from functools import cache
from pathlib import Path

from app.paths import data_home, ensure_private_dir

Buffer = bytes | bytearray | memoryview
KEY_BYTES = 32
SEAL_BYTES = 16
"""HMAC-SHA256 cut to 128 bits: what a forger would have to guess, not a collision bound."""


def seal(*parts: Buffer) -> bytes | None:
    """The MAC of `parts` joined, or None when there is no key (then nothing may be trusted)."""
    key = account_key(str(data_home()))
    if key is None:
        return None
    mac = hmac.new(key, digestmod="sha256")
    for part in parts:
        mac.update(part)
    return mac.digest()[:SEAL_BYTES]


def sealed(tag: bytes, *parts: Buffer) -> bool:
    """Whether `tag` is this account's seal of `parts`."""
    expected = seal(*parts)
    return expected is not None and hmac.compare_digest(tag, expected)


@cache
def account_key(home: str) -> bytes | None:
    """The key kept in `home`, made on first use; None when it cannot be read or made.

    Made in a temporary file and linked into place, so two processes starting at once agree on
    one key and neither reads a half-written one."""
    path = Path(home) / "cache" / "key"
    key = _read_key(path)
    if key is not None:
        return key
    try:
        ensure_private_dir(path.parent)
        temporary = f"{path}.{os.getpid()}.tmp"
        import secrets  # only the first run of an account makes its key
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(secrets.token_bytes(KEY_BYTES))
                handle.flush()
                os.fsync(handle.fileno())
            try:
                os.link(temporary, path)
            except FileExistsError:
                pass  # another process made it first: its key is the one
        finally:
            os.unlink(temporary)
    except OSError:
        return None
    return _read_key(path)


def _read_key(path: Path) -> bytes | None:
    """The key at `path` if it is a private regular file of the right size, else None."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        status = os.fstat(descriptor)
        if not _is_private_file(status):
            return None
        key = handle.read(KEY_BYTES + 1)
    return key if len(key) == KEY_BYTES else None


def _is_private_file(status: os.stat_result) -> bool:
    return stat.S_ISREG(status.st_mode) and not status.st_mode & 0o077 and status.st_uid == os.getuid()

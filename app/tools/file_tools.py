"""The file tools: read_file, list_dir, search_text (read-only) and write_file, confined to the
workspace.

Every path a tool touches is confined to the workspace: the working directory plus any extra
roots configured. Paths are resolved with symlinks followed before the check, so `..`, absolute
paths and symlinks that lead outside all fail with `PATH_OUTSIDE_WORKSPACE`. (The check happens
when the tool runs; a file swapped for a symlink between the check and the use is refused by
`O_NOFOLLOW`, a directory swapped in above it is not caught.)

File tools open only regular files: each open is non-blocking and the type is checked on the open
descriptor (`_open_regular`), so a FIFO, socket or device in the workspace fails that one call (or
is skipped and reported by `search_text`) instead of hanging it. A symlink loop likewise fails
that one path. Their blocking work runs in daemon threads (`app.tools.threads`), so a tool stuck
in the kernel cannot keep the program alive after the turn is cancelled.

`write_file` asks the `Approver` first and does nothing when refused. Outputs are bounded by
`OutputLimits` and end with an explicit notice when cut.
"""

from __future__ import annotations

import difflib
import errno
import fnmatch
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from app.i18n import ngettext
from app.tools.threads import run_in_daemon_thread
from app.tools.tool import OutputLimits, ToolContext, ToolErrorCode, ToolFailure, bound_text, with_notice

BINARY_SNIFF_BYTES = 8192
SEARCH_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})
SEARCH_MAX_FILE_BYTES = 8 * 1024 * 1024
SEARCH_MAX_FILES = 20_000
SEARCH_MAX_LINE_CHARS = 300
SEARCH_SKIPS_BYTES = 240
"""How much of a `search_text` result may name what was skipped (within its reserved notices)."""
APPROVAL_DETAIL_CHARS = 4000
APPROVAL_DIFF_SOURCE_BYTES = 1_000_000


@dataclass(frozen=True)
class Workspace:
    """Where the file tools may look and write: `root` (the working directory) and extra roots."""

    root: Path
    extra_roots: Sequence[Path] = ()
    roots: tuple[Path, ...] = field(init=False)

    def __post_init__(self) -> None:
        resolved = tuple(Path(p).resolve() for p in (self.root, *self.extra_roots))
        object.__setattr__(self, "root", resolved[0])
        object.__setattr__(self, "roots", resolved)

    def resolve(self, raw: str) -> Path:
        """`raw` (relative to the root, or absolute) resolved, or `ToolFailure` if it leads out."""
        path = _real_path(self.root / Path(raw).expanduser(), raw)
        if not self.contains(path):
            raise ToolFailure(
                ToolErrorCode.PATH_OUTSIDE_WORKSPACE,
                f"{raw!r} resolves to {path}, which is outside the workspace "
                f"({', '.join(str(root) for root in self.roots)})",
            )
        return path

    def contains(self, resolved: Path) -> bool:
        return any(resolved.is_relative_to(root) for root in self.roots)

    def display(self, path: Path) -> str:
        """A path as the model should see it: relative to the root when inside it."""
        return str(path.relative_to(self.root)) if path.is_relative_to(self.root) else str(path)


def _change_diff(path: Path, shown: str, content: str) -> str:
    """What overwriting a regular text file would change, as a unified diff clipped for the prompt;
    empty when the old file is not a regular UTF-8 file small enough to compare."""
    try:
        if not path.is_file() or path.stat().st_size > APPROVAL_DIFF_SOURCE_BYTES:
            return ""
        old = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
    lines = difflib.unified_diff(
        old.splitlines(), content.splitlines(), f"{shown} (now)", f"{shown} (new)", lineterm=""
    )
    return "\n".join(lines)[:APPROVAL_DETAIL_CHARS]


def _is_binary(head: bytes) -> bool:
    return b"\0" in head


def _real_path(path: Path, shown: str) -> Path:
    """`path` with every symlink followed; a symlink loop is that path's failure, not a crash."""
    try:
        return path.resolve()
    except RuntimeError:  # Python < 3.13 raises it for a loop; later versions leave the path as is
        raise _symlink_loop(shown) from None


def _symlink_loop(shown: str) -> ToolFailure:
    return ToolFailure(ToolErrorCode.TOOL_FAILED, f"{shown} is a symlink loop")


_FILE_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symlink"),
)


def _not_regular(shown: str, mode: int) -> ToolFailure:
    if stat.S_ISDIR(mode):
        return ToolFailure(ToolErrorCode.TOOL_FAILED, f"{shown} is a directory, not a file")
    kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a file")
    return ToolFailure(ToolErrorCode.TOOL_FAILED, f"{shown} is not a regular file ({kind})")


def _open_regular(path: Path, shown: str, flags: int = os.O_RDONLY) -> int:
    """A descriptor of the resolved `path`, which must be a regular file, or `ToolFailure`.

    The open never blocks (`O_NONBLOCK`: a FIFO would wait for its other end for ever) and the type
    is checked on the open descriptor, so nothing can be swapped in between the check and the use;
    `O_NOFOLLOW` refuses a symlink put in place after the path was resolved.
    """
    try:
        descriptor = os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError as error:
        raise _open_failure(path, shown, error) from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(shown, mode)
        os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _mode_of(path: Path, shown: str) -> int:
    """The type and mode bits of the resolved `path`, or `ToolFailure` saying why there are none."""
    try:
        return os.stat(path).st_mode
    except OSError as error:
        raise _open_failure(path, shown, error) from None


def _open_failure(path: Path, shown: str, error: OSError) -> ToolFailure:
    """Why `path` could not be opened or examined, in the words of the tool results."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        mode = None
    if error.errno == errno.ELOOP and (mode is None or stat.S_ISLNK(mode)):
        return _symlink_loop(shown)
    if mode is not None and not stat.S_ISREG(mode):
        return _not_regular(shown, mode)  # a FIFO without a reader (ENXIO), a directory (EISDIR)…
    if error.errno == errno.ENOENT:
        return ToolFailure(ToolErrorCode.TOOL_FAILED, f"{shown} does not exist")
    return ToolFailure(ToolErrorCode.TOOL_FAILED, f"{shown} cannot be opened: {error.strerror}")


def _open_text(path: Path, shown: str) -> TextIO | None:
    """The regular file `path` opened as UTF-8 text, or None when it is binary."""
    descriptor = _open_regular(path, shown)
    try:
        if _is_binary(os.pread(descriptor, BINARY_SNIFF_BYTES, 0)):
            os.close(descriptor)
            return None
        return open(descriptor, encoding="utf-8", errors="replace")
    except BaseException:
        os.close(descriptor)
        raise


class FileTools:
    """The file tools; the blocking work runs in a daemon thread to keep the UI responsive."""

    def __init__(self, workspace: Workspace, limits: OutputLimits) -> None:
        self.workspace = workspace
        self.limits = limits

    async def read_file(self, arguments: dict[str, Any], context: ToolContext) -> str:
        path = self.workspace.resolve(arguments["path"])
        offset = arguments.get("offset", 1)
        limit = arguments.get("limit", self.limits.max_lines)
        return await run_in_daemon_thread(self._read, path, offset, limit)

    def _read(self, path: Path, offset: int, limit: int) -> str:
        """Lines `offset`… of `path`, read in pieces of at most one output's worth, so a file with
        one enormous line costs no more memory than the result."""
        shown = self.workspace.display(path)
        handle = _open_text(path, shown)
        if handle is None:
            raise ToolFailure(ToolErrorCode.TOOL_FAILED, f"{shown} is a binary file; not shown")
        # More characters than this are more bytes than the limit, whatever they encode to.
        piece_limit = self.limits.max_bytes + 1
        lines: list[str] = []
        size = 0
        seen = 0
        more = False
        long_line = ""
        at_line_start = True
        with handle:
            while piece := handle.readline(piece_limit):
                starts_line, at_line_start = at_line_start, piece.endswith("\n")
                if not starts_line:
                    continue  # the rest of a line too long to show
                seen += 1
                if seen < offset:
                    continue
                encoded = len(piece.encode("utf-8"))
                if len(lines) >= limit or size + encoded > self.limits.max_bytes:
                    more = True
                    long_line = piece
                    break
                lines.append(piece)
                size += encoded
        if more and not lines:
            # A single line longer than the byte limit: show its beginning.
            text, _cut = bound_text(long_line, self.limits)
            notice = f"truncated: line {offset} alone exceeds {self.limits.max_bytes} bytes"
            return with_notice(text, notice)
        if not lines:
            if offset > 1:
                return f"[{shown} has {seen} lines; offset {offset} is past the end]"
            return f"[{shown} is empty]"
        content = "".join(lines)
        if more:
            last = offset + len(lines) - 1
            content = with_notice(
                content,
                f"truncated: showed lines {offset}-{last}; "
                f"call read_file with offset={last + 1} to continue",
            )
        return content

    async def list_dir(self, arguments: dict[str, Any], context: ToolContext) -> str:
        path = self.workspace.resolve(arguments.get("path", "."))
        return await run_in_daemon_thread(self._list, path)

    def _list(self, path: Path) -> str:
        shown = self.workspace.display(path)
        if not stat.S_ISDIR(_mode_of(path, shown)):
            raise ToolFailure(ToolErrorCode.TOOL_FAILED, f"{shown} is not a directory")
        entries = sorted(path.iterdir(), key=lambda entry: entry.name)
        if not entries:
            return f"[{shown} is empty]"
        names = [entry.name + ("/" if entry.is_dir() else "") for entry in entries]
        text, cut = bound_text("\n".join(names), self.limits)
        if cut:
            shown_count = len(text.splitlines())
            text = with_notice(text, f"truncated: showing {shown_count} of {len(names)} entries")
        return text

    async def search_text(self, arguments: dict[str, Any], context: ToolContext) -> str:
        flags = re.IGNORECASE if arguments.get("ignore_case") else 0
        try:
            pattern = re.compile(arguments["pattern"], flags)
        except re.error as exc:
            raise ToolFailure(
                ToolErrorCode.INVALID_ARGUMENTS, f"invalid regular expression: {exc}"
            ) from None
        base = self.workspace.resolve(arguments.get("path", "."))
        return await run_in_daemon_thread(self._search, base, pattern, arguments.get("glob"))

    def _search(self, base: Path, pattern: re.Pattern[str], glob: str | None) -> str:
        _mode_of(base, self.workspace.display(base))  # it exists, and is not a symlink loop
        matches: list[str] = []
        sizes: list[int] = []
        total = 0
        skipped: list[str] = []
        stopped = ""
        for count, path in enumerate(self._searchable_files(base, glob, skipped)):
            if count >= SEARCH_MAX_FILES:
                stopped = f"stopped after {SEARCH_MAX_FILES} files"
                break
            try:
                handle = self._open_searchable(path)
            except ToolFailure as failure:
                skipped.append(failure.message)
                continue
            if handle is None:
                continue
            with handle:
                for number, line in _matching_lines(handle, pattern):
                    if len(line) > SEARCH_MAX_LINE_CHARS:
                        line = line[:SEARCH_MAX_LINE_CHARS] + "…"
                    entry = f"{self.workspace.display(path)}:{number}: {line}"
                    entry_size = len(entry.encode("utf-8")) + 1
                    if not _fits(len(matches), total + entry_size, self.limits):
                        stopped = f"stopped after {len(matches)} matches"
                        break
                    matches.append(entry)
                    sizes.append(entry_size)
                    total += entry_size
            if stopped:
                break
        if skipped:
            # The line naming them takes the room of one match.
            room = self.limits.reserving(1)
            while matches and not _fits(len(matches) - 1, total, room):
                matches.pop()
                total -= sizes.pop()
                stopped = f"stopped after {len(matches)} matches"
        text = "\n".join(matches) if matches else "no matches" + (f" ({stopped})" if stopped else "")
        if matches and stopped:
            text = with_notice(text, f"truncated: {stopped}; narrow the pattern, path or glob")
        if skipped:
            text = with_notice(text, _skipped_notice(skipped))
        return text

    def _searchable_files(self, base: Path, glob: str | None, skipped: list[str]) -> Iterator[Path]:
        """Files under `base` in a stable order; directories that cannot be listed go to `skipped`."""
        if not base.is_dir():
            yield base  # a file, or something else `_open_searchable` will name
            return

        def unlistable(error: OSError) -> None:
            where = self.workspace.display(Path(error.filename)) if error.filename else "?"
            skipped.append(f"{where} cannot be listed: {error.strerror}")

        for directory, dirnames, filenames in os.walk(base, onerror=unlistable):
            dirnames[:] = sorted(
                name for name in dirnames if not name.startswith(".") and name not in SEARCH_SKIPPED_DIRS
            )
            for name in sorted(filenames):
                path = Path(directory, name)
                relative = str(path.relative_to(base))
                if glob and not (fnmatch.fnmatch(name, glob) or fnmatch.fnmatch(relative, glob)):
                    continue
                yield path

    def _open_searchable(self, path: Path) -> TextIO | None:
        """`path` opened for searching; None for what is skipped without a word (a symlink out of
        the workspace, a binary or very large file); `ToolFailure` for what is skipped and reported."""
        shown = self.workspace.display(path)
        real = _real_path(path, shown)
        if not self.workspace.contains(real):
            return None
        handle = _open_text(real, shown)
        if handle is not None and os.fstat(handle.fileno()).st_size > SEARCH_MAX_FILE_BYTES:
            handle.close()
            return None
        return handle

    async def write_file(self, arguments: dict[str, Any], context: ToolContext) -> str:
        path = self.workspace.resolve(arguments["path"])
        content: str = arguments["content"]
        shown = self.workspace.display(path)
        try:
            mode: int | None = os.stat(path).st_mode
        except OSError:
            mode = None
        if mode is not None and not stat.S_ISREG(mode):
            # Refused before asking: approving could not make it writable.
            raise _not_regular(shown, mode)
        size = len(content.encode("utf-8"))
        existed = mode is not None
        if existed:
            template = ngettext(
                "Overwrite {path} with {size} byte", "Overwrite {path} with {size} bytes", size
            )
        else:
            template = ngettext(
                "Create {path} with {size} byte", "Create {path} with {size} bytes", size
            )
        summary = template.format(path=shown, size=size)
        diff = await run_in_daemon_thread(_change_diff, path, shown, content) if existed else ""
        await context.ask("write_file", summary, content[:APPROVAL_DETAIL_CHARS], diff)
        await run_in_daemon_thread(self._write, path, shown, content)
        return f"{'overwrote' if existed else 'created'} {shown} ({size} bytes)"

    @staticmethod
    def _write(path: Path, shown: str, content: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Truncated only once it is known to be a regular file (O_TRUNC would act on open).
        descriptor = _open_regular(path, shown, os.O_WRONLY | os.O_CREAT)
        with open(descriptor, "w", encoding="utf-8") as handle:
            handle.truncate(0)
            handle.write(content)


def _fits(before: int, total: int, limits: OutputLimits) -> bool:
    """Whether a match fits after `before` others, `total` bytes with them."""
    return before < limits.max_lines and total <= limits.max_bytes


def _skipped_notice(skipped: list[str]) -> str:
    """What `search_text` skipped, as many as fit in one notice line, then how many more."""
    shown = skipped[:1]
    for reason in skipped[1:]:
        if len("; ".join([*shown, reason]).encode("utf-8")) > SEARCH_SKIPS_BYTES:
            break
        shown.append(reason)
    hidden = len(skipped) - len(shown)
    return f"skipped: {'; '.join(shown)}" + (f"; and {hidden} more" if hidden > 0 else "")


def _matching_lines(handle: TextIO, pattern: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    try:
        for number, line in enumerate(handle, start=1):
            if pattern.search(line):
                yield number, line.rstrip("\r\n")
    except OSError:
        return

"""Export the session from the interface (the palette's "Export as Markdown / HTML / JSON").

The file is what `toolscope export SESSION --format FMT -o FILE` writes, built in a thread from
the session file (a live turn goes on meanwhile), named `toolscope-<session id>.<format>` in the
working directory (docs/decisions.md), private (0600) and written whole or not at all. A
notification names the file, or says why nothing was written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from textual.app import App

from app.export.command import export_file
from app.i18n import _
from app.llm.routes import Route
from app.session.errors import SessionError

FORMAT_NAMES = {"md": "Markdown", "html": "HTML", "json": "JSON"}


def export_path(directory: Path, session_id: str, fmt: str) -> Path:
    return directory / f"toolscope-{session_id}.{fmt}"


async def export_session(
    app: App[object], session: tuple[str, Path] | None, routes: Sequence[Route], fmt: str, directory: Path
) -> Path | None:
    """Write `session` (its id and file) as `fmt` into `directory`; the written path, or None."""
    if session is None:
        app.notify(_("Nothing to export yet: the session starts with the first prompt."), severity="warning")
        return None
    session_id, session_path = session
    target = export_path(directory, session_id, fmt)
    try:
        await asyncio.to_thread(export_file, session_path, routes, fmt, target)
    except SessionError as error:
        app.notify(str(error), title=_("Export failed"), severity="error", timeout=10)
        return None
    except OSError as error:
        reason = error.strerror or str(error)
        app.notify(
            _("cannot write {path}: {reason}").format(path=target, reason=reason),
            title=_("Export failed"),
            severity="error",
            timeout=10,
        )
        return None
    app.notify(
        _("Exported as {format} to {path}").format(format=FORMAT_NAMES[fmt], path=target), timeout=8
    )
    return target

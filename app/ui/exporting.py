"""Export the session from the interface (the palette's "Export as Markdown / HTML / JSON").

The palette's command asks where to write first (`ExportTargetDialog`): the path offered is
`toolscope-<session id>.<format>` in the working directory (docs/decisions.md), shown whole and
editable; Enter writes, Escape writes nothing. A directory given gets that name inside it, a
relative path is taken from the working directory. The file is what `toolscope export SESSION
--format FMT -o FILE` writes, built in a thread from the session file (a live turn goes on
meanwhile), private (0600) and written whole or not at all. A notification names the file, or says
why nothing was written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Static

from app.export.write import export_file
from app.i18n import _
from app.llm.routes import Route
from app.session.errors import SessionError
from app.ui.screens.modal import ClosableModal
from app.ui.text import literal

FORMAT_NAMES = {"md": "Markdown", "html": "HTML", "json": "JSON"}


def export_path(directory: Path, session_id: str, fmt: str) -> Path:
    return directory / f"toolscope-{session_id}.{fmt}"


def chosen_target(answer: str, directory: Path, session_id: str, fmt: str) -> Path:
    """Where the dialog's `answer` says to write: from `directory` when relative, the default file
    name inside it when it names a directory."""
    target = directory / Path(answer.strip()).expanduser()
    return export_path(target, session_id, fmt) if target.is_dir() else target


class ExportTargetDialog(ClosableModal[str]):
    """Where to write the export: the offered path in an input, dismissed with what it holds."""

    DEFAULT_CSS: ClassVar[str] = """
    ExportTargetDialog { align: center middle; }
    #export-dialog {
        width: 100%; max-width: 100; height: auto; margin: 1 1; padding: 0 1;
        border: round $accent; background: $surface;
    }
    #export-title { text-style: bold; color: $text-accent; margin-bottom: 1; }
    #export-hint { color: $text-muted; margin-top: 1; }
    """

    def __init__(self, fmt: str, offered: Path) -> None:
        super().__init__()
        self.fmt = fmt
        self.offered = offered

    def compose(self) -> ComposeResult:
        with Vertical(id="export-dialog"):
            yield Static(literal(_("Export as {format} to:").format(format=FORMAT_NAMES[self.fmt])), id="export-title")
            yield Input(str(self.offered), id="export-path", select_on_focus=False)
            yield Static(literal(_("Enter writes the file · Escape cancels")), id="export-hint")

    def on_mount(self) -> None:
        path = self.query_one(Input)
        path.focus()
        # The file name in view, with the cursor after it: a long directory goes out to the left
        # (Textual shows an input's first value from its start).
        self.call_after_refresh(lambda: path.scroll_to(x=path.max_scroll_x, animate=False))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.value.strip():
            self.dismiss(event.value)


def ask_and_export(
    app: App[object], session: tuple[str, Path] | None, routes: Sequence[Route], fmt: str, directory: Path
) -> None:
    """Ask where to write `session` (its id and file) as `fmt`, offering a file in `directory`,
    then write it; nothing when the dialog is cancelled."""
    if session is None:
        app.notify(_("Nothing to export yet: the session starts with the first prompt."), severity="warning")
        return
    session_id, _path = session

    def answered(answer: str | None) -> None:
        if answer is not None:
            target = chosen_target(answer, directory, session_id, fmt)
            app.run_worker(export_session(app, session, routes, fmt, target), group="export")

    app.push_screen(ExportTargetDialog(fmt, export_path(directory, session_id, fmt)), answered)


async def export_session(
    app: App[object], session: tuple[str, Path], routes: Sequence[Route], fmt: str, target: Path
) -> Path | None:
    """Write `session` (its id and file) as `fmt` to `target`; the written path, or None."""
    _session_id, session_path = session
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

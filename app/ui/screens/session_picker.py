"""The session picker (`/sessions` in the chat, `toolscope view` without an argument): every
session log with its title, creation date, last activity, route, events and size, filterable by
title, id and route. Dismisses with the chosen session's path, or None.

Given a loader instead of the sessions, the picker opens at once and reads them in a thread.

Titles are the users' own words but the files may come from anyone: shown through the one printable
path as plain Text, so markup and escape sequences appear literally or not at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import ClassVar

from rich.text import Text

from app.display import human_size, local_date, local_time, session_problem_text
from app.i18n import _
from app.session.listing import SessionSummary
from app.terminal import printable
from app.ui.screens.picker import PickerColumn, PickerRow, PickerScreen

HERE = Path(__file__).parent


class SessionPickerScreen(PickerScreen):
    # From this file: a relative path is read beside the subclass's module (the trajectory's picker).
    CSS_PATH: ClassVar[str | list[str]] = [str(HERE / "picker.tcss"), str(HERE / "session_picker.tcss")]

    def __init__(self, sessions: Sequence[SessionSummary] | Callable[[], Sequence[SessionSummary]]) -> None:
        """`sessions`, or what reads them (`list_sessions`): that runs in a thread after the screen
        shows, so a slow disk or thousands of logs never hold up the keyboard."""
        self._load = sessions if callable(sessions) else None
        self._problem: str | None = None
        super().__init__([] if callable(sessions) else [self._row(summary) for summary in sessions])

    def on_mount(self) -> None:
        # The shared picker's own on_mount runs after this one (Textual calls each class's handler).
        if self._load is not None:
            self.run_worker(self._read_sessions(self._load), name="sessions", exclusive=True)

    async def _read_sessions(self, load: Callable[[], Sequence[SessionSummary]]) -> None:
        try:
            sessions = await asyncio.to_thread(load)
        except OSError as error:  # an unreadable sessions dir: said in the list, the chat goes on
            self._problem = _("Cannot read the sessions: {reason}").format(reason=error.strerror or error)
            sessions = ()
        self._load = None
        self.replace_rows([self._row(summary) for summary in sessions])

    def heading(self) -> str:
        return _("Resume a session")

    def columns(self) -> Sequence[PickerColumn]:
        return (
            PickerColumn(_("Title"), flexible=True),
            PickerColumn(_("Created")),
            PickerColumn(_("Last active")),
            PickerColumn(_("Route")),
            PickerColumn(_("Events"), justify="right"),
            PickerColumn(_("Size"), justify="right"),
        )

    def empty_text(self) -> str:
        if self._load is not None:
            return _("Reading the sessions…")
        return self._problem or _("No sessions yet.")

    @staticmethod
    def _row(summary: SessionSummary) -> PickerRow:
        session_id = printable(summary.id)
        title = printable(summary.title) or _("(no message yet)")
        route = printable(summary.route or "")
        last_active = local_time(summary.last_active)
        size = human_size(summary.size)
        if summary.problem is not None:
            cells = (session_problem_text(summary.problem), "-", last_active, "-", "-", size)
            styles = ("yellow",)
        else:
            created = local_date(summary.created_at) if summary.created_at is not None else "-"
            cells = (title, created, last_active, route, str(summary.events), size)
            styles = ()
        return PickerRow(
            key=summary.path,
            cells=cells,
            search_text=" ".join((title, session_id, route)).lower(),
            detail=partial(_detail, summary),
            styles=styles,
        )


def _detail(summary: SessionSummary) -> Text:
    return Text.assemble((printable(summary.id), "bold"), "  ", printable(summary.path))


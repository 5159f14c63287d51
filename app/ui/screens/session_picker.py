"""The session picker (`/sessions` in the chat, `toolscope view` without an argument): every
session log with its title, creation date, last activity, route, events and size, filterable by
title, id and route. Dismisses with the chosen session's path, or None.

Titles are the users' own words but the files may come from anyone: shown through the one printable
path as plain Text, so markup and escape sequences appear literally or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import ClassVar

from rich.text import Text

from app.display import human_size, local_date, local_time, session_problem_text
from app.i18n import _
from app.session.listing import SessionSummary
from app.terminal import printable
from app.ui.screens.picker import PickerColumn, PickerRow, PickerScreen


class SessionPickerScreen(PickerScreen):
    CSS_PATH: ClassVar[str | list[str]] = ["picker.tcss", "session_picker.tcss"]

    def __init__(self, sessions: Sequence[SessionSummary]) -> None:
        super().__init__([self._row(summary) for summary in sessions])

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
        return _("No sessions yet.")

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


"""The route picker (`/route`, the palette): every route of the catalog with its dialect, model,
tool-update mode and whether its key is set — never the key itself. Dismisses with the chosen
route id, or None. Switching routes mid-session is a header change (docs/architecture.md §7); the app does it."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import ClassVar

from rich.text import Text

from app.i18n import _
from app.llm.routes import Route, RouteCatalog
from app.terminal import printable
from app.ui.screens.picker import PickerColumn, PickerRow, PickerScreen

CURRENT_MARK = "●"


def key_text(route: Route) -> str:
    return {"set": _("set"), "missing": _("missing"), "not-needed": _("not needed")}[route.key_state()]


class RoutePickerScreen(PickerScreen):
    CSS_PATH: ClassVar[str | list[str]] = ["picker.tcss", "route_picker.tcss"]

    def __init__(self, catalog: RouteCatalog, current: str) -> None:
        super().__init__([self._row(route, route.id == current) for route in catalog], current)

    def heading(self) -> str:
        return _("Switch route")

    def columns(self) -> Sequence[PickerColumn]:
        return (
            PickerColumn(_("Route")),
            PickerColumn(_("Dialect")),
            PickerColumn(_("Model")),
            PickerColumn(_("Tool updates")),
            PickerColumn(_("API key")),
        )

    def empty_text(self) -> str:
        return _("No routes are configured.")

    @staticmethod
    def _row(route: Route, current: bool) -> PickerRow:
        # Routes come from the trusted config, but a pasted id or model may still hold a control
        # character: shown through the one printable path, as plain Text (no markup).
        route_id, model, label = printable(route.id), printable(route.model), printable(route.display_label)
        key = key_text(route)
        return PickerRow(
            key=route.id,
            cells=(
                f"{CURRENT_MARK} {route_id}" if current else f"  {route_id}",
                route.dialect,
                model,
                route.tool_update,
                key,
            ),
            styles=(
                "bold" if current else "",
                "",
                "",
                "",
                "yellow" if route.key_state() == "missing" else "",
            ),
            search_text=" ".join((route_id, route.dialect, model, route.tool_update, label)).lower(),
            detail=partial(_detail, route, current),
        )


def _detail(route: Route, current: bool) -> Text:
    detail = Text(printable(route.display_label), style="bold")
    detail.append(" · ")
    detail.append(printable(route.base_url))
    if route.api_key_env is not None:
        detail.append(" · ")
        detail.append(
            _("key from {variable}: {state}").format(variable=printable(route.api_key_env), state=key_text(route))
        )
    if current:
        detail.append(" · ")
        detail.append(_("current route"), style="italic")
    return detail

"""`toolscope cost` as text: one row per route, then what each tool-update mode would cost, then the
cheapest route (the model is `app.report.cost`; `app.report.cost_json` writes the same as JSON)."""

from __future__ import annotations

from rich.cells import cell_len

from app.display import money, token_count
from app.i18n import _, ngettext
from app.report.cost import MODES, SessionCost
from app.report.wording import cause_label
from app.terminal import printable


def render_cost_text(session_id: str, requests: int, cost: SessionCost) -> str:
    lines = [
        ngettext(
            "Session {id}: {count} request.", "Session {id}: {count} requests.", requests
        ).format(id=printable(session_id), count=requests),
        prices_line(cost),
        calibration_line(cost),
        "",
    ]
    header, rows = totals_table(cost)
    lines += _table(header, rows, right=range(2, 7))
    lines += recorded_lines(cost)
    lines += ["", _("On each tool-update mode (estimated):")]
    mode_rows = [
        [route_id, *(_mode_cell(costs, mode) for mode in MODES)] for route_id, costs in cost.by_mode.items()
    ]
    lines += _table([_("route"), *MODES], mode_rows, right=range(1, len(MODES) + 1))
    lines += ["", cheapest_line(cost)]
    return "\n".join(lines) + "\n"


def totals_table(cost: SessionCost) -> tuple[list[str], list[list[str]]]:
    """The header and one row per route of the session totals (the exports show them too); numbers
    are columns 2 to 6."""
    header = [_("route"), _("mode"), _("requests"), _("hits"), _("input"), _("uncached"), _("cost"), _("misses")]
    rows = [
        [
            totals.route.id,
            totals.route.tool_update,
            str(totals.requests),
            str(totals.hits),
            token_count(totals.input_tokens),
            token_count(totals.uncached_tokens),
            money(totals.cost) if totals.cost is not None else _("no price"),
            ", ".join(f"{cause_label(cause)} {count}" for cause, count in sorted(totals.breaks.items())),
        ]
        for totals in cost.routes
    ]
    return header, rows


def recorded_lines(cost: SessionCost) -> list[str]:
    """The provider's record of the requests each route ran beside the calibrated estimate of the
    same requests (no lines when no route recorded any)."""
    ran = [totals for totals in cost.routes if totals.recorded_requests]
    if not ran:
        return []
    header = [_("route"), _("requests"), _("recorded input"), _("estimated"), _("recorded cached"), _("estimated")]
    rows = [
        [
            totals.route.id,
            str(totals.recorded_requests),
            token_count(totals.recorded[0]),
            token_count(totals.estimated_recorded[0]),
            token_count(totals.recorded[1]),
            token_count(totals.estimated_recorded[1]),
        ]
        for totals in ran
    ]
    return ["", _("Recorded beside the estimate (the requests each route ran):"), *_table(header, rows, right=range(1, 6))]


def cheapest_line(cost: SessionCost) -> str:
    cheapest = cost.cheapest
    if cheapest is None or cheapest.cost is None:
        return _("No route has a known price: tokens only.")
    return _("Cheapest: {route} ({cost}).").format(route=cheapest.route.id, cost=money(cheapest.cost))


def prices_line(cost: SessionCost) -> str:
    day = cost.prices.data_date
    if day is None:
        return _("Prices: the genai-prices data shipped with toolscope, and [prices] in config.toml.")
    return _("Prices: genai-prices data of {date}, and [prices] in config.toml.").format(date=day.isoformat())


def calibration_line(cost: SessionCost) -> str:
    calibration = cost.calibration
    if calibration.mean_error is None:
        return _("Estimates: 4 characters a token, not calibrated (no request recorded its usage).")
    return ngettext(
        "Estimates calibrated ×{factor:.2f} against {count} recorded request (mean error {error:.1%}).",
        "Estimates calibrated ×{factor:.2f} against {count} recorded requests (mean error {error:.1%}).",
        calibration.samples,
    ).format(factor=calibration.factor, count=calibration.samples, error=calibration.mean_error)


def _mode_cell(costs: dict, mode: str) -> str:  # type: ignore[type-arg]
    if mode not in costs:
        return "—"
    value = costs[mode]
    return money(value) if value is not None else _("no price")


def _table(header: list[str], rows: list[list[str]], *, right: range) -> list[str]:
    """Columns padded by terminal cells (wide characters take two), numbers right-aligned."""
    widths = [max(cell_len(row[column]) for row in [header, *rows]) for column in range(len(header))]

    def line(row: list[str]) -> str:
        cells = []
        for column, text in enumerate(row):
            padding = " " * (widths[column] - cell_len(text))
            cells.append(padding + text if column in right else text + padding)
        return "  ".join(cells).rstrip()

    return [line(header), *(line(row) for row in rows)]

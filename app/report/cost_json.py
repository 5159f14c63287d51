"""`toolscope cost --json`: the `app.report.cost` model as one JSON object (docs/cost.md describes
every field). Money is a string of the exact decimal, or null where the route has no price."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, TextIO

from app.report.cost import SessionCost


def write_cost_json(out: TextIO, session_id: str, requests: int, cost: SessionCost) -> None:
    document = {"session": session_id, "requests": requests, **cost_json(cost)}
    json.dump(document, out, ensure_ascii=False, indent=2)
    out.write("\n")


def cost_json(cost: SessionCost) -> dict[str, Any]:
    """The totals (the exports carry them too); each route's `by_mode` only where `cost` has it."""
    cheapest = cost.cheapest
    return {
        "prices": {"date": day.isoformat() if (day := cost.prices.data_date) is not None else None},
        "calibration": {
            "factor": cost.calibration.factor,
            "samples": cost.calibration.samples,
            "mean_error": cost.calibration.mean_error,
        },
        "routes": [
            {
                "route": totals.route.id,
                "model": totals.route.model,
                "tool_update": totals.route.tool_update,
                "requests": totals.requests,
                "hits": totals.hits,
                "misses": {str(cause): count for cause, count in sorted(totals.breaks.items())},
                "input_tokens": totals.input_tokens,
                "cached_tokens": totals.cached_tokens,
                "uncached_tokens": totals.uncached_tokens,
                "output_tokens": totals.output_tokens,
                "recorded_requests": totals.recorded_requests,
                "recorded": {"input_tokens": totals.recorded[0], "cached_tokens": totals.recorded[1]},
                "estimate_of_recorded": {
                    "input_tokens": totals.estimated_recorded[0],
                    "cached_tokens": totals.estimated_recorded[1],
                },
                "cost": _money(totals.cost),
                **(
                    {"by_mode": {mode: _money(value) for mode, value in cost.by_mode[totals.route.id].items()}}
                    if cost.by_mode
                    else {}
                ),
            }
            for totals in cost.routes
        ],
        "cheapest": cheapest.route.id if cheapest is not None else None,
    }


def _money(value: Decimal | None) -> Any:
    return str(value) if value is not None else None

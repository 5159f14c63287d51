"""`toolscope cost --json`: the `app.report.cost` model as one JSON object (docs/cost.md describes
every field). Money is a string of the exact decimal, or null where the route has no price."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, TextIO

from app.report.cost import SessionCost


def write_cost_json(out: TextIO, session_id: str, requests: int, cost: SessionCost) -> None:
    cheapest = cost.cheapest
    document = {
        "session": session_id,
        "requests": requests,
        "prices": {"source": cost.prices.source_text(), "date": cost.prices.data_date},
        "calibration": {
            "factor": cost.calibration.factor,
            "samples": cost.calibration.samples,
            "meanError": cost.calibration.mean_error,
        },
        "routes": [
            {
                "route": totals.route.id,
                "model": totals.route.model,
                "toolUpdate": totals.route.tool_update,
                "requests": totals.requests,
                "hits": totals.hits,
                "misses": {str(cause): count for cause, count in sorted(totals.breaks.items())},
                "inputTokens": totals.input_tokens,
                "cachedTokens": totals.cached_tokens,
                "uncachedTokens": totals.uncached_tokens,
                "outputTokens": totals.output_tokens,
                "recordedRequests": totals.recorded_requests,
                "estimateOfRecorded": {
                    "inputTokens": totals.estimated_recorded[0],
                    "cachedTokens": totals.estimated_recorded[1],
                },
                "cost": _money(totals.cost),
                "byMode": {mode: _money(value) for mode, value in cost.by_mode[totals.route.id].items()},
            }
            for totals in cost.routes
        ],
        "cheapest": cheapest.route.id if cheapest is not None else None,
    }
    json.dump(document, out, ensure_ascii=False, indent=2)
    out.write("\n")


def _money(value: Decimal | None) -> Any:
    return str(value) if value is not None else None

"""`toolscope inspect --json`: the report model as one JSON object (`docs/inspect.md`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.report.model import RequestReport, RouteReport


def report_json(session_id: str, reports: Sequence[RequestReport]) -> dict[str, Any]:
    return {
        "session": session_id,
        "requests": [
            {
                "index": report.request.index,
                "turn": report.request.turn,
                "step": report.request.step,
                "sent_on": report.request.route,
                "routes": {item.route.id: _route_json(item) for item in report.routes},
            }
            for report in reports
        ],
    }


def _route_json(report: RouteReport) -> dict[str, Any]:
    return {
        "declarations": [
            {
                "name": declaration.tool.name,
                "state": declaration.state,
                "defer_loading": declaration.defer_loading,
            }
            for declaration in report.projected.declarations
        ],
        "blocks": [
            {
                "type": block.kind,
                **({"text": block.text} if block.kind == "text" else {"name": block.name}),
                "seq": block.seq,
                "position": position,
            }
            for block, position in report.blocks
        ],
        "beta": report.beta,
        "fallback": report.projected.fallback,
        "prefix_kept": report.prefix.kept,
        "first_difference": report.prefix.first_difference,
        "error": report.error,
        "body": report.wire.body if report.wire is not None else None,
    }

"""`toolscope inspect --json`: the report model as one JSON object (`docs/inspect.md`)."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import Any, TextIO

from app.report.cache import CacheDiagnostic, InputTokens
from app.report.model import RequestReport, RouteReport, ToolChange
from app.terminal import json_text


def write_report_json(
    out: TextIO, session_id: str, reports: Iterable[RequestReport], *, diffs: bool = False
) -> None:
    """The JSON report written request by request (a long session's never sits whole in memory):
    the same document as `json_text({"session": …, "requests": […]}, indent=2)`. With `diffs`,
    each route also has `body_diff`: the unified diff's lines."""
    out.write("{\n  \"session\": " + json_text(session_id) + ',\n  "requests": [')
    separator = "\n"
    for report in reports:
        request = json_text(_request_json(report, diffs), indent=2)
        out.write(separator + textwrap.indent(request, "    "))
        separator = ",\n"
    out.write("\n  ]\n}\n" if separator != "\n" else "]\n}\n")


def _request_json(report: RequestReport, diffs: bool) -> dict[str, Any]:
    return {
        "index": report.request.index,
        "turn": report.request.turn,
        "step": report.request.step,
        "sent_on": report.request.route,
        "tool_change": _change_json(report.tool_change),
        "routes": {item.route.id: _route_json(item, diffs) for item in report.routes},
    }


def _change_json(change: ToolChange | None) -> dict[str, Any] | None:
    if change is None:
        return None
    return {
        "first": change.first,
        "tools": list(change.tools),
        "added": list(change.added),
        "removed": list(change.removed),
        "redefined": list(change.redefined),
    }


def _route_json(report: RouteReport, diffs: bool) -> dict[str, Any]:
    route: dict[str, Any] = {
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
        "cache": cache_json(report.cache),
        "body": report.wire.body if report.wire is not None else None,
    }
    if diffs:
        route["body_diff"] = report.body_diff()
    return route


def cache_json(cache: CacheDiagnostic | None) -> dict[str, Any] | None:
    """The cache diagnostic (None: the body was never sendable); `cause` is a stable id."""
    if cache is None:
        return None
    tools = cache.tools
    return {
        "hit": cache.hit,
        "cause": str(cache.cause) if cache.cause is not None else None,
        "pointer": cache.pointer,
        "tools": None
        if tools is None
        else {
            "added": list(tools.added),
            "removed": list(tools.removed),
            "redefined": list(tools.redefined),
            "reordered": tools.reordered,
            "loaded": list(tools.loaded),
        },
        "compaction": cache.compaction,
        "gap_ms": cache.gap_ms,
        "estimated_tokens": _tokens_json(cache.tokens),
        "recorded_tokens": _tokens_json(cache.recorded) if cache.recorded is not None else None,
    }


def _tokens_json(tokens: InputTokens) -> dict[str, int]:
    return {"input": tokens.input, "cached": tokens.cached, "uncached": tokens.uncached}

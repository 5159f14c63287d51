"""`toolscope inspect SESSION [--request N] [--route R …] [--json]`: what each route receives.

For every logged model request (or just request N) and every route of the catalog (or the ones
named), the request is projected for the route, rendered as that route's wire body, and compared
with the previous request's body on the same route. The report shows the declarations with their
state and `defer_loading`, the update blocks, the beta header, a fallback reason, whether the
provider's cached prefix is kept (and where it breaks), and the full wire body. `docs/inspect.md`
describes every field.

Bodies are built exactly as the agent builds them (`app.llm.dispatch.build_wire`): `openai-sdk`
routes show the chat-completions body the openai client sends, `offline` routes the deepseek-chat
body the offline model reads.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import textwrap
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from app.config import Config, ConfigError, load_config
from app.i18n import _, ngettext
from app.llm.anthropic.body import WirePlacementError
from app.llm.deepseek.body import WireRequest
from app.llm.dispatch import build_wire
from app.llm.prefix import PrefixResult, prefix_kept
from app.llm.projection import ProjectedRequest, describe_fallback, project_request
from app.llm.routes import Route, RouteCatalog, RouteConfigError, load_catalog
from app.paths import config_file, sessions_dir
from app.session.errors import SessionError, SessionNotFoundError
from app.session.session import Session
from app.session.view import ModelRequest
from app.terminal import printable

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
BODY_INDENT = "    "
TEXT_WIDTH = 100


# --- the command ---------------------------------------------------------------------------------


def run(args: argparse.Namespace, config: Config | None = None) -> int:
    """Exit 0 on success, 1 when the session cannot be read, 2 for a usage or config error."""
    try:
        if config is None:
            config = load_config(config_file(getattr(args, "config", None)))
        catalog = load_catalog(config.routes)
        routes = _chosen_routes(catalog, args.routes)
    except (ConfigError, RouteConfigError) as error:
        return _fail(str(error), EXIT_USAGE)
    try:
        session = Session.open(resolve_session(args.session))
        if args.request is None:
            # Every request is read anyway: validate strictly first, so that a corrupt log is
            # refused before any output. One request costs only what it reads (DESIGN §12).
            session.load()
        requests = session.view().requests
    except SessionError as error:
        return _fail(str(error), EXIT_FAILURE)
    if session.torn is not None:
        _warn(
            _("{path}: the last line is incomplete (left by a crash) and was not read").format(
                path=session.path
            )
        )
    if args.request is not None and not 1 <= args.request <= len(requests):
        return _fail(
            ngettext(
                "request {n} is out of range: the session has {count} request",
                "request {n} is out of range: the session has {count} requests",
                len(requests),
            ).format(n=args.request, count=len(requests)),
            EXIT_USAGE,
        )
    try:
        if args.json:
            write_report_json(sys.stdout, session.id, iter_reports(requests, routes, only=args.request))
        else:
            reports = inspect_requests(requests, routes, only=args.request)
            sys.stdout.write(render_text(session.id, len(requests), reports, color=_colors(sys.stdout)))
    except SessionError as error:
        return _fail(str(error), EXIT_FAILURE)
    return EXIT_OK


def resolve_session(ref: str) -> Path:
    """A session id names `<sessions dir>/<id>.jsonl`; anything else is a path."""
    if SESSION_ID.fullmatch(ref):
        candidate = sessions_dir() / f"{ref}.jsonl"
        if candidate.is_file():
            return candidate
    path = Path(ref).expanduser()
    if path.is_file():
        return path
    raise SessionNotFoundError(ref)


def _chosen_routes(catalog: RouteCatalog, ids: Sequence[str] | None) -> list[Route]:
    if not ids:
        return list(catalog)
    return [catalog.get(route_id) for route_id in dict.fromkeys(ids)]


# --- the report ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RouteReport:
    route: Route
    projected: ProjectedRequest
    wire: WireRequest | None
    """None when the body broke a placement rule (`error` says which): it would never be sent."""
    error: str | None
    prefix: PrefixResult


@dataclass(frozen=True, slots=True)
class RequestReport:
    request: ModelRequest
    routes: tuple[RouteReport, ...]


def inspect_requests(
    requests: Sequence[ModelRequest], routes: Sequence[Route], *, only: int | None = None
) -> list[RequestReport]:
    return list(iter_reports(requests, routes, only=only))


def iter_reports(
    requests: Sequence[ModelRequest], routes: Sequence[Route], *, only: int | None = None
) -> Iterator[RequestReport]:
    """Reports for every request (or request number `only`) on every route, one at a time.

    The prefix of a request is compared with the previous request's body on the same route, so
    that one is rendered too even when only one request is reported.
    """
    first = 0 if only is None else max(only - 2, 0)
    last = len(requests) if only is None else only
    previous: dict[str, WireRequest | None] = {}
    for request in requests[first:last] if only is not None else requests:
        route_reports = []
        for route in routes:
            if route.id in previous:
                report = _route_report(request, route, previous[route.id])
            else:
                report = _route_report(request, route, None, first=True)
            previous[route.id] = report.wire
            route_reports.append(report)
        if only is None or request.index == only:
            yield RequestReport(request, tuple(route_reports))


def _route_report(
    request: ModelRequest, route: Route, previous: WireRequest | None, *, first: bool = False
) -> RouteReport:
    """`previous` is the previous request's body on `route`; None when it could not be built."""
    projected = project_request(request, route)
    config = request.header.config if request.header is not None else {}
    try:
        wire = build_wire(projected, route, config)
    except WirePlacementError as error:
        return RouteReport(route, projected, None, str(error), PrefixResult(False, None))
    if first:
        prefix = PrefixResult(True, None)
    elif previous is None:
        # The previous body was never sendable, so nothing of it was cached.
        prefix = PrefixResult(False, None)
    else:
        prefix = prefix_kept(previous.body, wire.body, route.dialect)
    return RouteReport(route, projected, wire, None, prefix)


def write_report_json(out: TextIO, session_id: str, reports: Iterable[RequestReport]) -> None:
    """The JSON report, written request by request (a long session's never sits whole in memory);
    the same document `json.dumps(…, indent=2)` would give."""
    out.write("{\n  " + json.dumps("session") + ": " + json.dumps(session_id, ensure_ascii=False))
    out.write(',\n  "requests": [')
    separator = "\n"
    for report in reports:
        body = json.dumps(_request_json(report), ensure_ascii=False, indent=2)
        out.write(separator + textwrap.indent(body, "    "))
        separator = ",\n"
    out.write("\n  ]\n}\n" if separator != "\n" else "]\n}\n")


def _request_json(report: RequestReport) -> dict[str, Any]:
    return {
        "index": report.request.index,
        "turn": report.request.turn,
        "step": report.request.step,
        "sent_on": report.request.route,
        "routes": {item.route.id: _route_json(item) for item in report.routes},
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
            for block, position in _blocks(report)
        ],
        "beta": _beta(report),
        "fallback": report.projected.fallback,
        "prefix_kept": report.prefix.kept,
        "first_difference": report.prefix.first_difference,
        "error": report.error,
        "body": report.wire.body if report.wire is not None else None,
    }


def _blocks(report: RouteReport) -> list[tuple[Any, int | None]]:
    """Each block with the index in `messages` of the system message carrying it (None: no body)."""
    indexes = report.wire.group_indexes if report.wire is not None else (None,) * len(
        report.projected.groups
    )
    return [
        (block, index)
        for group, index in zip(report.projected.groups, indexes, strict=True)
        for block in group.blocks
    ]


def _beta(report: RouteReport) -> str | None:
    """The header line as sent (`name: value`): a route may configure the header's name too."""
    if report.wire is None or not report.wire.headers:
        return None
    return ", ".join(f"{name}: {value}" for name, value in report.wire.headers.items())


# --- text ----------------------------------------------------------------------------------------


def render_text(
    session_id: str, total: int, reports: Sequence[RequestReport], *, color: bool
) -> str:
    paint = _Painter(color)
    lines = [
        paint.bold(
            ngettext(
                "Session {id} · {count} request", "Session {id} · {count} requests", total
            ).format(id=session_id, count=total)
        )
    ]
    if total == 0:
        lines.append(_("This session has no model requests yet."))
    for report in reports:
        request = report.request
        lines += [
            "",
            paint.bold(
                "━━ "
                + _("Request {n} · turn {turn}, step {step} · sent on {route}").format(
                    n=request.index, turn=request.turn, step=request.step, route=request.route
                )
            ),
        ]
        for route_report in report.routes:
            lines += ["", *_route_lines(route_report, paint)]
    return "\n".join(lines) + "\n"


def _route_lines(report: RouteReport, paint: _Painter) -> list[str]:
    route = report.route
    labels = {
        "prefix": _("Prefix"),
        "beta": _("Beta header"),
        "fallback": _("Fallback"),
        "error": _("Not sendable"),
        "declarations": _("Declarations"),
        "blocks": _("Blocks"),
        "body": _("Wire body"),
    }
    width = max(_width(label) for label in labels.values()) + 2
    indent = " " * (2 + width)

    def section(key: str, texts: Sequence[str]) -> list[str]:
        """The label on the first line, the other lines under its value; "none" when empty."""
        first, *rest = texts or [_("none")]
        return [("  " + _pad(labels[key], width) + first).rstrip(), *(indent + t for t in rest)]

    about = _("{label} · {dialect} · tool updates: {mode}").format(
        label=route.display_label, dialect=route.dialect, mode=route.tool_update
    )
    if _width(route.id) + 2 + _width(about) <= TEXT_WIDTH:
        lines = [paint.bold(route.id) + "  " + paint.dim(about)]
    else:
        lines = [paint.bold(route.id), "  " + paint.dim(about)]
    if report.error is not None:
        lines += section("error", [paint.red(report.error)])
    elif report.prefix.kept:
        lines += section("prefix", [paint.green(_("kept"))])
    elif report.prefix.first_difference is not None:
        pointer = report.prefix.first_difference
        lines += section("prefix", [paint.red(_("broken at {pointer}").format(pointer=pointer))])
    else:
        lines += section("prefix", [paint.red(_("broken (the previous body was not sendable)"))])
    lines += section("beta", [_beta(report) or _("none")])
    fallback = report.projected.fallback
    explained = (
        textwrap.wrap(describe_fallback(fallback), TEXT_WIDTH - len(indent)) if fallback else []
    )
    lines += section("fallback", [paint.yellow(text) for text in explained])
    lines += section("declarations", _declaration_rows(report))
    lines += section("blocks", _block_rows(report))
    if report.wire is not None:
        lines += section("body", [""])
        body = json.dumps(report.wire.body, ensure_ascii=False, indent=2)
        lines += [paint.dim(BODY_INDENT + printable(line)) for line in body.splitlines()]
    return lines


def _declaration_rows(report: RouteReport) -> list[str]:
    states = {
        "initial": _("initial"),
        "added": _("added"),
        "retained-removed": _("retained after removal"),
        "explicit-deferred": _("deferred at the tool's request"),
    }
    rows = [
        [
            printable(declaration.tool.name),
            states[declaration.state],
            "defer_loading" if declaration.defer_loading else "",
        ]
        for declaration in report.projected.declarations
    ]
    return _columns(rows)


def _block_rows(report: RouteReport) -> list[str]:
    kinds = {
        "tool_addition": _("tool addition"),
        "tool_removal": _("tool removal"),
        "text": _("instructions"),
    }
    rows = []
    for block, position in _blocks(report):
        where = f"/messages/{position}" if position is not None else "-"
        what = json.dumps(block.text, ensure_ascii=False) if block.kind == "text" else block.name
        what = printable(what or "")
        source = _("from developer message seq {seq}").format(seq=block.seq)
        rows.append([where, kinds[block.kind], what, source])
    return _columns(rows)


def _columns(rows: list[list[str]]) -> list[str]:
    if not rows:
        return []
    widths = [max(_width(row[column]) for row in rows) for column in range(len(rows[0]))]
    return ["  ".join(_pad(cell, widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]


def _width(text: str) -> int:
    """Terminal cells: wide (CJK) characters take two, so localized labels still line up."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def _pad(text: str, width: int) -> str:
    return text + " " * (width - _width(text))


class _Painter:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _sgr(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled else text

    def bold(self, text: str) -> str:
        return self._sgr("1", text)

    def dim(self, text: str) -> str:
        return self._sgr("2", text)

    def red(self, text: str) -> str:
        return self._sgr("31", text)

    def green(self, text: str) -> str:
        return self._sgr("32", text)

    def yellow(self, text: str) -> str:
        return self._sgr("33", text)


def _colors(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set or TERM is dumb."""
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _fail(message: str, code: int) -> int:
    print(_("toolscope: error: {message}").format(message=message), file=sys.stderr)
    return code


def _warn(message: str) -> None:
    print(_("toolscope: warning: {message}").format(message=message), file=sys.stderr)

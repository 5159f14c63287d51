"""Tools from an MCP server (`[mcp.servers.NAME]`), run over stdio or reached over Streamable
HTTP, through the `mcp` SDK.

Transports: a `command` is spawned and spoken to over its stdin/stdout; a `url` is a Streamable
HTTP endpoint, with the table's `headers` and, from `bearer_token_env`, `Authorization: Bearer`
(the token is read at each connect and is a secret: every problem text is redacted of it).

Revisions: `Client(mode="auto")` on both transports: `server/discover` first (2026-07-28), the
`initialize` handshake (2025-11-25) for a server that does not know it. Tool changes are heard
through `subscriptions/listen` on a 2026-07-28 session and through
`notifications/tools/list_changed` on a legacy one; a change re-lists with the SDK's cache
bypassed, the first listing honours the server's ttl hints. The negotiated revision and the
transport are in `status()`.

Life of a server:

- `start()` spawns the command (or connects to the URL), negotiates the revision, opens the
  listen stream (2026-07-28; before listing, so no change is missed in between) and runs
  `tools/list` (all pages); the tools join the registry as `<server>__<tool>` (see
  `mcp_tool_name`) and are kept as its last-seen list (`app.tools.seen_tools`). It returns after
  this first attempt,
  whether it worked or not; a failure is reported as a `SourceProblem` and everything else goes
  on without the server.
- A tool change → a re-list. Over stdio the change is counted the moment it arrives, before the
  tool call it came with returns, so `settle()` waits for the re-list it triggered. Over HTTP
  the change comes on a stream of its own (the listen stream, or the legacy GET stream), a
  connection apart from the call's, so it may arrive after the result: `settle()` after a call
  there re-lists once itself.
- A call goes through `tools/call` with a timeout; text content is joined, other content
  described, `isError` becomes a `TOOL_FAILED` outcome.
- The server exits (its stream ends, or its listen stream is lost) → its tools are removed at
  once. A connection refused, a 401/403 or a timeout is the server's problem, in words (never a
  traceback). With `restart = true` it is started again (or reconnected) after `RestartPolicy.delay(n)` (exponential: 1, 2, 4 … s, at most 30 s), at most
  `max_attempts` times in a row; a server that stayed up for `stable_after` seconds starts a
  fresh count. Without `restart` it stays stopped.
- `stop()` ends the process (stdin closed, then SIGTERM/SIGKILL to its process group, all
  bounded — the SDK's shutdown) and removes the tools.

The server's stderr goes to a temporary file (never into the terminal UI); its last lines are
quoted in the problem reported when it fails.

The supervisor of each server is an asyncio task, so `start()` and `stop()` may be called from
different tasks (the UI's); toolscope runs on asyncio.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2
import mcp_types as types
from anyio.abc import ObjectReceiveStream, TaskStatus
from mcp import Client, MCPError
from mcp.client.caching import CacheMode
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.shared.message import SessionMessage

from app import __version__
from app.redaction import redact
from app.tools.seen_tools import SeenTools, SeenToolsStore, server_identity
from app.tools.source_state import ProblemKind, ServerState, ServerStatus, SourceProblem
from app.tools.tool import Tool, ToolContext, ToolErrorCode, ToolFailure

logger = logging.getLogger(__name__)

TOOLS_CHANGED = "notifications/tools/list_changed"
STDIO = "stdio"
HTTP = "http"
MAX_LIST_PAGES = 100
STDERR_TAIL_BYTES = 2048
STDERR_TAIL_LINES = 5


@dataclass(frozen=True)
class McpServerSpec:
    """One `[mcp.servers.NAME]` entry: a `command` run over stdio, or a Streamable HTTP `url`."""

    name: str
    command: str = ""
    args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    restart: bool = False
    cwd: Path | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    bearer_token_env: str = ""
    """The variable holding the bearer token, read at each connect (never the token itself)."""

    @property
    def transport(self) -> str:
        return HTTP if self.url else STDIO

    @property
    def target(self) -> str:
        """What a problem names: the command, or the URL without any user:password part."""
        return _without_userinfo(self.url) if self.url else self.command

    @property
    def identity(self) -> str:
        """What the last-seen tools are kept under: a digest of what reaches the server."""
        if self.url:
            return server_identity(HTTP, self.url)
        return server_identity(STDIO, self.command, self.args, self.cwd or "")


@dataclass(frozen=True)
class McpTimeouts:
    """Seconds to wait for an answer: `request` for initialize and tools/list, `call` for tools."""

    request: float = 30.0
    call: float = 120.0


@dataclass(frozen=True)
class RestartPolicy:
    max_attempts: int = 5
    initial_delay: float = 1.0
    max_delay: float = 30.0
    stable_after: float = 60.0

    def delay(self, attempt: int) -> float:
        """Seconds before restart `attempt` (1-based): doubling from `initial_delay`, capped."""
        return min(self.initial_delay * 2 ** (attempt - 1), self.max_delay)


_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_KEPT = 55
"""Characters of a sanitised or long name kept before its digest."""


def mcp_tool_name(server: str, tool: str) -> str:
    """The registry name of `tool` from `server`: `<server>__<tool>`, always.

    Characters outside `[a-zA-Z0-9_-]` become `_`. When that changed anything, or the name is
    longer than 64 characters, it is shortened as needed and ends with `_` + 8 hex digits of the
    SHA-256 of the original `<server>__<tool>`, so sanitised names cannot collide and the result
    depends on nothing but the two names.
    """
    original = f"{server}__{tool}"
    cleaned = _UNSAFE.sub("_", original)
    if cleaned == original and len(cleaned) <= 64:
        return cleaned
    digest = hashlib.sha256(original.encode("utf-8")).hexdigest()[:8]
    return f"{cleaned[:_KEPT]}_{digest}"


def mcp_tool_prefix(server: str) -> str:
    """What every `mcp_tool_name(server, …)` starts with, whatever the tool: so a logged tool name
    tells which server it came from without the server running."""
    return (_UNSAFE.sub("_", server) + "__")[:_KEPT]


class McpServerSource:
    """One MCP server as a registry source (`app.tools.source_state.ManagedSource`)."""

    def __init__(
        self,
        spec: McpServerSpec,
        *,
        timeouts: McpTimeouts = McpTimeouts(),
        restart_policy: RestartPolicy = RestartPolicy(),
        seen: SeenToolsStore | None = None,
    ) -> None:
        """`seen`: where each listing is kept for `last_seen()` (none: nothing is kept)."""
        self.spec = spec
        self._seen = seen
        self.timeouts = timeouts
        self.restart_policy = restart_policy
        self._tools: tuple[Tool, ...] = ()
        self._state = ServerState.STOPPED
        self._client: Client | None = None
        self._revision = ""
        self._token = ""
        self._refused_status = 0
        self._lost = anyio.Event()
        # A call over HTTP: a change it announced travels on a connection of its own, so it may
        # arrive after the result; settle() re-lists once.
        self._unconfirmed_call = False
        self._on_tools_changed: Callable[[], None] = lambda: None
        self._on_problem: Callable[[SourceProblem], None] = lambda problem: None
        self._supervisor: asyncio.Task[None] | None = None
        self._cancel_scope: anyio.CancelScope | None = None
        # Re-list bookkeeping: a notification bumps `requested`; a finished re-list that began
        # after it sets `done`. Events are made on first use, inside the event loop.
        self._relists_requested = 0
        self._relists_done = 0
        self._relist_wanted: anyio.Event | None = None
        self._relist_progress: anyio.Event | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def tool_prefix(self) -> str:
        return mcp_tool_prefix(self.spec.name)

    def tools(self) -> tuple[Tool, ...]:
        return self._tools

    def status(self) -> ServerStatus:
        return ServerStatus(
            self.name,
            self._state,
            tuple(tool.name for tool in self._tools),
            transport=self.spec.transport,
            revision=self._revision,
        )

    def last_seen(self) -> SeenTools | None:
        if self._seen is None:
            return None
        return self._seen.last_seen(self.name, self.spec.identity, self.tool_prefix)

    def bind(
        self, on_tools_changed: Callable[[], None], on_problem: Callable[[SourceProblem], None]
    ) -> None:
        self._on_tools_changed = on_tools_changed
        self._on_problem = on_problem

    async def start(self) -> None:
        """Start the server unless it is already running or restarting; see the module doc."""
        if self._supervisor is not None and not self._supervisor.done():
            return
        first_attempt = anyio.Event()
        self._cancel_scope = anyio.CancelScope()
        self._state = ServerState.STARTING
        self._supervisor = asyncio.create_task(
            self._supervise(first_attempt), name=f"mcp-server:{self.name}"
        )
        await first_attempt.wait()

    async def stop(self) -> None:
        """Stop the server (and any pending restart); returns once its process is gone."""
        supervisor = self._supervisor
        if supervisor is None or self._cancel_scope is None:
            return
        self._supervisor = None
        if supervisor.done():
            return  # it already gave up or exited; keep that state for the user to see
        self._cancel_scope.cancel()
        with anyio.CancelScope(shield=True):
            await asyncio.wait({supervisor})
        self._state = ServerState.STOPPED

    async def settle(self) -> None:
        """Wait until every tool change received so far has been re-listed (and, after a call
        over HTTP, until a re-list done after that call)."""
        if self._unconfirmed_call and self._relist_wanted is not None:
            self._unconfirmed_call = False
            self._request_relist()
        target = self._relists_requested
        while self._relists_done < target and self._relist_progress is not None:
            await self._relist_progress.wait()

    # --- supervision

    async def _supervise(self, first_attempt: anyio.Event) -> None:
        policy = self.restart_policy
        attempt = 0
        assert self._cancel_scope is not None
        try:
            with self._cancel_scope:
                while True:
                    self._state = ServerState.STARTING
                    uptime = await self._connect_and_serve(first_attempt.set)
                    first_attempt.set()
                    if not self.spec.restart:
                        self._state = ServerState.STOPPED if uptime is not None else ServerState.FAILED
                        return
                    if uptime is not None and uptime >= policy.stable_after:
                        attempt = 0
                    attempt += 1
                    if attempt > policy.max_attempts:
                        self._state = ServerState.FAILED
                        self._report(ProblemKind.MCP_GAVE_UP, max_attempts=policy.max_attempts)
                        return
                    delay = policy.delay(attempt)
                    self._state = ServerState.RESTARTING
                    self._report(
                        ProblemKind.MCP_RESTARTING,
                        attempt=attempt,
                        max_attempts=policy.max_attempts,
                        delay=delay,
                    )
                    await anyio.sleep(delay)
        except Exception:
            logger.exception("supervising MCP server %s failed", self.name)
            self._state = ServerState.FAILED
        finally:
            first_attempt.set()

    async def _connect_and_serve(self, on_listed: Callable[[], None]) -> float | None:
        """One life of the server process: None if it never listed its tools, else its uptime.

        Returns when the server has gone; a stop() cancels it instead.
        """
        lost = self._lost = anyio.Event()
        self._relist_wanted = anyio.Event()
        self._relist_progress = anyio.Event()
        self._relists_done = self._relists_requested
        listed_at: float | None = None
        with tempfile.TemporaryFile() as errlog:
            try:
                transport = self._transport(errlog, partial(self._connection_lost, lost))
                async with Client(
                    transport,
                    mode="auto",
                    read_timeout_seconds=self.timeouts.request,
                    client_info=types.Implementation(name="toolscope", version=__version__),
                ) as client:
                    self._revision = client.protocol_version
                    async with anyio.create_task_group() as group:
                        # Listening before listing: a change made meanwhile is heard, not lost.
                        await group.start(self._listen, client, lost)
                        listing = await self._list_tools(client, "use")
                        if not lost.is_set():
                            self._client = client
                            listed_at = anyio.current_time()
                            self._state = ServerState.RUNNING
                            self._set_tools(listing)
                            on_listed()
                            group.start_soon(self._relist_loop, client, lost)
                            group.start_soon(self._remember, listing)
                            await lost.wait()
                        group.cancel_scope.cancel()
            except Exception as exc:
                if listed_at is None:
                    reason = self._redacted(self._reason(exc))
                    self._report(ProblemKind.MCP_START_FAILED, detail=_with_stderr(reason, errlog))
                    return None
                logger.debug("MCP server %s connection ended with an error", self.name, exc_info=True)
            finally:
                self._connection_lost(lost)
            if listed_at is None:
                self._report(ProblemKind.MCP_START_FAILED, detail=_with_stderr("", errlog))
                return None
            self._report(ProblemKind.MCP_EXITED, detail=_with_stderr("", errlog))
            return anyio.current_time() - listed_at

    def _transport(self, errlog: IO[bytes], on_end: Callable[[], None]) -> Any:
        watch = partial(_WatchedStream, on_end=on_end, on_tools_changed=self._request_relist)
        if self.spec.transport == STDIO:
            return _stdio_watched(self._parameters(), errlog, watch)
        headers = dict(self.spec.headers)
        self._token = ""
        if self.spec.bearer_token_env:
            self._token = os.environ.get(self.spec.bearer_token_env, "")
            if not self._token:
                raise _MissingToken(self.spec.bearer_token_env)
            headers["Authorization"] = f"Bearer {self._token}"
        self._refused_status = 0
        return _http_watched(self.spec.url, headers, self.timeouts.request, watch, self._on_response)

    async def _on_response(self, response: httpx2.Response) -> None:
        # The SDK turns a refused request into a bare "error response"; the status says why.
        if response.status_code in (401, 403):
            self._refused_status = response.status_code

    async def _listen(
        self, client: Client, lost: anyio.Event, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Keep a `subscriptions/listen` stream for tool changes open on a 2026-07-28 session; its
        end means the server is gone. Started once the server acknowledged it (or has none).
        Its events are counted as they are read (`_WatchedStream`), so they are only drained here.
        A legacy session (`ListenNotSupportedError`) sends the notification without it; a server
        refusing it keeps running, unheard."""
        started = False
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                started = True
                task_status.started()
                async for _event in subscription:
                    pass
        except (ListenNotSupportedError, MCPError):
            logger.debug("MCP server %s: no subscriptions/listen", self.name, exc_info=True)
            if not started:
                task_status.started()
                return
        except Exception:
            logger.debug("MCP server %s: the listen stream failed", self.name, exc_info=True)
        self._connection_lost(lost)
        if not started:
            task_status.started()

    def _connection_lost(self, lost: anyio.Event) -> None:
        """The server's stdout ended (it exited, or we are stopping it): drop its tools now,
        before any pending call learns of it, and release everyone waiting in settle()."""
        if lost.is_set():
            return
        lost.set()
        self._client = None
        self._revision = ""
        self._state = ServerState.RESTARTING if self.spec.restart else ServerState.STOPPED
        self._set_tools(())
        self._relists_done = self._relists_requested
        self._signal_relist_progress()

    def _parameters(self) -> StdioServerParameters:
        return StdioServerParameters(
            command=self.spec.command,
            args=list(self.spec.args),
            env=dict(self.spec.env) or None,
            cwd=self.spec.cwd,
        )

    # --- the tool list

    def _request_relist(self) -> None:
        """A tool change was read: counted at once, so settle() waits for the re-list."""
        if self._relist_wanted is not None:
            self._relists_requested += 1
            self._relist_wanted.set()

    async def _relist_loop(self, client: Client, lost: anyio.Event) -> None:
        while True:
            assert self._relist_wanted is not None
            await self._relist_wanted.wait()
            self._relist_wanted = anyio.Event()
            target = self._relists_requested
            try:
                listing = await self._list_tools(client, "bypass")
            except Exception as exc:
                if lost.is_set():
                    return
                detail = self._redacted(self._reason(exc))
                self._report(ProblemKind.MCP_LIST_FAILED, detail=detail)
            else:
                if lost.is_set():
                    return
                self._set_tools(listing)
                await self._remember(listing)
            self._relists_done = max(self._relists_done, target)
            self._signal_relist_progress()

    def _signal_relist_progress(self) -> None:
        if self._relist_progress is not None:
            self._relist_progress.set()
            self._relist_progress = anyio.Event()

    async def _list_tools(self, client: Client, cache_mode: CacheMode) -> list[Tool]:
        """All pages; `cache_mode` "use" honours the server's ttl hints, "bypass" after a change."""
        listed: list[types.Tool] = []
        cursor: str | None = None
        for _page in range(MAX_LIST_PAGES):
            page = await client.list_tools(cursor=cursor, cache_mode=cache_mode)
            listed.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        # The same set of tools always declares in the same order, whatever order the server lists
        # them in: a reordered declaration would break every route's prompt-cache prefix, so a
        # reorder alone is no tool change (docs/tools.md).
        return [self._as_tool(tool) for tool in sorted(listed, key=lambda tool: tool.name)]

    def _as_tool(self, listed: types.Tool) -> Tool:
        return Tool(
            mcp_tool_name(self.name, listed.name),
            listed.description or "",
            listed.input_schema,
            partial(self._call, listed.name),
            read_only=bool(listed.annotations and listed.annotations.read_only_hint),
        )

    def _set_tools(self, tools: Sequence[Tool]) -> None:
        self._tools = tuple(tools)
        self._on_tools_changed()

    async def _remember(self, listing: Sequence[Tool]) -> None:
        if self._seen is not None:
            definitions = [tool.definition for tool in listing]
            seen_at = datetime.now(UTC)
            await anyio.to_thread.run_sync(self._seen.remember, self.name, self.spec.identity, definitions, seen_at)

    def _report(self, kind: ProblemKind, **details: Any) -> None:
        self._on_problem(SourceProblem(kind, self.name, **details))

    def _reason(self, exc: BaseException) -> str:
        if self._refused_status:
            return f"the server refused the credentials (HTTP {self._refused_status}): {self.spec.target}"
        return _describe(exc, self.spec.target)

    def _redacted(self, text: str) -> str:
        """`text` without any run of the bearer token, whatever library wrote it and however it is
        split (a guard, docs/security.md; a token too short to be a secret changes nothing)."""
        return redact(text, self._token) if self._token else text

    # --- calls

    async def _call(self, tool_name: str, arguments: dict[str, Any], context: ToolContext) -> str:
        client = self._client
        if client is None:
            raise ToolFailure(ToolErrorCode.TOOL_FAILED, f"MCP server {self.name!r} is not running")
        try:
            result = await client.call_tool(
                tool_name, arguments, read_timeout_seconds=self.timeouts.call
            )
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                # Over legacy HTTP nothing else tells that the server went away.
                self._connection_lost(self._lost)
            if exc.code == types.REQUEST_TIMEOUT:
                raise ToolFailure(
                    ToolErrorCode.TOOL_TIMEOUT,
                    f"MCP server {self.name!r} did not answer within {self.timeouts.call:g} s",
                ) from None
            raise ToolFailure(
                ToolErrorCode.TOOL_FAILED, f"MCP server {self.name!r}: {exc.message}"
            ) from None
        finally:
            if self.spec.transport == HTTP:
                self._unconfirmed_call = True
        text = render_result(result)
        if result.is_error:
            first_line = text.strip().splitlines()[0] if text.strip() else "the tool reported an error"
            raise ToolFailure(ToolErrorCode.TOOL_FAILED, first_line[:200], text)
        return text


def render_result(result: types.CallToolResult) -> str:
    """A tool result as text: text blocks as they are, anything else described in brackets."""
    parts: list[str] = []
    for block in result.content:
        match block:
            case types.TextContent(text=text):
                parts.append(text)
            case types.ImageContent(mime_type=mime, data=data):
                parts.append(f"[image: {mime}, {_decoded_size(data)} bytes]")
            case types.AudioContent(mime_type=mime, data=data):
                parts.append(f"[audio: {mime}, {_decoded_size(data)} bytes]")
            case types.ResourceLink(uri=uri, name=name):
                parts.append(f"[resource link: {name} <{uri}>]")
            case types.EmbeddedResource(resource=types.TextResourceContents(text=text)):
                parts.append(text)
            case types.EmbeddedResource(resource=resource):
                parts.append(f"[resource: {resource.uri}, {resource.mime_type or 'binary'}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def _decoded_size(base64_data: str) -> int:
    padding = len(base64_data) - len(base64_data.rstrip("="))
    return len(base64_data) * 3 // 4 - padding


class _WatchedStream(ObjectReceiveStream[Any]):
    """The server's message stream, calling `on_end` the moment it ends (the server exited) and
    `on_tools_changed` the moment a tool change is read, on either revision (a 2026-07-28 listen
    event is the same notification, stamped with its subscription). Read in order, a change the
    server sent before a call's result is counted before the SDK even reads that result."""

    def __init__(
        self, inner: ObjectReceiveStream[Any], *, on_end: Callable[[], None], on_tools_changed: Callable[[], None]
    ) -> None:
        self._inner = inner
        self._on_end = on_end
        self._on_tools_changed = on_tools_changed

    async def receive(self) -> Any:
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise
        if (
            isinstance(item, SessionMessage)
            and isinstance(item.message, types.JSONRPCNotification)
            and item.message.method == TOOLS_CHANGED
        ):
            self._on_tools_changed()
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()


@asynccontextmanager
async def _stdio_watched(
    parameters: StdioServerParameters, errlog: IO[bytes], watch: Callable[[Any], _WatchedStream]
) -> AsyncIterator[tuple[Any, Any]]:
    # stdio_client declares a text `errlog`, but only hands it to the process as its stderr.
    server = stdio_client(parameters, errlog=errlog)  # type: ignore[arg-type]
    async with server as (read_stream, write_stream):
        yield watch(read_stream), write_stream


class _MissingToken(Exception):
    def __init__(self, variable: str) -> None:
        super().__init__(f"the bearer token variable {variable} is not set")


def _without_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


@asynccontextmanager
async def _http_watched(
    url: str,
    headers: Mapping[str, str],
    timeout: float,
    watch: Callable[[Any], _WatchedStream],
    on_response: Callable[[httpx2.Response], Awaitable[None]],
) -> AsyncIterator[tuple[Any, Any]]:
    http = httpx2.AsyncClient(
        headers=dict(headers),
        timeout=httpx2.Timeout(timeout, read=None),
        event_hooks={"response": [on_response]},
    )
    async with http, streamable_http_client(url, http_client=http) as (read_stream, write_stream):
        yield watch(read_stream), write_stream


def _describe(exc: BaseException, target: str) -> str:
    """A one-line reason from the innermost exception (the SDK wraps them in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    match exc:
        case _MissingToken():
            return str(exc)
        case httpx2.HTTPStatusError(response=response):
            return f"HTTP {response.status_code}: {target}"
        case httpx2.TimeoutException():
            return f"the server did not answer in time: {target}"
        case httpx2.ConnectError():
            return f"cannot connect: {target}"
        case httpx2.HTTPError():
            return f"{type(exc).__name__}: {target}"
        case FileNotFoundError():
            return f"command not found: {target}"
        case OSError(strerror=strerror) if strerror:
            return f"{strerror}: {target}"
        case MCPError(code=types.REQUEST_TIMEOUT):
            return "the server did not answer in time"
        case MCPError(code=types.CONNECTION_CLOSED):
            return "the server closed the connection"
        case MCPError(message=message):
            return message
    return f"{type(exc).__name__}: {exc}"


def _with_stderr(reason: str, errlog: IO[bytes]) -> str:
    errlog.seek(0, 2)
    size = errlog.tell()
    errlog.seek(max(0, size - STDERR_TAIL_BYTES))
    text = errlog.read().decode("utf-8", errors="replace")
    lines = [line for line in text.splitlines() if line.strip()]
    tail = "\n".join(lines[-STDERR_TAIL_LINES:])
    if not tail:
        return reason
    return f"{reason}\nstderr: {tail}" if reason else f"stderr: {tail}"

"""A real MCP stdio server (the `mcp` SDK's MCPServer) for the MCP source tests.

Run it with `sys.executable`. Its tools:

- `echo(text)` — read-only (annotated); returns the text.
- `pid()` — the server's process id, so a test can check the process is gone after shutdown.
- `fail()` — raises a `ToolError`, so the result comes back with `isError` and the message.
- `picture()` — a text block and an image block.
- `files.read()` — a name that needs sanitising on the client side.
- `slow(seconds)` — sleeps, for call timeouts.
- `swap_tools()` — during the call: adds `late`, removes `echo` and sends
  `notifications/tools/list_changed`. Every `tools/list` after that answers only after
  `--relist-delay` seconds, so the client's re-list is still in flight when the call returns.
- `crash()` — the process exits in the middle of the call.

With `--reorder`, every `tools/list` answers with the tools rotated one further than the last, and
one more tool is served: `announce()` announces a tool change and changes nothing.
A change is announced both ways: `notifications/tools/list_changed` (legacy sessions) and the
`subscriptions/listen` event (2026-07-28 sessions).

With `--no-listen`, a 2026-07-28 session has no `subscriptions/listen` ("method not found").
With `--legacy`, `server/discover` advertises no 2026 revision, so clients fall back to `initialize`.
With `--http`, the server speaks Streamable HTTP at `http://127.0.0.1:PORT/mcp` (uvicorn, a free
port, printed as the first line of stdout); with `--token T` every request without
`Authorization: Bearer T` is answered 401; with `--quote-accepted-token` as well, every request is
`tools/list` is refused with a JSON-RPC error quoting the right token split across lines.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys

import anyio
import uvicorn
from mcp.server import runner
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import ToolAnnotations

# A 1x1 PNG.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


class ToolsServer(MCPServer):
    def __init__(self, relist_delay: float, reorder: bool) -> None:
        # Quiet logging: the SDK's rich log output of a failing tool is slow to set up.
        super().__init__("tools-server", log_level="CRITICAL")
        self.relist_delay = relist_delay
        self.reorder = reorder
        self.lists = 0
        self.swapped = False

    async def list_tools(self):  # type: ignore[override]
        if self.swapped:
            await anyio.sleep(self.relist_delay)
        tools = await super().list_tools()
        if self.reorder:
            self.lists += 1
            turn = self.lists % len(tools)
            tools = tools[turn:] + tools[:turn]
        return tools


def build(relist_delay: float, reorder: bool = False) -> ToolsServer:
    server = ToolsServer(relist_delay, reorder)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool()
    def fail() -> str:
        """Always fails."""
        raise ToolError("the disk is on fire")

    @server.tool()
    def picture() -> list:
        """A caption and a tiny image."""
        return ["a picture:", Image(data=PIXEL, format="png")]

    @server.tool(name="files.read")
    def files_read() -> str:
        """A tool whose name has a dot."""
        return "read"

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep, then answer."""
        await anyio.sleep(seconds)
        return "done"

    def late(n: int) -> int:
        """Appears after swap_tools; doubles n."""
        return n * 2

    @server.tool()
    async def swap_tools(ctx: Context) -> str:
        """Add `late`, remove `echo`, and announce the change during this call."""
        server.add_tool(late)
        server.remove_tool("echo")
        server.swapped = True
        await announce_change(ctx)
        return "swapped"

    @server.tool()
    def crash() -> str:
        """Exit the process without answering."""
        os._exit(3)

    if reorder:

        @server.tool()
        async def announce(ctx: Context) -> str:
            """Announce a tool change that changes nothing."""
            await announce_change(ctx)
            return "announced"

    return server


async def announce_change(ctx: Context) -> None:
    await ctx.notify_tools_changed()
    await ctx.session.send_tool_list_changed()


def speak_legacy_only(server: MCPServer) -> None:
    """Like a server from before 2026: `server/discover` is an unknown method, and (over stdio) a
    request carrying the 2026 envelope does not open a 2026 connection. The SDK has no switch for
    this, so its private era test is replaced."""
    del server._lowlevel_server._request_handlers["server/discover"]
    runner._has_modern_envelope = lambda params: False


def requiring_token(app, token: str, *, quote_accepted: bool = False):  # noqa: ANN001, ANN201
    """An ASGI app answering 401 to any HTTP request without `Authorization: Bearer <token>`; the
    answer is a JSON-RPC error quoting the header it got, as a careless server might. With
    `quote_accepted`, `tools/list` with the right token is answered with a JSON-RPC error quoting
    it cut in pieces of 6 across lines (so no whole run of it is in the text)."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope, receive, send) -> None:  # noqa: ANN001
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        got = dict(scope["headers"]).get(b"authorization", b"")
        messages, request = [], b""
        while (message := await receive())["type"] == "http.request":
            messages.append(message)
            request += message.get("body", b"")
            if not message.get("more_body"):
                break
        try:
            parsed = json.loads(request)
            request_id, method = parsed.get("id"), parsed.get("method")
        except (ValueError, AttributeError):
            request_id = method = None
        if got != expected:
            await refuse(send, 401, -32001, request_id, got.decode("latin-1"))
        elif quote_accepted and method == "tools/list":
            quoted = got.decode("latin-1")
            await refuse(send, 200, -32603, request_id, "\n".join(quoted[at : at + 6] for at in range(0, len(quoted), 6)))
        else:
            replay = iter(messages)

            async def replayed():  # noqa: ANN202
                return next(replay, None) or await receive()

            await app(scope, replayed, send)

    return guarded


async def refuse(send, status: int, code: int, request_id, quoted: str) -> None:  # noqa: ANN001
    error = {"code": code, "message": f"unauthorized: {quoted}"}
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def serve_http(server: MCPServer, token: str | None, *, quote_accepted: bool = False) -> None:
    app = server.streamable_http_app()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)  # before the port is told: a client connecting early waits in the backlog
    print(listener.getsockname()[1], flush=True)
    config = uvicorn.Config(requiring_token(app, token, quote_accepted=quote_accepted) if token else app, log_level="critical", lifespan="on")
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--relist-delay", type=float, default=0.0)
    parser.add_argument("--reorder", action="store_true")
    parser.add_argument("--legacy", action="store_true")
    parser.add_argument("--no-listen", action="store_true")
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--token")
    parser.add_argument("--quote-accepted-token", action="store_true")
    options = parser.parse_args()
    built = build(options.relist_delay, options.reorder)
    if options.legacy:
        speak_legacy_only(built)
    if options.no_listen:
        del built._lowlevel_server._request_handlers["subscriptions/listen"]
    if options.http:
        serve_http(built, options.token, quote_accepted=options.quote_accepted_token)
        sys.exit(0)
    built.run()

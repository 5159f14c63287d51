"""The MCP server `bench_mcp_change.py` measures against (the `mcp` SDK's MCPServer).

`toggle()` adds the tool `extra` when it is missing and removes it when it is there, then announces
the change (the `subscriptions/listen` event on 2026-07-28, the notification on a legacy session)
and returns `time.monotonic()` read just before announcing: the moment the change left the server,
on the clock every process of the machine shares. `--http` serves Streamable HTTP on a free
loopback port (uvicorn), printed as the first line of stdout.
"""

from __future__ import annotations

import argparse
import socket
import time

import uvicorn
from mcp.server.mcpserver import Context, MCPServer


def build() -> MCPServer:
    server = MCPServer("bench-toggle", log_level="CRITICAL")

    def extra() -> str:
        """A tool that comes and goes."""
        return "extra"

    @server.tool()
    async def toggle(ctx: Context) -> str:
        """Add or remove `extra`, announce it, and say when."""
        if any(tool.name == "extra" for tool in await server.list_tools()):
            server.remove_tool("extra")
        else:
            server.add_tool(extra)
        sent = time.monotonic()
        await ctx.notify_tools_changed()
        await ctx.session.send_tool_list_changed()
        return repr(sent)

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    options = parser.parse_args()
    built = build()
    if options.http:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        print(listener.getsockname()[1], flush=True)
        config = uvicorn.Config(built.streamable_http_app(), log_level="critical", lifespan="on")
        uvicorn.Server(config).run(sockets=[listener])
    else:
        built.run()

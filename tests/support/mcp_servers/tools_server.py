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
one more tool is served: `announce()` sends `notifications/tools/list_changed` and changes nothing.
"""

from __future__ import annotations

import argparse
import os

import anyio
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
        await ctx.session.send_tool_list_changed()
        return "swapped"

    @server.tool()
    def crash() -> str:
        """Exit the process without answering."""
        os._exit(3)

    if reorder:

        @server.tool()
        async def announce(ctx: Context) -> str:
            """Announce a tool change that changes nothing."""
            await ctx.session.send_tool_list_changed()
            return "announced"

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--relist-delay", type=float, default=0.0)
    parser.add_argument("--reorder", action="store_true")
    options = parser.parse_args()
    build(options.relist_delay, options.reorder).run()

"""The MCP tools server (`mcp_servers/tools_server.py`) over Streamable HTTP, as a subprocess:
uvicorn on a free loopback port, every request without the bearer token answered 401."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TOOLS_SERVER = Path(__file__).resolve().parent / "mcp_servers" / "tools_server.py"


@contextmanager
def http_tools_server(token: str, *args: str) -> Iterator[str]:
    """The server's URL while it runs; `args` go to tools_server.py (`--legacy`, `--relist-delay`)."""
    command = [sys.executable, str(TOOLS_SERVER), "--http", "--token", token, *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)

"""A scripted HTTP/1.1 server on 127.0.0.1 for the adapter tests: real sockets, exact bytes.

Each accepted connection takes the next `Reply`: a status line, headers, then the body pieces sent
as separate chunked-encoding chunks (so the client reads them as they come, split wherever a piece
ends: mid-line, mid-UTF-8 character), then `close` (the final chunk), `reset` (an RST, nothing
more) or `stall` (silence until the client hangs up). Everything is bounded: at most one connection
per reply, every handler and every stall cut off after a few seconds, and `__aexit__` cancels
whatever is still running.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Literal

HANDLER_LIMIT = 5.0
STALL_LIMIT = 3.0


@dataclass
class Reply:
    status: int = 200
    pieces: list[bytes] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "text/event-stream; charset=utf-8"})
    delay: float = 0.0
    """Seconds between pieces (a short pause makes each piece its own read)."""
    then: Literal["close", "reset", "stall"] = "close"


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class SSEServer:
    def __init__(self, *replies: Reply) -> None:
        self._replies = list(replies)
        self.received: list[Received] = []
        self.disconnected = asyncio.Event()
        """Set when a client hung up on a stalled reply."""
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def __aenter__(self) -> SSEServer:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await asyncio.wait_for(self._server.wait_closed(), HANDLER_LIMIT)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            if self._replies:
                await asyncio.wait_for(self._serve(self._replies.pop(0), reader, writer), HANDLER_LIMIT)
        except (asyncio.TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            # A client that timed out, reset or was killed mid-request: nothing left to serve.
            pass
        finally:
            self._handlers.discard(task)
            if not writer.transport.is_closing():
                writer.close()

    async def _serve(self, reply: Reply, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        method, path, _version = head[0].split(" ", 2)
        headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in head[1:] if line)}
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.received.append(Received(method, path, headers, body))

        phrase = HTTPStatus(reply.status).phrase if reply.status in HTTPStatus._value2member_map_ else "Unknown"
        status_line = f"HTTP/1.1 {reply.status} {phrase}\r\n"
        fields = {**reply.headers, "transfer-encoding": "chunked", "connection": "close"}
        writer.write((status_line + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n").encode("latin-1"))
        await writer.drain()
        for piece in reply.pieces:
            if reply.delay:
                await asyncio.sleep(reply.delay)
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()

        if reply.then == "close":
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        elif reply.then == "reset":
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        else:
            # Silence: wait for the client to hang up (EOF), within STALL_LIMIT.
            try:
                await asyncio.wait_for(reader.read(), STALL_LIMIT)
            except ConnectionError:
                pass
            except asyncio.TimeoutError:
                return
            self.disconnected.set()


def split_every(data: bytes, sizes: list[int]) -> list[bytes]:
    """`data` cut into pieces of the given sizes, cycling through them."""
    pieces, position, turn = [], 0, 0
    while position < len(data):
        size = sizes[turn % len(sizes)]
        pieces.append(data[position : position + size])
        position += size
        turn += 1
    return pieces


def split_at(data: bytes, offsets: list[int]) -> list[bytes]:
    bounds = [0, *sorted(offsets), len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


async def unused_port() -> int:
    """A port nothing listens on (bound, then released)."""
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    return port

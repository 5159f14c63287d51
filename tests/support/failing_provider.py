"""A provider on a loopback socket that answers every request with the same HTTP error, for the
error and retry nodes of the chat's pictures and the trajectory's test session."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def failing_provider(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> Iterator[str]:
    """Serve `status` with an OpenAI-style error body (`message`, `kind`) and `headers`; yields
    the base URL."""
    body = json.dumps({"error": {"message": message, "type": kind}}).encode()

    class Failing(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the http.server name)
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(status)
            self.send_header("content-type", "application/json")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()

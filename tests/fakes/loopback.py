"""A threading HTTP server on a free loopback port, served in a daemon thread while in use: what the
scripted AWS fakes (fake_titan.py, fake_s3.py) stand on."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class LoopbackServer(http.server.ThreadingHTTPServer):
    def __init__(self, handler: type[http.server.BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def serving[Server: LoopbackServer](server: Server) -> Iterator[Server]:
    """The server, answering in a thread of its own until the block ends."""
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()

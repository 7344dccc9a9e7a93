"""A scripted Bedrock Runtime on loopback: each InvokeModel gets the next (status, error type, body) of
the server's `script`, or Titan v2's answer of `vector` when the script is empty, `delay` seconds after
the request; the server keeps what it received (path, lower-cased headers, body)."""

from __future__ import annotations

import http.server
import json
import time
from contextlib import AbstractContextManager as ContextManager
from typing import Any

from tests.fakes.loopback import LoopbackServer, serving


class FakeTitan(LoopbackServer):
    def __init__(self, vector: list[float]) -> None:
        super().__init__(_Handler)
        self.vector = vector
        self.script: list[tuple[int, str | None, Any]] = []
        self.received: list[tuple[str, dict[str, str], bytes]] = []
        self.delay = 0.0  # seconds before each answer: a round trip to a region, for the bench


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart (a delayed ACK)
    server: FakeTitan

    def do_POST(self) -> None:
        server = self.server
        body = self.rfile.read(int(self.headers["Content-Length"]))
        server.received.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        if server.delay:  # (tests patch time.sleep to count the client's pauses)
            time.sleep(server.delay)
        answer = {"embedding": server.vector, "inputTextTokenCount": 3}
        status, kind, answer = server.script.pop(0) if server.script else (200, None, answer)
        payload = json.dumps(answer if kind is None else {"message": answer}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("x-amzn-RequestId", f"req-{len(server.received)}")
        if kind is not None:
            self.send_header("x-amzn-ErrorType", kind)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


def fake_titan(vector: list[float]) -> ContextManager[FakeTitan]:
    return serving(FakeTitan(vector))

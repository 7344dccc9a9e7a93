"""A scripted MCP endpoint on loopback, for the wire cases the SDK's servers never produce: answers in
pieces, batches, redirects, bare HTTP errors, a server's own requests, streams that end early.

`ScriptedMcp(answer)` calls `answer(request)` for every request it receives (`request` holds the HTTP
verb, path, headers and the JSON-RPC message) and sends back what it returns: a status, headers and
the body in chunks, each written and flushed on its own. Every request is kept in `requests`.
"""

from __future__ import annotations

import http.server
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.loopback import LoopbackServer


@dataclass
class Request:
    verb: str
    path: str
    headers: dict[str, str]
    message: Any

    @property
    def method(self) -> str | None:
        return self.message.get("method") if isinstance(self.message, dict) else None


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)


def json_reply(message: Any, status: int = 200, **headers: str) -> Reply:
    return Reply(status, {"content-type": "application/json", **headers}, [json.dumps(message).encode()])


def events_reply(*events: str) -> Reply:
    """An event stream of these raw pieces, each sent as it is (an event may be split across them)."""
    return Reply(200, {"content-type": "text/event-stream"}, [e.encode() for e in events])


def result(request: Request, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request.message["id"], "result": value}


class ScriptedMcp(LoopbackServer):
    def __init__(self, answer: Callable[[Request], Reply]) -> None:
        super().__init__(_Handler)
        self.answer = answer
        self.requests: list[Request] = []


class _Handler(http.server.BaseHTTPRequestHandler):
    server: ScriptedMcp

    def log_message(self, *args: Any) -> None:
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        request = Request(
            self.command,
            self.path,
            {k.lower(): v for k, v in self.headers.items()},
            json.loads(body) if body else None,
        )
        self.server.requests.append(request)
        reply = self.server.answer(request)
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        for chunk in reply.chunks:
            self.wfile.write(chunk)
            self.wfile.flush()

    do_POST = do_DELETE = do_GET = _serve

"""A fake REST API for HTTP tools on loopback: a real HTTP/1.1 server in a thread on a free port.

Endpoints: orders, order cancellation, account orders, workflow and table-config dry runs, `/echo/...` (what it received:
method, path, query, body, headers), `/fail` (500), `/bad` (400 with a message), `/slow` (answers only
when the server stops, beyond any tool timeout), `/big` (a 200 KB JSON body), `/big-stream` (200 KB, chunked, no Content-Length), `/redirect` (302 to
another host), `/fetch` (GETs the URL in the body's `file` — an attachment's presigned URL — and answers
its size and SHA-256, quoting the URL back as a careless API would). Every request is recorded, and
what `/fetch` got in `api.fetched`.

    with FakeToolAPI() as api:
        api.url  # http://127.0.0.1:<port>
"""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

BIG_BYTES = 200 * 1024


class FakeToolAPI:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.fetched: list[bytes] = []
        self.released = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeToolAPI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.released.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeToolAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)

    def paths(self) -> list[str]:
        return [r["path"] for r in self.requests]


def _route(api: FakeToolAPI, method: str, parts: list[str], seen: dict[str, Any]) -> tuple[int, Any]:
    match parts:
        case ["echo", *_]:
            return 200, seen
        case ["orders", order_id]:
            return 200, {"orderId": order_id, "status": "shipped", "eta": "2030-01-02"}
        case ["orders", order_id, "cancel"]:
            return 200, {"orderId": order_id, "status": "cancelled"}
        case ["accounts", account_id, "orders"]:
            return 200, {"accountId": account_id, "orders": [{"orderId": "A1", "status": "open"}]}
        case ["workflows", workflow_id, "dry-run"]:
            steps = ["approval", "email"]
            return 200, {"workflowId": workflow_id, "steps": steps, "change": seen["body"]}
        case ["tables", table_id, "config", "dry-run"]:
            return 200, {"tableId": table_id, "columns": ["status", "name"]}
        case ["fail"]:
            return 500, {"error": "database exploded at /srv/app/db.py line 12"}
        case ["bad"]:
            return 400, {"message": "orderId must be numeric"}
        case ["slow"]:
            api.released.wait(30)
            return 200, {"late": True}
        case ["big"]:
            return 200, {"rows": ["x" * 1000] * (BIG_BYTES // 1000)}
        case ["redirect"]:
            return 302, None
        case ["fetch"]:
            url = (seen["body"] or {}).get("file", "")
            with urllib.request.urlopen(url, timeout=10) as response:  # loopback: the moto server
                data = response.read()
            api.fetched.append(data)
            return 200, {"file": url, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return 404, {"error": "no such endpoint"}


def _handler(api: FakeToolAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _serve(self) -> None:
            split = urlsplit(self.path)
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            seen = {
                "method": self.command,
                "path": split.path,
                "rawPath": self.path,
                "query": parse_qs(split.query),
                "body": body,
                "headers": {k.lower(): v for k, v in self.headers.items()},
            }
            api.record(seen)
            parts = [p for p in split.path.split("/") if p]
            status, payload = _route(api, self.command, parts, seen)
            data = json.dumps(payload).encode() if payload is not None else b""
            if parts == ["big-stream"]:
                self._stream_chunks()
                return
            self.send_response(status)
            if status == 302:
                self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _stream_chunks(self) -> None:
            """A body with no Content-Length, sent in chunks, larger than any tool limit."""
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            piece = b"x" * 8192
            try:
                for _ in range(BIG_BYTES // len(piece)):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass  # the client stopped reading at its limit

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    return Handler

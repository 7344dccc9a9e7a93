"""A scripted S3 on loopback, path-style: PUT keeps an object under its path, GET returns it (S3's
NoSuchKey when there is none); each request first takes the next answer of the server's `script`, a
(status, error code, extras) it answers with S3's XML error document: extras named in lower case are
headers, capitalised ones the document's fields (`Region`). The server keeps what it
received (method, path, lower-cased headers, body)."""

from __future__ import annotations

import hashlib
import http.server
from contextlib import AbstractContextManager as ContextManager
from typing import Any
from urllib.parse import unquote

from tests.fakes.loopback import LoopbackServer, serving

ERROR = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
    "<Key>{key}</Key>{more}<RequestId>{request}</RequestId><HostId>host-{request}</HostId></Error>"
)


class FakeS3(LoopbackServer):
    def __init__(self) -> None:
        super().__init__(_Handler)
        self.objects: dict[str, tuple[bytes, str]] = {}  # unescaped path -> body, content type
        self.script: list[tuple[int, str, dict[str, str]]] = []
        self.received: list[tuple[str, str, dict[str, str], bytes]] = []


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart (a delayed ACK)
    server: FakeS3

    def do_GET(self) -> None:
        self._answer(self._received(), put=False)

    def do_PUT(self) -> None:
        self._answer(self._received(), put=True)

    def _received(self) -> bytes:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.received.append((self.command, self.path, headers, body))
        return body

    def _answer(self, body: bytes, *, put: bool) -> None:
        server, request = self.server, f"req-{len(self.server.received)}"
        key = unquote(self.path)
        if server.script:
            status, code, extra = server.script.pop(0)
            fields = {name: value for name, value in extra.items() if name[0].isupper()}  # the body's
            more = "".join(f"<{name}>{value}</{name}>" for name, value in fields.items())
            headers = {name: value for name, value in extra.items() if name not in fields}
            error = ERROR.format(code=code, message=f"{code} here", key=key, more=more, request=request)
            self._send(status, error, headers)
        elif put:
            server.objects[key] = (body, self.headers.get("Content-Type", "binary/octet-stream"))
            etag = f'"{hashlib.md5(body).hexdigest()}"'
            self._send(200, "", {"ETag": etag})
        elif key in server.objects:
            stored, kind = server.objects[key]
            self._send(200, stored, {"Content-Type": kind, "ETag": f'"{hashlib.md5(stored).hexdigest()}"'})
        else:
            self._send(
                404,
                ERROR.format(
                    code="NoSuchKey",
                    message="The specified key does not exist.",
                    key=key,
                    more="",
                    request=request,
                ),
                {},
            )

    def _send(self, status: int, body: str | bytes, headers: dict[str, str]) -> None:
        payload = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        request = f"req-{len(self.server.received)}"
        for name, value in {
            "x-amz-request-id": request,
            "x-amz-id-2": f"host-{request}",
            "Content-Type": "application/xml" if status >= 300 else "application/octet-stream",
            **headers,
        }.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


def fake_s3() -> ContextManager[FakeS3]:
    return serving(FakeS3())

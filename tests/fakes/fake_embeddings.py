"""A fake OpenAI-compatible embeddings server on loopback: scripted failures, a batch limit, shuffled answers."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from rag_orchestrator.text.hashing import HashingEmbedder

DIMENSIONS = 16


def expected_vector(text: str) -> list[float]:
    """The vector the fake server returns for a text."""
    return HashingEmbedder(DIMENSIONS).embed(text)


@dataclass
class FakeEmbeddings:
    """State and script of the fake: what it received, what it should answer next."""

    api_key: str | None = None
    max_batch: int = 8
    failures: list[tuple[int, dict[str, str]]] = field(
        default_factory=list
    )  # (status, headers) to answer first
    drop_connection: int = 0  # close the next N connections without answering
    stall_seconds: float = 0.0  # wait this long before answering each request (a hung server)
    requests: list[dict] = field(default_factory=list)
    url: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def respond(self, headers: dict[str, str], body: dict) -> tuple[int, dict[str, str], dict | None]:
        with self._lock:
            self.requests.append({"headers": headers, "body": body})
        time.sleep(self.stall_seconds)
        with self._lock:
            if self.drop_connection:
                self.drop_connection -= 1
                return -1, {}, None
            if self.failures:
                status, extra = self.failures.pop(0)
                return status, extra, {"error": {"message": f"scripted {status}", "type": "scripted"}}
        if self.api_key and headers.get("authorization") != f"Bearer {self.api_key}":
            given = headers.get("authorization", "")
            return 401, {}, {"error": {"message": f"Incorrect API key provided: {given}", "type": "auth"}}
        texts = body.get("input")
        if not isinstance(texts, list) or not body.get("model"):
            return 400, {}, {"error": {"message": "model and input are required"}}
        if len(texts) > self.max_batch:
            return 400, {}, {"error": {"message": f"batch of {len(texts)} exceeds {self.max_batch}"}}
        data = [
            {"object": "embedding", "index": i, "embedding": expected_vector(t)} for i, t in enumerate(texts)
        ]
        # Servers may answer out of order; clients must sort by index.
        data.reverse()
        return (
            200,
            {},
            {"object": "list", "model": body["model"], "data": data, "usage": {"prompt_tokens": 1}},
        )


@contextmanager
def serve_fake_embeddings(fake: FakeEmbeddings | None = None) -> Iterator[FakeEmbeddings]:
    fake = fake or FakeEmbeddings()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path != "/v1/embeddings":
                status, extra, payload = 404, {}, {"error": {"message": "not found"}}
            else:
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, extra, payload = fake.respond(headers, body)
            if status < 0:
                self.close_connection = True
                return
            content = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(content)))
            for key, value in extra.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(content)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()

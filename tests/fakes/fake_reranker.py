"""A fake rerank API on loopback in the shape Cohere, Jina, vLLM and TEI share: POST {model, query,
documents, top_n} -> {results: [{index, relevance_score}]}, most relevant first. It scores a document by the
query's words it holds; `script` answers the next requests instead (a status and a body, or a delay)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def relevance(query: str, document: str) -> float:
    asked = set(query.lower().split())
    return len(asked & set(document.lower().replace(".", " ").split())) / max(len(asked), 1)


class FakeReranker:
    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.script: list[tuple[int, Any] | float] = []  # (status, body) to answer, or seconds to stall
        self.trickle = 0.0  # > 0: the body's first bytes one at a time, this many seconds apart
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append((dict(self.headers), body))
                status, payload = server.answer(body)
                data = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                head = 8 if server.trickle else 0  # each byte well within a read timeout, the whole not
                for byte in range(head):
                    self.wfile.write(data[byte : byte + 1])
                    self.wfile.flush()
                    time.sleep(server.trickle)
                self.wfile.write(data[head:])

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1/rerank"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def answer(self, body: dict[str, Any]) -> tuple[int, Any]:
        if self.script:
            step = self.script.pop(0)
            if isinstance(step, float):
                time.sleep(step)
            else:
                return step
        scored = [(relevance(body["query"], d), i) for i, d in enumerate(body["documents"])]
        ranked = sorted(scored, key=lambda s: (-s[0], s[1]))[: body.get("top_n") or len(scored)]
        return 200, {"results": [{"index": i, "relevance_score": score} for score, i in ranked]}

    def __enter__(self) -> FakeReranker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

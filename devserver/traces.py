"""A local OTLP/HTTP trace receiver: `make dev` points OTEL_EXPORTER_OTLP_ENDPOINT at it, appends every
span to `.local/traces.jsonl` and prints each turn's span tree; the tests read the spans it received.

It decodes what the OpenTelemetry SDK's OTLP/HTTP exporter sends (protobuf, or JSON) on
POST /v1/traces, as a collector would (docs/observability.md).
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


def _value(value: dict[str, Any]) -> Any:
    """An OTLP AnyValue as plain JSON (ints arrive as strings in protobuf's JSON form)."""
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [_value(v) for v in value["arrayValue"].get("values", [])]
    for kind in ("stringValue", "boolValue", "doubleValue"):
        if kind in value:
            return value[kind]
    return None


def decode(body: bytes, content_type: str) -> list[dict[str, Any]]:
    """The spans of one export request, flattened: ids in hex, attributes as a dict, times in ns."""
    if content_type.startswith("application/json"):
        request = json.loads(body)
    else:
        message = ExportTraceServiceRequest()
        message.ParseFromString(body)
        request = MessageToDict(message)
    spans = []
    for resource in request.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                spans.append(
                    {
                        "traceId": _hex(span["traceId"]),
                        "spanId": _hex(span["spanId"]),
                        "parentSpanId": _hex(span.get("parentSpanId", "")),
                        "name": span["name"],
                        "kind": KINDS.get(_kind(span.get("kind", 1)), "internal"),
                        "start": int(span["startTimeUnixNano"]),
                        "end": int(span["endTimeUnixNano"]),
                        "attributes": {a["key"]: _value(a["value"]) for a in span.get("attributes", [])},
                        "status": span.get("status", {}).get("code", "STATUS_CODE_UNSET"),
                    }
                )
    return spans


def _kind(kind: int | str) -> int:
    names = {"SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2, "SPAN_KIND_CLIENT": 3}
    return names.get(kind, 1) if isinstance(kind, str) else kind


def _hex(value: str) -> str:
    """Protobuf's JSON form gives ids in base64; OTLP/JSON gives them in hex already."""
    if not value:
        return ""
    try:
        int(value, 16)
        return value.lower()
    except ValueError:
        return base64.b64decode(value).hex()


def tree(spans: list[dict[str, Any]]) -> str:
    """One trace's spans as an indented tree, each with its duration and its GenAI figures."""
    children: dict[str, list[dict[str, Any]]] = {}
    ids = {s["spanId"] for s in spans}
    for span in sorted(spans, key=lambda s: s["start"]):
        parent = span["parentSpanId"] if span["parentSpanId"] in ids else ""
        children.setdefault(parent, []).append(span)
    lines: list[str] = []

    def walk(parent: str, depth: int) -> None:
        for span in children.get(parent, []):
            figures = [f"{(span['end'] - span['start']) / 1e6:.1f} ms"]
            attributes = span["attributes"]
            for key in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "error.type"):
                if key in attributes:
                    figures.append(f"{key.rsplit('.', 1)[-1]}={attributes[key]}")
            lines.append(f"{'  ' * depth}{span['name']}  ({', '.join(figures)})")
            walk(span["spanId"], depth + 1)

    walk("", 0)
    return "\n".join(lines)


class TraceReceiver:
    """POST /v1/traces on loopback, in a thread of this process; `spans` holds what it received."""

    def __init__(
        self, log: Path | None = None, on_spans: Callable[[list[dict[str, Any]]], None] | None = None
    ):
        self.spans: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._log, self._on_spans = log, on_spans
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                receiver.receive(decode(body, self.headers.get("Content-Type") or ""))
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def receive(self, spans: list[dict[str, Any]]) -> None:
        with self._lock:
            self.spans += spans
            if self._log is not None:
                self._log.parent.mkdir(parents=True, exist_ok=True)
                with self._log.open("a") as out:
                    out.writelines(json.dumps(span) + "\n" for span in spans)
        if self._on_spans is not None:
            self._on_spans(spans)

    def received(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.spans)

    def clear(self) -> None:
        with self._lock:
            self.spans.clear()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def print_turns(received: list[dict[str, Any]], new: list[dict[str, Any]]) -> None:
    """Print the tree of each turn that ended (an `invoke_agent` span among the `new` spans)."""
    for root in (s for s in new if s["name"] == "invoke_agent"):
        trace = [s for s in received if s["traceId"] == root["traceId"]]
        print(f"trace {root['traceId']}\n{tree(trace)}", flush=True)

"""Tracing off costs no import: with OTEL_EXPORTER_OTLP_ENDPOINT unset, neither start-up nor a whole turn
loads OpenTelemetry's SDK or exporter (FastAPI itself imports the API, `opentelemetry.trace`); set,
the first part that needs the tracer loads them."""

from __future__ import annotations

import os
import subprocess
import sys

CHECK = """
import sys
from fastapi.testclient import TestClient
from rag_orchestrator.api.app import API_ROUTERS, STREAM_ROUTERS, create_app
create_app(API_ROUTERS)
c = TestClient(create_app(STREAM_ROUTERS + ("conversations",)))
caller = {"X-Caller-Id": "alice"}
cid = c.post("/api/v1/chat/conversations", json={}, headers=caller).json()["conversationId"]
with c.stream("POST", f"/api/v1/chat/conversations/{cid}/messages/stream", json={"message": "hi"}, headers=caller) as r:
    assert "Completed" in "".join(r.iter_text())
loaded = [m for m in sys.modules if m.startswith(("opentelemetry.sdk", "opentelemetry.exporter"))]
print(sorted({".".join(m.split(".")[:2]) for m in loaded} | ({"otel_tracing"} if "rag_orchestrator.otel_tracing" in sys.modules else set())))
"""


def loaded(**env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    environ |= {
        "PYTHONPATH": os.pathsep.join(sys.path),
        "CONVERSATION_STORAGE": "memory",
        "MEMORY_ENABLED": "false",
    }
    environ |= {"MODEL_STRATEGY": "extractive", "LOOP_INITIAL_RAG": "false", **env}
    result = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, env=environ, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().splitlines()[-1]


def test_tracing_off_loads_no_sdk_on_start_up_or_in_a_turn():
    assert loaded() == "[]"


def test_tracing_on_loads_the_sdk_and_the_otlp_http_exporter():
    # Nothing listens there: the turn still completes, its export fails off the turn's path.
    assert loaded(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9") == (
        "['opentelemetry.exporter', 'opentelemetry.sdk', 'otel_tracing']"
    )

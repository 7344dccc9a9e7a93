"""The streaming app emits its metrics (EMF on stdout) per request: turns and the time to the first token."""

import json

import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from rag_orchestrator.api.lambda_context import LambdaContextMiddleware, context_keys
from rag_orchestrator.observability import metrics

ALICE = {"X-Caller-Id": "alice"}


@pytest.fixture
def app(monkeypatch):
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    metrics.clear_metrics()
    application = create_app(ALL_ROUTERS)
    application.add_middleware(LambdaContextMiddleware)
    yield TestClient(application)
    metrics.clear_metrics()


def emitted(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"')]


def test_a_streamed_turn_records_its_time_to_first_token_and_completion(app, capsys):
    cid = app.post("/api/v1/chat/conversations", json={}, headers=ALICE).json()["conversationId"]
    capsys.readouterr()
    with app.stream(
        "POST", f"/api/v1/chat/conversations/{cid}/messages/stream", json={"message": "hi"}, headers=ALICE
    ) as response:
        body = "".join(response.iter_text())
    assert "event: ResponseChunk" in body and "event: Completed" in body
    (record,) = emitted(capsys.readouterr().out)
    (directive,) = record["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "RagOrchestrator" and directive["Dimensions"] == [["service"]]
    units = {m["Name"]: m["Unit"] for m in directive["Metrics"]}
    assert units["TimeToFirstToken"] == "Milliseconds" and units["TurnsCompleted"] == "Count"
    assert len(record["TimeToFirstToken"]) == 1 and record["TimeToFirstToken"][0] > 0


def test_a_request_without_metrics_prints_none(app, capsys):
    assert app.get("/api/v1/agent/ping").status_code == 200
    assert emitted(capsys.readouterr().out) == []


def test_the_adapters_context_header_becomes_powertools_log_keys(monkeypatch):
    monkeypatch.setattr("rag_orchestrator.api.lambda_context._cold", True)
    header = json.dumps(
        {
            "request_id": "r-1",
            "invoked_function_arn": "arn:aws:lambda:eu-west-1:1:function:f",
            "env_config": {"function_name": "f", "memory": 1024},
        }
    )
    assert context_keys(header) == {
        "function_name": "f",
        "function_memory_size": 1024,
        "function_arn": "arn:aws:lambda:eu-west-1:1:function:f",
        "function_request_id": "r-1",
        "cold_start": True,
    }
    assert context_keys(header)["cold_start"] is False
    assert context_keys(None) == {} and context_keys("not json") == {} and context_keys("[1]") == {}

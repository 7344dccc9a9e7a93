"""Health reports each dependency against the real local servers."""

import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import create_app

pytestmark = pytest.mark.integration


def test_health_is_up_with_every_dependency_up(aws_stack, chroma_url):
    response = TestClient(create_app(["health"])).get("/api/v1/agent/health")
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "UP"
    assert {name: check["status"] for name, check in body["checks"].items()} == {
        "dynamodb": "UP",
        "s3": "UP",
        "chroma": "UP",
        "provider": "UP",
    }


def test_health_names_chroma_when_it_is_down(aws_stack, monkeypatch):
    monkeypatch.setenv("CHROMA_URL", "http://127.0.0.1:9")
    response = TestClient(create_app(["health"])).get("/api/v1/agent/health")
    assert response.status_code == 503
    assert response.json()["failing"] == ["chroma"]


def test_health_names_a_missing_table(aws_stack, chroma_url, monkeypatch):
    monkeypatch.setenv("CONVERSATIONS_TABLE", "no-such-table")
    response = TestClient(create_app(["health"])).get("/api/v1/agent/health")
    assert response.status_code == 503
    assert response.json()["failing"] == ["dynamodb"]


def test_health_names_an_unconfigured_provider(aws_stack, chroma_url, monkeypatch):
    monkeypatch.setenv("MODEL_STRATEGY", "deepseek_single")
    response = TestClient(create_app(["health"])).get("/api/v1/agent/health")
    assert response.status_code == 503
    body = response.json()
    assert body["failing"] == ["provider"]
    assert "DEEPSEEK_API_KEY" in body["checks"]["provider"]["detail"]


def test_health_sends_the_chroma_token_read_from_ssm_in_aws(aws_stack, monkeypatch):
    """In AWS the token is a `CHROMA_TOKEN_PARAM` SSM name, as for every other secret."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import boto3

    seen: list[str | None] = []

    class Heartbeat(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("x-chroma-token"))
            body = b'{"nanosecond heartbeat": 1}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Heartbeat)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    boto3.client("ssm", endpoint_url=aws_stack["endpoint"]).put_parameter(
        Name="/rag/chroma-token", Value="chroma-secret", Type="SecureString", Overwrite=True
    )
    monkeypatch.delenv("CHROMA_TOKEN", raising=False)
    monkeypatch.setenv("CHROMA_TOKEN_PARAM", "/rag/chroma-token")
    monkeypatch.setenv("CHROMA_URL", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "rag-orchestrator-test-ApiFunction")
    monkeypatch.setenv("AUTH_MODE", "jwt")
    monkeypatch.setenv("JWT_ISSUER", "https://issuer.example.com")
    monkeypatch.setenv("JWT_AUDIENCE", "aud")
    try:
        response = TestClient(create_app(["health"])).get("/api/v1/agent/health")
    finally:
        server.shutdown()
    assert response.json()["checks"]["chroma"]["status"] == "UP", response.json()
    assert seen == ["chroma-secret"]

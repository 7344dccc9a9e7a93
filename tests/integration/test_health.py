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

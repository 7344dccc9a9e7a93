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


def test_health_shows_no_credentials_written_into_the_chroma_url(aws_stack, chroma_url, monkeypatch):
    """The route needs no caller: whatever it says, anyone may read."""
    with_credentials = chroma_url.replace("http://", "http://kbuser:s3cr3t-pass@") + "/?token=t0ken-value"
    monkeypatch.setenv("CHROMA_URL", with_credentials)
    response = TestClient(create_app(["health"])).get("/api/v1/agent/health")
    chroma = response.json()["checks"]["chroma"]
    assert chroma["status"] == "UP" and chroma["detail"] == f"heartbeat ok at {chroma_url}"
    assert "s3cr3t" not in response.text and "kbuser" not in response.text and "t0ken" not in response.text


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


def test_health_sends_the_chroma_token_read_from_ssm_in_aws(aws_stack, in_lambda, monkeypatch):
    """In AWS the token is a `CHROMA_TOKEN_PARAM` SSM name, as for every other secret."""
    import boto3

    from tests.fakes.json_http import JsonHttpServer

    boto3.client("ssm", endpoint_url=aws_stack["endpoint"]).put_parameter(
        Name="/rag/chroma-token", Value="chroma-secret", Type="SecureString", Overwrite=True
    )
    monkeypatch.delenv("CHROMA_TOKEN", raising=False)
    monkeypatch.setenv("CHROMA_TOKEN_PARAM", "/rag/chroma-token")
    with JsonHttpServer(lambda path: (200, {"nanosecond heartbeat": 1})) as chroma:
        monkeypatch.setenv("CHROMA_URL", chroma.url)
        response = TestClient(create_app(["health"])).get("/api/v1/agent/health")
    assert response.json()["checks"]["chroma"]["status"] == "UP", response.json()
    assert [headers.get("x-chroma-token") for _, headers in chroma.requests] == ["chroma-secret"]

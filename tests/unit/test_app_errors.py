"""Every error answers with the error JSON of docs/errors.md and never a stack trace."""

import uuid

import pytest
from fastapi import APIRouter
from fastapi.testclient import TestClient
from pydantic import BaseModel

from rag_orchestrator.api.app import StreamApp, create_app, mount
from rag_orchestrator.api.routing import Router
from rag_orchestrator.errors import ConversationNotFound

fastapi_router = APIRouter()
declared = Router()


class Body(BaseModel):
    name: str


def echo(body: Body) -> dict:
    return {"name": body.name}


def boom() -> dict:
    raise RuntimeError("secret internals at /srv/app.py line 42")


def missing() -> dict:
    raise ConversationNotFound("abc")


for router in (fastapi_router, declared):
    router.post("/echo")(echo)
    router.get("/boom")(boom)
    router.get("/missing")(missing)


@pytest.fixture(params=["fastapi", "declared"])
def client(request, monkeypatch):
    """The same routes on FastAPI's router in a FastAPI app, and declared (api/routing.py) in the
    Starlette app of the streaming function: every error answers the same."""
    monkeypatch.setenv("MAX_REQUEST_BYTES", "2048")
    if request.param == "fastapi":
        app = create_app(["health", "conversations"])
        mount(app, fastapi_router)
    else:
        app = create_app(["health"])
        assert isinstance(app, StreamApp)
        mount(app, declared)
    return TestClient(app, raise_server_exceptions=False)


def assert_error_json(response, status):
    assert response.status_code == status
    body = response.json()
    assert set(body) == {"error", "message", "timestamp", "requestId"}
    assert body["requestId"] == response.headers["x-request-id"]
    assert "Traceback" not in response.text
    return body


def test_unknown_route_is_404_json(client):
    body = assert_error_json(client.get("/nowhere"), 404)
    assert "/nowhere" in body["message"]


def test_domain_not_found_is_404_json(client):
    body = assert_error_json(client.get("/missing"), 404)
    assert body["error"] == "Conversation not found"


def test_validation_error_is_422_json_naming_the_field(client):
    body = assert_error_json(client.post("/echo", json={"nom": 1}), 422)
    assert "name" in body["message"]


def test_malformed_json_is_400(client):
    assert_error_json(
        client.post("/echo", content=b"{not json", headers={"content-type": "application/json"}), 400
    )


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("text/plain", b'{"name": "x"}'),
        ("application/x-www-form-urlencoded", b"name=x"),
        (None, b'{"name": "x"}'),
    ],
)
def test_a_body_not_sent_as_json_is_415_saying_what_to_send(client, content_type, body):
    headers = {"content-type": content_type} if content_type else {}
    error = assert_error_json(client.post("/echo", content=body, headers=headers), 415)
    assert "Content-Type: application/json" in error["message"]
    assert f"received Content-Type: {content_type or 'none'}" in error["message"]


def test_json_media_types_with_parameters_or_suffix_are_json(client):
    for content_type in ("application/json; charset=utf-8", "application/merge-patch+json"):
        response = client.post("/echo", content=b'{"name": "x"}', headers={"content-type": content_type})
        assert response.status_code == 200, content_type


def test_a_missing_body_is_422_asking_for_json(client):
    body = assert_error_json(client.post("/echo"), 422)
    assert body["message"] == "A JSON body is required"


def test_query_routes_keep_400_for_input_but_415_for_media_type(client):
    from rag_orchestrator.api.query import router as query_router

    mount(client.app, query_router)
    alice = {"X-Caller-Id": "alice"}
    malformed = client.post(
        "/api/v1/query", content=b"{x", headers={**alice, "content-type": "application/json"}
    )
    assert assert_error_json(malformed, 400)["message"] == "Malformed JSON body"
    assert_error_json(client.post("/api/v1/query", json={"query": ""}, headers=alice), 400)
    assert_error_json(
        client.post("/api/v1/query", content=b"q", headers={**alice, "content-type": "text/plain"}), 415
    )


def test_unexpected_exception_is_500_without_internals(client):
    body = assert_error_json(client.get("/boom"), 500)
    assert "secret" not in client.get("/boom").text
    assert body["message"] == "An unexpected error occurred"


def test_declared_oversized_body_is_413(client):
    assert_error_json(client.post("/echo", json={"name": "x" * 5000}), 413)


def test_streamed_oversized_body_is_413(client):
    def chunks():
        for _ in range(10):
            yield b"x" * 500

    response = client.post("/echo", content=chunks(), headers={"content-type": "application/json"})
    assert_error_json(response, 413)


@pytest.mark.parametrize("supplied", ["req-123", "x" * 129])
def test_the_request_id_is_always_the_services_own(client, supplied):
    response = client.get("/nowhere", headers={"X-Request-Id": supplied})
    body = assert_error_json(response, 404)
    assert body["requestId"] != supplied and str(uuid.UUID(body["requestId"])) == body["requestId"]


def test_openapi_and_docs_are_served(client):
    assert client.get("/openapi.json").json()["info"]["title"] == "RAG Orchestrator"
    assert client.get("/docs").status_code == 200


def test_method_not_allowed_is_json(client):
    assert_error_json(client.delete("/echo"), 405)

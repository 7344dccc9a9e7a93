"""Each status the OpenAPI document declares for a few routes is reachable, and answers the body it
declares: one request per status, and the document may declare neither more nor fewer of them.

The routes run over the moto server, a real Chroma server and the fake LLM. 503 comes from an app in
AUTH_MODE=jwt whose identity provider cannot be reached: every authenticated route depends on it.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from tests.fakes.jwks_server import SigningKey
from tests.fakes.llm_script import error_reply, text_reply

pytestmark = pytest.mark.integration

ALICE = {"X-Caller-Id": "status-alice"}
ADMIN = {"X-Caller-Id": "status-root", "X-Caller-Roles": "admin"}
MAX_BYTES = 4096


@dataclass
class Stack:
    dev: TestClient
    jwt: TestClient  # AUTH_MODE=jwt, its identity provider unreachable
    token: str  # a well-formed RS256 token for `jwt`
    document: dict[str, Any]

    def conversation(self) -> str:
        response = self.dev.post("/api/v1/chat/conversations", json={}, headers=ALICE)
        assert response.status_code == 201, response.text
        return response.json()["conversationId"]


@pytest.fixture
def stack(aws_stack, chroma_url, fake_llm, monkeypatch) -> Stack:
    monkeypatch.setenv("CHROMA_COLLECTION", f"statuses-{uuid.uuid4().hex[:8]}")
    monkeypatch.setenv("MAX_REQUEST_BYTES", str(MAX_BYTES))
    for key, value in fake_llm.settings_for("openai_compatible", model_max_retries=0).items():
        monkeypatch.setenv(key.upper(), str(value))
    fake_llm.default = text_reply("Run the suite with make test.", chunks=2)
    dev = TestClient(create_app(ALL_ROUTERS), raise_server_exceptions=False)
    issuer = "https://issuer.example.com"
    monkeypatch.setenv("AUTH_MODE", "jwt")
    monkeypatch.setenv("JWT_ISSUER", issuer)
    monkeypatch.setenv("JWT_JWKS_URL", "http://127.0.0.1:9/.well-known/jwks.json")  # nothing listens
    jwt_app = TestClient(create_app(ALL_ROUTERS), raise_server_exceptions=False)
    now = int(time.time())
    token = SigningKey("k1").sign({"sub": "someone", "iss": issuer, "iat": now, "exp": now + 600})
    return Stack(dev, jwt_app, token, dev.get("/openapi.json").json())


Request = Callable[[Stack], Any]


def chat_route(tail: str, body: Callable[[str], dict]) -> dict[int, Request]:
    """One request per status of a turn route; `body(text)` is the route's body for a message."""

    def path(s: Stack, cid: str | None = None) -> str:
        return f"/api/v1/chat/conversations/{cid or s.conversation()}/{tail}"

    def repeated(s: Stack):
        cid, once = s.conversation(), body("hello")
        assert s.dev.post(path(s, cid), json=once, headers=ALICE).status_code == 200
        return s.dev.post(path(s, cid), json=once, headers=ALICE)

    statuses: dict[int, Request] = {
        200: lambda s: s.dev.post(path(s), json=body("hello"), headers=ALICE),
        400: lambda s: s.dev.post(path(s), content=b'{"message": ', headers=json_type(ALICE)),
        401: lambda s: s.dev.post(path(s), json=body("hello")),
        404: lambda s: s.dev.post(path(s, str(uuid.uuid4())), json=body("hello"), headers=ALICE),
        409: repeated,
        413: lambda s: s.dev.post(path(s), json=body("x" * MAX_BYTES), headers=ALICE),
        415: lambda s: s.dev.post(path(s), content=b"hello", headers={**ALICE, "Content-Type": "text/plain"}),
        422: lambda s: (
            s.dev.post(path(s), json={**body("hello"), "unknown": 1}, headers=ALICE)
            if tail != "ui-stream"
            else s.dev.post(path(s), json={"messages": []}, headers=ALICE)
        ),
        503: lambda s: s.jwt.post(path(s), json=body("hello"), headers=bearer(s.token)),
    }
    if tail in ("messages/stream", "ui-stream"):  # a body naming another caller (docs/conversations.md)
        statuses[403] = lambda s: s.dev.post(
            path(s), json={**body("hello"), "callerId": "status-mallory"}, headers=ALICE
        )
    return statuses


def json_type(headers: dict[str, str]) -> dict[str, str]:
    return {**headers, "Content-Type": "application/json"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def message(text: str) -> dict:
    return {"message": text, "clientMessageId": "m-1"}


def ui_message(text: str) -> dict:
    return {"messages": [{"id": "u-1", "role": "user", "parts": [{"type": "text", "text": text}]}]}


def failing_model(s: Stack, llm) -> Any:
    llm.script(error_reply(500, "upstream exploded"))
    cid = s.conversation()
    return s.dev.post(f"/api/v1/chat/conversations/{cid}/messages", json={"message": "hi"}, headers=ALICE)


def finished_turn(s: Stack) -> str:
    """The path of a turn's events: a turn streamed to its end in a new conversation of ALICE's."""
    cid = s.conversation()
    response = s.dev.post(
        f"/api/v1/chat/conversations/{cid}/messages/stream", json=message("hi"), headers=ALICE
    )
    assert response.status_code == 200, response.text
    turn_id = json.loads(response.text.split("data: ", 1)[1].split("\n", 1)[0])["turnId"]
    return f"/api/v1/chat/conversations/{cid}/turns/{turn_id}/events"


AGENT = "/api/v1/agent/chat"
AUDIT = "/api/v1/admin/audit"
QUERY = "/api/v1/query"

ROUTES: dict[tuple[str, str], dict[int, Request]] = {
    ("post", "/api/v1/chat/conversations/{conversation_id}/messages/stream"): chat_route(
        "messages/stream", message
    ),
    ("post", "/api/v1/chat/conversations/{conversation_id}/ui-stream"): chat_route("ui-stream", ui_message),
    ("get", "/api/v1/chat/conversations/{conversation_id}/turns/{turn_id}/events"): {
        200: lambda s: s.dev.get(finished_turn(s), headers=ALICE),
        400: lambda s: s.dev.get(finished_turn(s), headers={**ALICE, "Last-Event-ID": "another-turn:3"}),
        401: lambda s: s.dev.get(finished_turn(s)),
        404: lambda s: s.dev.get(finished_turn(s), headers={"X-Caller-Id": "status-mallory"}),
        422: lambda s: s.dev.get(finished_turn(s), params={"after": -1}, headers=ALICE),
        503: lambda s: s.jwt.get(finished_turn(s), headers=bearer(s.token)),
    },
    ("post", AGENT): {
        200: lambda s: s.dev.post(AGENT, json={"message": "hello"}, headers=ALICE),
        400: lambda s: s.dev.post(AGENT, content=b'{"message": ', headers=json_type(ALICE)),
        401: lambda s: s.dev.post(AGENT, json={"message": "hello"}),
        403: lambda s: s.dev.post(
            AGENT, json={"message": "hello", "callerId": "status-mallory"}, headers=ALICE
        ),
        413: lambda s: s.dev.post(AGENT, json={"message": "x" * MAX_BYTES}, headers=ALICE),
        415: lambda s: s.dev.post(AGENT, content=b"hello", headers={**ALICE, "Content-Type": "text/plain"}),
        422: lambda s: s.dev.post(
            AGENT, json={"message": "hi", "history": [{"role": "system"}]}, headers=ALICE
        ),
        503: lambda s: s.jwt.post(AGENT, json={"message": "hello"}, headers=bearer(s.token)),
    },
    ("get", AUDIT): {
        200: lambda s: s.dev.get(AUDIT, params={"conversationId": s.conversation()}, headers=ADMIN),
        400: lambda s: s.dev.get(
            AUDIT, params={"conversationId": s.conversation(), "cursor": "forged"}, headers=ADMIN
        ),
        401: lambda s: s.dev.get(AUDIT, params={"conversationId": str(uuid.uuid4())}),
        403: lambda s: s.dev.get(AUDIT, params={"conversationId": s.conversation()}, headers=ALICE),
        404: lambda s: s.dev.get(AUDIT, params={"conversationId": str(uuid.uuid4())}, headers=ADMIN),
        422: lambda s: s.dev.get(AUDIT, headers=ADMIN),
        503: lambda s: s.jwt.get(
            AUDIT, params={"conversationId": str(uuid.uuid4())}, headers=bearer(s.token)
        ),
    },
    ("post", QUERY): {
        200: lambda s: s.dev.post(QUERY, json={"query": "tests"}, headers=ALICE),
        400: lambda s: s.dev.post(QUERY, json={"query": "tests", "topK": 0}, headers=ALICE),
        401: lambda s: s.dev.post(QUERY, json={"query": "tests"}),
        413: lambda s: s.dev.post(QUERY, json={"query": "x" * MAX_BYTES}, headers=ALICE),
        415: lambda s: s.dev.post(QUERY, content=b"tests", headers={**ALICE, "Content-Type": "text/plain"}),
        503: lambda s: s.jwt.post(QUERY, json={"query": "tests"}, headers=bearer(s.token)),
    },
}


def validator(document: dict[str, Any], schema: dict[str, Any]) -> Draft202012Validator:
    registry = Registry().with_resource("urn:openapi", Resource.from_contents(document, DRAFT202012))
    return Draft202012Validator(schema, registry=registry)


def declared(document: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    return document["paths"][path][method]["responses"]


@pytest.mark.parametrize(("method", "path"), list(ROUTES), ids=[f"{m.upper()} {p}" for m, p in ROUTES])
def test_each_declared_status_is_reachable_with_its_declared_body(stack, method, path):
    responses = declared(stack.document, method, path)
    requests = ROUTES[(method, path)]
    assert set(map(int, responses)) == set(requests), "the document and this test list different statuses"
    for status, send in requests.items():
        response = send(stack)
        assert response.status_code == status, (
            f"{status} wanted: {response.status_code} {response.text[:300]}"
        )
        content = responses[str(status)].get("content", {})
        media_type = response.headers["content-type"].split(";")[0]
        assert media_type in content, f"{status}: {media_type} is not declared"
        if media_type == "application/json":
            schema = {"$ref": "urn:openapi" + content[media_type]["schema"]["$ref"]}
            errors = list(validator(stack.document, schema).iter_errors(response.json()))
            assert not errors, f"{status}: {errors[0].message}"
        for name, header in responses[str(status)].get("headers", {}).items():
            assert not header.get("required") or name in response.headers, f"{status}: no {name}"


def test_a_model_failure_on_the_whole_turn_route_is_the_declared_502(stack, fake_llm):
    path = "/api/v1/chat/conversations/{conversation_id}/messages"
    responses = declared(stack.document, "post", path)
    response = failing_model(stack, fake_llm)
    assert response.status_code == 502 and "502" in responses
    body = response.json()
    assert set(body) == {"error", "message", "timestamp", "requestId"}
    assert "upstream exploded" not in json.dumps(body)

"""The OpenAPI document as built (api/openapi.py): valid OpenAPI 3.1, the error JSON for every error
status, security schemes by AUTH_MODE, every stream event as a schema, and a route added later
described with no edit to the module."""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest
from fastapi import APIRouter, Depends, Path
from fastapi.responses import StreamingResponse
from openapi_spec_validator import validate

from rag_orchestrator.api.app import ALL_ROUTERS, STREAM_ROUTERS, create_app
from rag_orchestrator.api.auth import get_owner
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.events import StreamEvent

ERROR = {"$ref": "#/components/schemas/ErrorResponse"}


def build(routers=ALL_ROUTERS) -> dict[str, Any]:
    return create_app(routers).openapi()


def operations(document: dict[str, Any]):
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            yield f"{method.upper()} {path}", operation


@pytest.mark.parametrize("routers", [ALL_ROUTERS, STREAM_ROUTERS])
def test_the_document_is_valid_openapi_3_1(routers):
    document = build(routers)
    assert document["openapi"].startswith("3.1")
    validate(document)  # raises on an invalid document or a dangling $ref


def test_every_error_status_answers_the_error_json_and_fastapis_detail_is_gone():
    document = build()
    for label, operation in operations(document):
        for status, response in operation["responses"].items():
            if int(status) < 400 or label == "GET /api/v1/agent/health":
                continue
            if label == "POST /mcp" and status in ("400", "406"):  # the JSON-RPC transport's own errors
                assert response["content"]["application/json"]["schema"]["properties"]["jsonrpc"]
                continue
            assert response["content"] == {"application/json": {"schema": ERROR}}, (label, status)
    assert "HTTPValidationError" not in json.dumps(document)
    schema = document["components"]["schemas"]["ErrorResponse"]
    assert schema["required"] == ["error", "message", "timestamp", "requestId"]
    assert schema["additionalProperties"] is False


def test_statuses_follow_what_each_route_has():
    responses = {label: set(op["responses"]) for label, op in operations(build())}
    chat = "/api/v1/chat/conversations/{conversation_id}"
    whole = {"200", "400", "401", "403", "404", "409", "413", "415", "422", "502", "503"}  # 403: callerId
    assert responses[f"POST {chat}/messages"] == whole
    assert responses[f"POST {chat}/messages/stream"] == whole - {"502"}  # a model failure is an Error event
    assert responses["POST /api/v1/query"] == {"200", "400", "401", "413", "415", "503"}  # bad input: 400
    assert responses["GET /api/v1/admin/audit"] == {"200", "400", "401", "403", "404", "422", "503"}
    assert responses["POST /api/v1/auth/guest"] == {"201", "404", "429", "503"}
    assert responses["GET /api/v1/agent/health"] == {"200", "503"}
    assert responses["GET /api/v1/agent/ping"] == {"200"}
    turn = f"{chat}/turns/{{turn_id}}"
    assert responses[f"GET {turn}/events"] == {"200", "400", "401", "404", "422", "503"}  # Last-Event-ID
    assert responses[f"POST {turn}/cancel"] == {"202", "401", "404", "409", "422", "503"}
    # No conversation, no turn lock: the stateless agent chat never answers 409 (403: callerId).
    assert responses["POST /api/v1/agent/chat"] == {"200", "400", "401", "403", "413", "415", "422", "503"}
    assert responses[f"POST {chat}/ui-stream"] == whole - {"502"}
    assert responses[f"GET {chat}/ui-stream"] == {"200", "204", "401", "404", "422", "503"}


def test_dependency_failures_say_when_to_try_again_and_401_how_to_authenticate():
    operation = build()["paths"]["/api/v1/chat/conversations"]["post"]["responses"]
    assert set(operation["503"]["headers"]) == {"Retry-After"}
    assert operation["401"]["headers"]["WWW-Authenticate"]["required"] is True


def test_security_schemes_follow_auth_mode(monkeypatch):
    dev = build()
    assert set(dev["components"]["securitySchemes"]) == {"bearer", "callerId", "callerRoles", "callerClaims"}
    assert dev["components"]["securitySchemes"]["callerId"]["name"] == "X-Caller-Id"
    assert dev["components"]["securitySchemes"]["callerClaims"]["name"] == "X-Caller-Claims"
    security = dev["paths"]["/api/v1/chat/conversations"]["post"]["security"]
    assert {"callerId": []} in security and {"bearer": []} in security
    assert {"callerId": [], "callerRoles": [], "callerClaims": []} in security
    assert "security" not in dev["paths"]["/.well-known/jwks.json"]["get"]  # the key set needs no caller
    assert "security" not in dev["paths"]["/api/v1/agent/health"]["get"]

    monkeypatch.setenv("AUTH_MODE", "jwt")
    monkeypatch.setenv("JWT_ISSUER", "https://issuer.example.com")
    monkeypatch.setenv("ALLOW_ANONYMOUS", "true")
    deployed = build()
    assert set(deployed["components"]["securitySchemes"]) == {"bearer"}
    # Searching is open to the anonymous caller then; conversations still need a caller or a guest.
    assert deployed["paths"]["/api/v1/query"]["post"]["security"] == [{"bearer": []}, {}]
    assert deployed["paths"]["/api/v1/chat/conversations"]["post"]["security"] == [{"bearer": []}]


def test_every_event_of_both_streams_is_a_schema_the_stream_routes_reference():
    document = build()
    schemas = document["components"]["schemas"]
    types = sorted(model.model_fields["type"].default for model in get_args(get_args(StreamEvent)[0]))
    union = schemas["ChatStreamEvent"]
    assert union["discriminator"]["propertyName"] == "type"
    assert sorted(union["discriminator"]["mapping"]) == types
    for name in types:
        assert schemas[name]["required"][0] == "type"
        assert schemas[name]["properties"]["type"]["const"] == name
    message = schemas["ChatStreamMessage"]["properties"]
    assert message["event"]["enum"] == [name for name in union["discriminator"]["mapping"]]
    assert message["data"]["contentSchema"] == {"$ref": "#/components/schemas/ChatStreamEvent"}
    answer = [m["properties"]["event"]["const"] for m in schemas["AnswerStreamMessage"]["oneOf"]]
    assert answer == ["sources", "delta", "done", "error"]

    def streamed(path: str) -> dict[str, Any]:
        return document["paths"][path]["post"]["responses"]["200"]["content"]

    chat = "/api/v1/chat/conversations/{conversation_id}"
    native = {"text/event-stream": {"schema": {"$ref": "#/components/schemas/ChatStreamMessage"}}}
    assert streamed(f"{chat}/messages/stream") == native
    resumed = document["paths"][f"{chat}/turns/{{turn_id}}/events"]["get"]["responses"]["200"]["content"]
    assert resumed == native
    assert streamed(f"{chat}/ui-stream")["text/event-stream"]["schema"]["$ref"].endswith(
        "UIMessageStreamMessage"
    )
    answer_stream = streamed("/api/v1/query/answer/stream")  # SSE, or with stream: false the whole answer
    assert answer_stream["text/event-stream"]["schema"]["$ref"].endswith("AnswerStreamMessage")
    assert answer_stream["application/json"]["schema"]["$ref"].endswith("AnswerResponse")


def test_a_route_added_later_is_described_without_an_edit_here():
    """An owner, path ids, and the native stream with no schema of its own."""
    later = APIRouter(prefix="/api/v1/chat/conversations")

    @later.get(
        "/{conversation_id}/turns/{turn_id}/replay",
        response_class=StreamingResponse,
        responses={200: {"content": {"text/event-stream": {}}}},
    )
    async def replay(
        conversation_id: str = Path(max_length=100),
        turn_id: str = Path(max_length=100),
        caller: Caller = Depends(get_owner),
    ) -> StreamingResponse:
        raise NotImplementedError

    app = create_app(ALL_ROUTERS)
    before = app.openapi()
    app.include_router(later)
    document = app.openapi()
    assert document is not before
    operation = document["paths"]["/api/v1/chat/conversations/{conversation_id}/turns/{turn_id}/replay"][
        "get"
    ]
    assert set(operation["responses"]) == {"200", "401", "404", "422", "503"}
    assert operation["responses"]["404"]["content"] == {"application/json": {"schema": ERROR}}
    assert operation["responses"]["200"]["content"] == {
        "text/event-stream": {"schema": {"$ref": "#/components/schemas/ChatStreamMessage"}}
    }
    assert {"bearer": []} in operation["security"]
    validate(document)

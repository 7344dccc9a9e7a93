"""Every client string is checked once at the edge: refused with the error JSON, never a 5xx, nothing stored.

The app runs on DynamoDB and S3 of the moto server; request bodies are sent as the JSON a client
would send (`"\\ud800"` escapes and all).
"""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from tests.fakes.llm_script import text_reply, tool_call_reply
from tests.fakes.sse import parse_sse

pytestmark = pytest.mark.integration

ALICE = {"X-Caller-Id": "edge-alice", "Content-Type": "application/json"}  # no other test's conversations
LONE = "\ud800"


@pytest.fixture
def app(aws_stack) -> TestClient:
    return TestClient(create_app(ALL_ROUTERS), raise_server_exceptions=False)


def send(app: TestClient, path: str, body: dict, headers: dict[str, str] = ALICE):
    # json.dumps escapes a lone surrogate as \ud800, exactly what a client's JSON encoder sends.
    return app.post(path, content=json.dumps(body), headers=headers)


def assert_refused(response, *words: str) -> dict:
    assert response.status_code == 400, response.text
    body = response.json()
    assert set(body) == {"error", "message", "timestamp", "requestId"}
    for word in words:
        assert word in body["message"], body["message"]
    return body


def new_conversation(app: TestClient) -> str:
    response = send(app, "/api/v1/chat/conversations", {})
    assert response.status_code == 201, response.text
    return response.json()["conversationId"]


def test_a_lone_surrogate_in_conversation_metadata_is_a_400_not_a_storage_outage(app):
    headers = {**ALICE, "X-Caller-Id": "metadata-tester"}
    for body, words in (
        ({"metadata": {"note": LONE}}, ("metadata.note",)),
        ({"userId": "u\x00"}, ("U+0000",)),
    ):
        response = app.post("/api/v1/chat/conversations", content=json.dumps(body), headers=headers)
        assert_refused(response, *words)
    assert app.get("/api/v1/chat/conversations", headers=headers).json()["items"] == []


@pytest.mark.parametrize(
    "body",
    [
        {"message": "hi", "context": {"screen": {"items": ["ok", LONE]}}},
        {"message": "hi", "metadata": {"k": LONE}},
        {"message": "hi", "clientMessageId": "m\x1b"},
        {"message": f"hi {LONE}"},
    ],
)
def test_a_bad_string_anywhere_in_a_turn_is_refused_before_anything_is_stored(app, body):
    cid = new_conversation(app)
    for route in ("messages", "messages/stream"):
        response = send(app, f"/api/v1/chat/conversations/{cid}/{route}", body)
        assert_refused(response, "contains a")
    # The same turn as useChat sends it (it was a 500 there)
    said = {
        "id": body.get("clientMessageId", "u1"),
        "role": "user",
        "parts": [{"type": "text", "text": body["message"]}],
    }
    ui = {key: value for key, value in body.items() if key not in ("message", "clientMessageId")}
    assert_refused(
        send(app, f"/api/v1/chat/conversations/{cid}/ui-stream", ui | {"messages": [said]}), "contains a"
    )
    assert app.get(f"/api/v1/chat/conversations/{cid}", headers=ALICE).json()["messageCount"] == 0


@pytest.mark.parametrize(
    ("path", "body", "where"),
    [
        ("/api/v1/query", {"query": "refunds", "source": f"docs{LONE}"}, "source"),
        ("/api/v1/query", {"query": "refunds", "tags": ["ok", "t\x07"]}, "tags[1]"),
        ("/api/v1/query/answer", {"query": f"refunds{LONE}"}, "query"),
        ("/api/v1/query/answer/stream", {"query": "refunds", "source": "\x00"}, "source"),
        ("/api/v1/ingest", {"documents": [{"title": "T", "text": f"body {LONE}"}]}, "documents[0].text"),
    ],
)
def test_query_filters_and_ingested_documents_follow_the_same_rule(app, path, body, where):
    writer = {**ALICE, "X-Caller-Roles": "admin"}  # who may ingest at all (KB_WRITER_ROLES)
    assert_refused(send(app, path, body, writer), where)


def test_a_tool_argument_from_the_model_with_a_lone_surrogate_is_an_unsuccessful_result(
    app, fake_llm, monkeypatch
):
    for key, value in fake_llm.settings_for("openai_compatible", loop_initial_rag="false").items():
        monkeypatch.setenv(key.upper(), str(value))
    # The model's arguments text is JSON holding the escape; decoded, it is a lone surrogate.
    fake_llm.script(tool_call_reply("rag_search", '{"query": "\\ud800"}'), text_reply("Nothing to search."))
    app = TestClient(create_app(ALL_ROUTERS), raise_server_exceptions=False)  # with the model just set
    cid = new_conversation(app)
    with app.stream(
        "POST", f"/api/v1/chat/conversations/{cid}/messages/stream", json={"message": "hi"}, headers=ALICE
    ) as response:
        messages = parse_sse("".join(response.iter_text()))
    kinds = [m.event for m in messages]
    assert kinds[-1] == "Completed", kinds
    start = messages[kinds.index("ToolCallStart")].data
    assert "_raw" in start["arguments"]  # shown as the model sent it, not decoded
    result = messages[kinds.index("ToolCallResult")].data
    assert result["success"] is False and "contains a lone surrogate" in result["result"]
    tool_message = fake_llm.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and "Invalid arguments" in tool_message["content"]


RLO, ZWSP = "\u202e", "\u200b"  # a bidi override and a zero-width space: Unicode format characters (Cf)


@pytest.mark.parametrize(
    ("path", "body", "headers"),
    [
        ("/api/v1/chat/conversations", {"title": f"Invoices{RLO}fdp.exe"}, ALICE),
        ("/api/v1/chat/conversations", {"accountId": f"acct{ZWSP}-1001"}, ALICE),
        ("/api/v1/chat/conversations", {"metadata": {f"k{ZWSP}": "v"}}, ALICE),
        ("/api/v1/ingest", {"documents": [{"documentId": f"guide{ZWSP}", "title": "G", "text": "t"}]}, None),
        ("/api/v1/ingest", {"documents": [{"title": f"Refunds{RLO}", "text": "t"}]}, None),
    ],
)
def test_identifiers_and_titles_refuse_bidi_and_zero_width_characters(app, path, body, headers):
    admin = {**ALICE, "X-Caller-Id": "edge-admin", "X-Caller-Roles": "admin"}
    response = send(app, path, body, headers or admin)
    assert response.status_code == 422, response.text
    assert "Unicode format characters" in response.json()["message"]


def test_a_title_a_file_name_and_a_client_message_id_with_format_characters_are_422(app):
    cid = new_conversation(app)
    base = f"/api/v1/chat/conversations/{cid}"
    renamed = app.patch(base, content=json.dumps({"title": f"a{ZWSP}b"}), headers=ALICE)
    declared = send(
        app,
        f"{base}/attachments",
        {"fileName": f"x{RLO}gnp.exe", "contentType": "text/plain", "sizeBytes": 3},
    )
    turn = send(app, f"{base}/messages", {"message": "hi", "clientMessageId": f"m{RLO}1"})
    for response in (renamed, declared, turn):
        assert response.status_code == 422, response.text
    assert app.get(base, headers=ALICE).json()["messageCount"] == 0


CHAT, UI = "/api/v1/chat/conversations/{cid}/messages", "/api/v1/chat/conversations/{cid}/ui-stream"
UI_HI = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]


@pytest.mark.parametrize(
    ("method", "path", "body", "params"),
    [
        ("POST", CHAT, {"message": "hi", "accountId": f"a{ZWSP}1"}, None),  # seed 000's fields
        ("POST", CHAT, {"message": "hi", "userId": f"u{RLO}1"}, None),
        ("POST", CHAT, {"message": "hi", "callerId": f"e{ZWSP}"}, None),
        ("POST", "/api/v1/chat/conversations", {"callerId": f"edge-alice{ZWSP}"}, None),
        ("POST", "/api/v1/agent/chat", {"message": "hi", "context_type": f"orders{ZWSP}"}, None),
        ("POST", "/api/v1/agent/chat", {"message": "hi", "caller_id": f"edge-alice{RLO}"}, None),
        ("POST", UI, {"messages": UI_HI, "contextType": f"t{RLO}"}, None),  # was a 500
        ("POST", UI, {"messages": UI_HI, "callerId": f"e{RLO}"}, None),
        ("POST", UI, {"messages": [UI_HI[0] | {"id": f"u{ZWSP}"}]}, None),  # the clientMessageId
        ("DELETE", f"/api/v1/admin/callers/bob{ZWSP}", None, None),
        ("GET", "/api/v1/chat/conversations", None, {"userId": f"u{ZWSP}1"}),
    ],
)
def test_every_other_identifier_refuses_format_characters_too(app, method, path, body, params):
    cid = new_conversation(app)
    headers = {**ALICE, "X-Caller-Roles": "admin"}
    content = json.dumps(body) if body is not None else None
    response = app.request(method, path.format(cid=cid), content=content, params=params, headers=headers)
    assert response.status_code == 422, response.text
    assert set(response.json()) == {"error", "message", "timestamp", "requestId"}
    assert "Unicode format characters" in response.json()["message"]
    assert app.get(f"/api/v1/chat/conversations/{cid}", headers=ALICE).json()["messageCount"] == 0


@pytest.mark.parametrize(
    "raw", [f"ali{ZWSP}ce".encode(), "alïce".encode(), b"ali\x85ce", b"ali\xc2\x85ce", b"ali\x7fce"]
)
def test_a_dev_caller_id_outside_printable_ascii_is_401(app, raw):
    # Sent as the bytes a client sends: headers are read as Latin-1, so UTF-8 arrives as other characters.
    response = app.post("/api/v1/chat/conversations", content="{}", headers={**ALICE, "X-Caller-Id": raw})
    assert response.status_code == 401, response.text
    assert set(response.json()) == {"error", "message", "timestamp", "requestId"}
    assert "X-Caller-Id" in response.json()["message"]


DEEP = b"[" * 5000 + b"]" * 5000  # ~10 KB, nested past Python's JSON parser (~1,000 levels)


def test_json_nested_past_the_parser_is_a_400_on_every_route_and_a_401_in_the_dev_claims(app):
    cid = new_conversation(app)
    for path in ("/api/v1/query", "/api/v1/query/answer", f"/api/v1/chat/conversations/{cid}/messages"):
        refused = app.post(path, content=b'{"query": ' + DEEP + b"}", headers=ALICE)
        assert refused.status_code == 400, (path, refused.text)
        assert set(refused.json()) == {"error", "message", "timestamp", "requestId"}
    claims = app.post("/api/v1/chat/conversations", content="{}", headers={**ALICE, "X-Caller-Claims": DEEP})
    assert claims.status_code == 401, claims.text
    assert app.get(f"/api/v1/chat/conversations/{cid}", headers=ALICE).json()["messageCount"] == 0

"""Guest chat (ALLOW_ANONYMOUS=true) through the app on the moto server with the fake LLM: guest tokens,
isolation, no tools, expiring items, the archival job's purge, and guest tokens beside real JWTs."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

import boto3
import jwt
import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from rag_orchestrator.api.guest_tokens import AUDIENCE, ISSUER
from rag_orchestrator.config import load_settings
from rag_orchestrator.conversations.archival import run_archival
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.loop.prompts import ROLE_BLOCKS
from tests.fakes.llm_script import text_reply
from tests.fakes.sse import parse_sse

pytestmark = pytest.mark.integration

BASE = "/api/v1/chat/conversations"
SECRET = "guest-secret-for-the-tests-0123456789abcdef"
ALICE = {"X-Caller-Id": "alice"}


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def assert_error(response, status: int) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "message", "timestamp", "requestId"}
    return body


@pytest.fixture
def guests(aws_stack, fake_llm, monkeypatch) -> TestClient:
    monkeypatch.setenv("ALLOW_ANONYMOUS", "true")
    monkeypatch.setenv("GUEST_TOKEN_SECRET", SECRET)
    monkeypatch.setenv("LOOP_INITIAL_RAG", "false")
    for key, value in fake_llm.settings_for("openai_compatible").items():
        monkeypatch.setenv(key.upper(), str(value))
    return TestClient(create_app(ALL_ROUTERS))


def guest_token(client: TestClient) -> str:
    response = client.post("/api/v1/auth/guest")
    assert response.status_code == 201, response.text
    body = response.json()
    expires = datetime.fromisoformat(body["expiresAt"].replace("Z", "+00:00"))
    assert abs(expires - (datetime.now(UTC) + timedelta(hours=24))) < timedelta(minutes=1)
    return body["token"]


def items_of(aws_stack, cid: str) -> dict[str, dict]:
    dynamodb = boto3.client("dynamodb", endpoint_url=aws_stack["endpoint"])
    found = dynamodb.query(
        TableName=aws_stack["CONVERSATIONS_TABLE"],
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": f"CONV#{cid}"}},
        ConsistentRead=True,
    )["Items"]
    return {item["SK"]["S"]: item for item in found}


def test_the_guest_route_is_404_while_anonymous_access_is_off(aws_stack, monkeypatch):
    monkeypatch.setenv("ALLOW_ANONYMOUS", "false")
    client = TestClient(create_app(ALL_ROUTERS))
    assert_error(client.post("/api/v1/auth/guest"), 404)


def test_a_guest_chats_without_tools_and_another_guest_cannot_read_it(guests, fake_llm, aws_stack):
    token = guest_token(guests)
    created = guests.post(BASE, json={}, headers=bearer(token))
    assert created.status_code == 201, created.text
    cid, guest_id = created.json()["conversationId"], created.json()["callerId"]
    assert guest_id.startswith("guest:") and len(guest_id) == len("guest:") + 32

    fake_llm.script(text_reply("Hello, guest."))
    answered = guests.post(f"{BASE}/{cid}/messages", json={"message": "Hi!"}, headers=bearer(token))
    assert answered.status_code == 200, answered.text
    assert answered.json()["message"] == "Hello, guest."
    sent = fake_llm.requests[-1]
    assert "tools" not in sent  # offered no tools
    assert ROLE_BLOCKS["anonymous"] in sent["messages"][0]["content"]
    assert guests.get("/api/v1/agent/tools", headers=bearer(token)).json() == {"tools": []}

    fake_llm.script(text_reply("Streamed, guest."))
    with guests.stream(
        "POST", f"{BASE}/{cid}/messages/stream", json={"message": "Again"}, headers=bearer(token)
    ) as response:
        assert response.status_code == 200
        events = parse_sse(response.read().decode())
    assert events[-1].event == "Completed"

    mine = guests.get(f"{BASE}/{cid}/messages", headers=bearer(token)).json()["items"]
    assert [m["content"] for m in mine] == ["Hi!", "Hello, guest.", "Again", "Streamed, guest."]

    other = bearer(guest_token(guests))
    for response in (
        guests.get(f"{BASE}/{cid}", headers=other),
        guests.get(f"{BASE}/{cid}/messages", headers=other),
        guests.post(f"{BASE}/{cid}/messages", json={"message": "Let me in"}, headers=other),
        guests.delete(f"{BASE}/{cid}", headers=other),
        guests.get(f"{BASE}/{cid}", headers=ALICE),  # nor any signed-in caller
    ):
        assert_error(response, 404)
    assert guests.get(BASE, headers=other).json()["items"] == []
    assert [c["conversationId"] for c in guests.get(BASE, headers=bearer(token)).json()["items"]] == [cid]

    # Every item of a guest's conversation expires; its audit records do not (AUDIT_RETENTION_DAYS);
    # a streamed turn's event log goes sooner, an hour after the turn's deadline (docs/streams.md).
    stored = items_of(aws_stack, cid)
    soon = (utcnow() + timedelta(hours=24, days=7)).timestamp()
    for key, item in stored.items():
        if key.startswith("AUDIT#"):
            assert "expiresAt" not in item
        elif key.startswith("TURN"):  # TURN#…, and TURN$: the conversation's newest turn
            assert int(item["expiresAt"]["N"]) < (utcnow() + timedelta(hours=2)).timestamp(), key
        else:
            assert abs(int(item["expiresAt"]["N"]) - soon) < 3600, key
    assert stored["META"]["GSI3PK"]["S"].startswith("EXPIRE#")  # never archived: purged when out of reach
    assert sum(key.startswith("AUDIT#") for key in stored) == 2


def test_guest_identity_cannot_be_forged_or_outlive_its_token(guests):
    token = guest_token(guests)
    header, payload, signature = token.split(".")
    assert_error(guests.get(BASE, headers=bearer(f"{header}.{payload}.{signature[:-3]}abc")), 401)
    now = int(time.time())
    claims = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "guest:" + "0" * 32,
        "iat": now - 7200,
        "exp": now - 3600,
    }
    expired = jwt.encode(claims, SECRET, algorithm="HS256")
    assert "expired" in assert_error(guests.get(BASE, headers=bearer(expired)), 401)["message"]
    forged = jwt.encode(
        claims | {"exp": now + 600}, "some-other-key-of-enough-length-0123456789", algorithm="HS256"
    )
    assert_error(guests.get(BASE, headers=bearer(forged)), 401)
    # The guest id space is the guest tokens' alone.
    assert_error(guests.get(BASE, headers={"X-Caller-Id": "guest:" + "0" * 32}), 401)
    # No credentials at all: the shared anonymous caller, who keeps no conversations, and is answered
    # by no model (nothing would count its tokens: a guest's day is its token's).
    refused = assert_error(guests.post(BASE, json={}), 401)
    assert "guest token" in refused["message"]
    for answer_path in ("/api/v1/query/answer?stream=false", "/api/v1/query/answer/stream"):
        unanswered = assert_error(guests.post(answer_path, json={"query": "How do I run the tests?"}), 401)
        assert "guest token" in unanswered["message"]


def test_guest_tokens_are_accepted_beside_jwts_in_jwt_mode(guests, jwks, monkeypatch):
    issuer = "https://issuer.example.com"
    monkeypatch.setenv("AUTH_MODE", "jwt")
    monkeypatch.setenv("JWT_ISSUER", issuer)
    monkeypatch.setenv("JWT_JWKS_URL", jwks.url)
    client = TestClient(create_app(ALL_ROUTERS))
    token = guest_token(client)
    created = client.post(BASE, json={}, headers=bearer(token))
    assert created.status_code == 201 and created.json()["callerId"].startswith("guest:")
    now = int(time.time())
    user = jwks.keys[0].sign({"sub": "user-7", "iss": issuer, "iat": now, "exp": now + 600})
    assert client.post(BASE, json={}, headers=bearer(user)).json()["callerId"] == "user-7"
    assert_error(client.get(f"{BASE}/{created.json()['conversationId']}", headers=bearer(user)), 404)

    monkeypatch.setenv("ALLOW_ANONYMOUS", "false")
    closed = TestClient(create_app(ALL_ROUTERS))
    assert_error(closed.post(BASE, json={}, headers=bearer(token)), 401)


def test_guest_conversations_are_purged_not_archived_and_their_audit_is_kept(
    own_tables,
    chroma_url,
    fake_llm,
    monkeypatch,  # the purge removes memory fragments from Chroma
    aws_clients,
):
    monkeypatch.setenv("ALLOW_ANONYMOUS", "true")
    monkeypatch.setenv("LOOP_INITIAL_RAG", "false")
    monkeypatch.setenv("ARCHIVE_AFTER_DAYS", "0")
    for key, value in fake_llm.settings_for("openai_compatible").items():
        monkeypatch.setenv(key.upper(), str(value))
    client = TestClient(create_app(ALL_ROUTERS))
    token = guest_token(client)
    cid = client.post(BASE, json={}, headers=bearer(token)).json()["conversationId"]
    fake_llm.script(text_reply("Hello."))
    assert (
        client.post(f"{BASE}/{cid}/messages", json={"message": "Hi"}, headers=bearer(token)).status_code
        == 200
    )

    first = run_archival(load_settings(), aws_clients, remaining_ms=lambda: 10**9)
    assert (first.archived, first.purged) == (0, 0)  # a guest's conversation is never archived
    assert client.get(f"{BASE}/{cid}", headers=bearer(token)).json()["status"] == "ACTIVE"

    later = run_archival(
        load_settings(), aws_clients, remaining_ms=lambda: 10**9, now=utcnow() + timedelta(hours=25)
    )
    assert later.purged == 1
    assert_error(client.get(f"{BASE}/{cid}", headers=bearer(token)), 404)
    admin = {"X-Caller-Id": "root", "X-Caller-Roles": "admin"}
    trail = client.get("/api/v1/admin/audit", params={"conversationId": cid}, headers=admin).json()
    assert trail["chainValid"] and [r["actor"]["roles"] for r in trail["records"]] == [["anonymous"]]


def mint(client: TestClient):
    return client.post("/api/v1/auth/guest")


def test_one_address_mints_at_most_guest_mints_per_hour_across_instances(aws_stack, monkeypatch):
    """The issue's 100 guests in 0.1 s: counted per source address on the table, so two instances
    (two apps here) share the count; another address is counted apart."""
    monkeypatch.setenv("ALLOW_ANONYMOUS", "true")
    monkeypatch.setenv("GUEST_MINTS_PER_HOUR", "3")
    address = f"203.0.113.{uuid.uuid4().int % 250 + 1}"
    one, two = (TestClient(create_app(ALL_ROUTERS), client=(address, 4242)) for _ in range(2))
    hour = datetime.now(UTC).hour
    statuses = [mint(client).status_code for client in (one, two, one, two, one)]
    if datetime.now(UTC).hour != hour:  # the count started again with a new hour: count once more
        statuses = [mint(client).status_code for client in (one, two, one, two, one)]
    assert statuses == [201, 201, 201, 429, 429]
    refused = assert_error(mint(one), 429)
    assert refused["error"] == "Too many requests" and "at most 3 an hour" in refused["message"]
    assert 1 <= int(mint(two).headers["retry-after"]) <= 3600
    elsewhere = TestClient(create_app(ALL_ROUTERS), client=(f"198.51.100.{uuid.uuid4().int % 250 + 1}", 1))
    assert mint(elsewhere).status_code == 201


def test_guests_spend_their_own_daily_tokens_and_all_guests_theirs(own_tables, fake_llm, monkeypatch):
    """A guest had no budget at all; now each spends at most GUEST_TOKENS_PER_DAY, all together
    GUEST_TOKENS_PER_DAY_TOTAL (a table of this test's own: the day's counter is shared)."""
    monkeypatch.setenv("ALLOW_ANONYMOUS", "true")
    monkeypatch.setenv("LOOP_INITIAL_RAG", "false")
    monkeypatch.setenv("GUEST_TOKENS_PER_DAY", "18")  # a reply costs 18 (11 + 7): one turn each
    monkeypatch.setenv("GUEST_TOKENS_PER_DAY_TOTAL", "30")  # and two guests' turns in all
    for key, value in fake_llm.settings_for("openai_compatible").items():
        monkeypatch.setenv(key.upper(), str(value))
    client = TestClient(create_app(ALL_ROUTERS))

    def chat(token: str) -> object:
        cid = client.post(BASE, json={}, headers=bearer(token)).json()["conversationId"]
        fake_llm.script(text_reply("Hello."))
        return client.post(f"{BASE}/{cid}/messages", json={"message": "Hi"}, headers=bearer(token))

    first, second, third = (guest_token(client) for _ in range(3))
    assert chat(first).status_code == 200
    spent = assert_error(chat(first), 429)  # its own day: 18 of 18 used, the next turn may not start
    assert "token budget is spent (18 of 18)" in spent["message"]
    usage = client.get("/api/v1/usage", headers=bearer(first)).json()
    assert (usage["tokensUsed"], usage["tokensLimit"]) == (18, 18)
    assert chat(second).status_code == 200  # all guests: 18 of 30 before it, 36 after
    refused = assert_error(chat(third), 429)
    assert refused["message"].startswith("Guests have used today's tokens")
    assert int(chat(third).headers["retry-after"]) >= 1


def test_a_guest_erases_exports_and_shares_only_its_own(chroma_url, guests, fake_llm):
    guest, other = bearer(guest_token(guests)), bearer(guest_token(guests))
    mine = guests.post("/api/v1/chat/conversations", json={}, headers=guest).json()["conversationId"]
    theirs = guests.post("/api/v1/chat/conversations", json={}, headers=other).json()["conversationId"]

    assert_error(guests.delete("/api/v1/admin/callers/alice", headers=guest), 403)  # nobody else
    assert_error(guests.post(f"/api/v1/chat/conversations/{theirs}/shares", headers=guest), 404)
    shared = guests.post(f"/api/v1/chat/conversations/{mine}/shares", headers=guest)
    assert shared.status_code == 201, shared.text
    exported = guests.post("/api/v1/me/exports", headers=guest)
    assert exported.status_code == 202, exported.text
    assert_error(guests.get(f"/api/v1/me/exports/{exported.json()['exportId']}", headers=other), 404)

    erased = guests.delete("/api/v1/me", headers=guest)  # itself
    assert erased.status_code == 202, erased.text
    guests.app.state.services.lifecycle.dispatcher.wait()
    assert_error(guests.get(f"/api/v1/chat/conversations/{mine}", headers=guest), 404)
    assert guests.get(f"/api/v1/shared/{shared.json()['shareId']}").status_code == 404
    assert guests.get(f"/api/v1/chat/conversations/{theirs}", headers=other).status_code == 200

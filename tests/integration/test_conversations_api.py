"""The conversation endpoints over HTTP against the moto server (DynamoDB + S3 from template.yaml)."""

import asyncio
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import create_app
from rag_orchestrator.conversations.turn_data import Claim, TurnOutcome
from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.messages import Role
from rag_orchestrator.errors import Conflict

pytestmark = pytest.mark.integration

BASE = "/api/v1/chat/conversations"


@pytest.fixture
def caller() -> str:
    return f"caller-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def client(aws_stack, monkeypatch) -> TestClient:
    monkeypatch.setenv("MAX_REQUEST_BYTES", "4096")
    return TestClient(create_app(["health", "conversations"]))


def as_(caller: str) -> dict:
    return {"X-Caller-Id": caller}


def assert_error(response, status: int) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "message", "timestamp", "requestId"}
    return body


def conversation_count(aws_stack, caller: str) -> int:
    dynamodb = boto3.client("dynamodb", endpoint_url=aws_stack["endpoint"])
    return dynamodb.query(
        TableName=aws_stack["CONVERSATIONS_TABLE"],
        IndexName="ByCaller",
        KeyConditionExpression="GSI1PK = :p",
        ExpressionAttributeValues={":p": {"S": f"CALLER#{caller}"}},
        Select="COUNT",
    )["Count"]


def test_create_get_list_messages_delete(client, caller):
    created = client.post(
        BASE,
        json={"userId": "u-1", "initialMessage": "Hello there", "metadata": {"channel": "web"}},
        headers=as_(caller),
    )
    assert created.status_code == 201, created.text
    body = created.json()
    cid = body["conversationId"]
    assert body["callerId"] == caller
    assert (body["status"], body["messageCount"], body["userId"]) == ("ACTIVE", 1, "u-1")
    assert body["metadata"] == {"channel": "web"}

    assert client.get(f"{BASE}/{cid}", headers=as_(caller)).json() == body
    listed = client.get(BASE, headers=as_(caller)).json()
    assert [c["conversationId"] for c in listed["items"]] == [cid]
    assert listed["nextCursor"] is None

    messages = client.get(f"{BASE}/{cid}/messages", headers=as_(caller)).json()
    assert [(m["role"], m["content"]) for m in messages["items"]] == [("user", "Hello there")]
    assert "reasoning" not in messages["items"][0]

    deleted = client.delete(f"{BASE}/{cid}", headers=as_(caller))
    assert deleted.status_code == 204
    assert deleted.content == b""
    assert_error(client.get(f"{BASE}/{cid}", headers=as_(caller)), 404)
    assert_error(client.delete(f"{BASE}/{cid}", headers=as_(caller)), 404)
    assert client.get(BASE, headers=as_(caller)).json()["items"] == []


def test_reasoning_never_reaches_the_client(client, caller):
    cid = client.post(BASE, json={}, headers=as_(caller)).json()["conversationId"]
    store = client.app.state.services.store
    question = ConversationMessage(conversation_id=cid, role=Role.USER, content="?")
    answer = ConversationMessage(
        conversation_id=cid, role=Role.ASSISTANT, content="42", reasoning="SECRET-TRACE"
    )
    asyncio.run(store.start_turn(Claim(cid, caller, 300), question))
    asyncio.run(store.finish_turn(cid, TurnOutcome([answer], tool_calls=0, tokens=1)))
    response = client.get(f"{BASE}/{cid}/messages", headers=as_(caller))
    assert response.json()["items"][1]["content"] == "42"
    assert "SECRET-TRACE" not in response.text
    assert "reasoning" not in response.text


def test_listing_pages_with_a_cursor(client, caller):
    made = [client.post(BASE, json={}, headers=as_(caller)).json()["conversationId"] for _ in range(5)]
    first = client.get(BASE, params={"limit": 2}, headers=as_(caller)).json()
    second = client.get(BASE, params={"limit": 2, "cursor": first["nextCursor"]}, headers=as_(caller)).json()
    third = client.get(BASE, params={"limit": 2, "cursor": second["nextCursor"]}, headers=as_(caller)).json()
    listed = [c["conversationId"] for page in (first, second, third) for c in page["items"]]
    assert listed == list(reversed(made))
    assert third["nextCursor"] is None
    active = client.get(BASE, params={"status": "ACTIVE", "limit": 100}, headers=as_(caller)).json()
    assert len(active["items"]) == 5
    assert client.get(BASE, params={"status": "ARCHIVED"}, headers=as_(caller)).json()["items"] == []


def test_another_caller_sees_nothing(client, caller):
    cid = client.post(BASE, json={}, headers=as_(caller)).json()["conversationId"]
    for _ in range(2):
        client.post(BASE, json={}, headers=as_(caller))
    cursor = client.get(BASE, params={"limit": 1}, headers=as_(caller)).json()["nextCursor"]
    other = as_("someone-else")
    missing = assert_error(client.get(f"{BASE}/{uuid.uuid4()}", headers=other), 404)
    foreign = assert_error(client.get(f"{BASE}/{cid}", headers=other), 404)
    assert missing["error"] == foreign["error"] == "Conversation not found"
    assert_error(client.get(f"{BASE}/{cid}/messages", headers=other), 404)
    assert_error(client.delete(f"{BASE}/{cid}", headers=other), 404)
    assert client.get(BASE, headers=other).json() == {"items": [], "nextCursor": None}
    assert_error(client.get(BASE, params={"cursor": cursor}, headers=other), 400)
    assert client.get(f"{BASE}/{cid}", headers=as_(caller)).status_code == 200


def test_no_caller_is_401(client):
    body = assert_error(client.get(BASE), 401)
    assert body["error"] == "Unauthorized"
    assert_error(client.post(BASE, json={}), 401)


def test_a_body_field_cannot_choose_the_caller(client, caller, aws_stack):
    """Older clients send callerId: the authenticated caller's is ignored, another's is 403."""
    response = client.post(BASE, json={"callerId": "victim"}, headers=as_(caller))
    assert (
        assert_error(response, 403)["message"] == "callerId names another caller than the authenticated one"
    )
    assert conversation_count(aws_stack, caller) == 0 and conversation_count(aws_stack, "victim") == 0
    own = client.post(BASE, json={"callerId": caller, "userId": "u-7"}, headers=as_(caller))
    assert own.status_code == 201 and own.json()["callerId"] == caller and own.json()["userId"] == "u-7"


def test_the_listing_filters_by_user_id_and_a_created_at_range(client, caller):
    made = [
        client.post(BASE, json={"userId": user}, headers=as_(caller)).json() for user in ("u-1", "u-2", "u-1")
    ]
    other = client.post(BASE, json={"userId": "u-1"}, headers=as_("someone-else"))
    assert other.status_code == 201

    def listed(**params) -> list[str]:
        response = client.get(BASE, params=params, headers=as_(caller))
        assert response.status_code == 200, response.text
        return sorted(c["conversationId"] for c in response.json()["items"])

    assert listed(userId="u-1") == sorted(made[i]["conversationId"] for i in (0, 2))
    second = made[1]["createdAt"]
    assert listed(**{"from": second}) == sorted(c["conversationId"] for c in made[1:])
    assert listed(**{"to": second}) == sorted(c["conversationId"] for c in made[:2])
    assert listed(**{"from": second, "to": second, "userId": "u-2"}) == [made[1]["conversationId"]]
    assert listed(**{"from": "2000-01-01T00:00:00", "to": "2000-01-02T00:00:00+00:00"}) == []
    assert assert_error(
        client.get(BASE, params={"from": second, "to": "2000-01-01T00:00:00Z"}, headers=as_(caller)), 400
    )
    assert_error(client.get(BASE, params={"from": "yesterday"}, headers=as_(caller)), 422)


@pytest.mark.parametrize("storage", ["dynamodb", "memory"])
def test_dates_at_the_ends_of_time_list_from_the_beginning_or_to_the_end(
    aws_stack, monkeypatch, caller, storage
):
    """Valid ISO 8601 whose UTC falls outside what datetime holds: from the beginning, to the end."""
    monkeypatch.setenv("CONVERSATION_STORAGE", storage)
    client = TestClient(create_app(["health", "conversations"]))
    made = client.post(BASE, json={}, headers=as_(caller)).json()["conversationId"]
    for params in (
        {"from": "0001-01-01T00:00:00+14:00"},
        {"to": "9999-12-31T23:59:59-14:00"},
        {"from": "0001-01-01T00:00:00+14:00", "to": "9999-12-31T23:59:59-14:00", "limit": 1},
        {"from": "0500-01-01T00:00:00Z"},  # a year under 1000 sorts as one too
    ):
        response = client.get(BASE, params=params, headers=as_(caller))
        assert response.status_code == 200, (params, response.text)
        assert [c["conversationId"] for c in response.json()["items"]] == [made], params
    after_all = client.get(BASE, params={"from": "9999-12-31T23:59:59-14:00"}, headers=as_(caller))
    assert after_all.status_code == 200 and after_all.json()["items"] == [], after_all.text


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ('{"initialMessage": "   "}', 422),
        ('{"userId": ""}', 422),
        ('{"initialMessage": 5}', 422),
        ('{"metadata": {"k": 1}}', 422),
        ('{"metadata": "x"}', 422),
        ('{"unknownField": true}', 422),
        ('{"initialMessage": "hi"', 400),
        ("not json", 400),
        ("[]", 422),
    ],
)
def test_bad_bodies_write_nothing(client, caller, aws_stack, body, status):
    response = client.post(BASE, content=body, headers=as_(caller) | {"Content-Type": "application/json"})
    assert_error(response, status)
    assert conversation_count(aws_stack, caller) == 0


def test_an_oversized_field_is_422_and_an_oversized_body_413(client, caller, aws_stack):
    assert_error(client.post(BASE, json={"userId": "u" * 101}, headers=as_(caller)), 422)
    body = assert_error(client.post(BASE, json={"initialMessage": "x" * 5000}, headers=as_(caller)), 413)
    assert "4096" in body["message"]
    assert conversation_count(aws_stack, caller) == 0


@pytest.mark.parametrize(
    "params",
    [
        {"limit": 0},
        {"limit": 101},
        {"limit": "ten"},
        {"status": "DELETED"},
        {"status": "nope"},
        {"cursor": ""},
    ],
)
def test_bad_query_parameters_are_422(client, caller, params):
    assert_error(client.get(BASE, params=params, headers=as_(caller)), 422)


@pytest.mark.parametrize("cursor", ["garbage", "e30.AAAAAAAAAAAAAAAAAAAAAA", "a" * 2000])
def test_bad_cursors_are_400(client, caller, cursor):
    cid = client.post(BASE, json={}, headers=as_(caller)).json()["conversationId"]
    assert_error(client.get(BASE, params={"cursor": cursor}, headers=as_(caller)), 400)
    assert_error(client.get(f"{BASE}/{cid}/messages", params={"cursor": cursor}, headers=as_(caller)), 400)


@pytest.mark.parametrize("bad_id", ["not-a-uuid", "1234", "' OR 1=1 --", "x" * 100])
def test_malformed_ids_are_404(client, caller, bad_id):
    assert_error(client.get(f"{BASE}/{bad_id}", headers=as_(caller)), 404)
    assert_error(client.get(f"{BASE}/{bad_id}/messages", headers=as_(caller)), 404)
    assert_error(client.delete(f"{BASE}/{bad_id}", headers=as_(caller)), 404)


@pytest.fixture
def small_table(aws_stack, monkeypatch) -> str:
    """A table of its own: moto snapshots every table a transaction names, so keep it small."""
    from devserver.resources import create_resources

    name = f"concurrency-{uuid.uuid4().hex[:8]}"
    create_resources(name, [])
    monkeypatch.setenv("CONVERSATIONS_TABLE", name)
    return name


def test_20_concurrent_turns_count_exactly(small_table, client, caller):
    """Turns in 20 conversations at once. (Turns racing for one conversation's lock are covered
    by the memory store: moto rolls a cancelled transaction back by restoring a snapshot of the
    whole table, which would undo the winner's concurrent write, something DynamoDB never does.)"""
    ids = [client.post(BASE, json={}, headers=as_(caller)).json()["conversationId"] for _ in range(20)]
    store = client.app.state.services.store
    barrier = threading.Barrier(20)

    async def take_turn(cid: str) -> None:
        user = ConversationMessage(conversation_id=cid, role=Role.USER, content="q", token_count=1)
        await store.start_turn(Claim(cid, caller, 300), user, "client-1")
        answer = ConversationMessage(conversation_id=cid, role=Role.ASSISTANT, content="a", token_count=2)
        await store.finish_turn(cid, TurnOutcome([answer], tool_calls=3, tokens=10))

    def turn(cid: str) -> None:
        barrier.wait()
        asyncio.run(take_turn(cid))

    with ThreadPoolExecutor(max_workers=20) as pool:
        list(pool.map(turn, ids))
    for cid in ids:
        body = client.get(f"{BASE}/{cid}", headers=as_(caller)).json()
        assert (body["messageCount"], body["toolCallsCount"], body["totalTokens"]) == (2, 3, 11)
    listed = client.get(BASE, params={"limit": 100}, headers=as_(caller)).json()["items"]
    assert sorted(c["conversationId"] for c in listed) == sorted(ids)
    with pytest.raises(Conflict):
        asyncio.run(
            store.start_turn(
                Claim(ids[0], caller, 300),
                ConversationMessage(conversation_id=ids[0], role=Role.USER, content="q"),
                "client-1",
            )
        )

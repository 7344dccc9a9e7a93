"""Sharing as deployed (DynamoDB and S3 on the moto server): a snapshot as of sharing, read without auth,
revoked by the owner, by deleting the conversation and by erasing its caller."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient

from tests.fakes.llm_script import text_reply
from tests.integration.test_archive_function import thinking_chat
from tests.integration.test_erasure import erase, who

pytestmark = pytest.mark.integration

BASE = "/api/v1/chat/conversations"


@pytest.fixture
def chat(own_tables, chroma_url, fake_llm, monkeypatch) -> TestClient:
    return thinking_chat(fake_llm, monkeypatch)


def talked(chat: TestClient, fake_llm, caller: dict) -> str:
    cid = chat.post(BASE, json={"title": "Ports", "metadata": {"k": "secret-meta"}}, headers=caller).json()[
        "conversationId"
    ]
    fake_llm.script(text_reply("Port 8000 [source:guide#0].", reasoning="REASONING-MARKER"))
    assert (
        chat.post(f"{BASE}/{cid}/messages", json={"message": "Which port?"}, headers=caller).status_code
        == 200
    )
    return cid


def share(chat: TestClient, cid: str, caller: dict) -> dict:
    created = chat.post(f"{BASE}/{cid}/shares", headers=caller)
    assert created.status_code == 201, created.text
    return created.json()


def test_a_share_is_a_snapshot_read_without_auth_and_the_owner_revokes_it(chat, fake_llm):
    alice = {"X-Caller-Id": who()}
    cid = talked(chat, fake_llm, alice)
    created = share(chat, cid, alice)
    assert created["url"].endswith(f"/api/v1/shared/{created['shareId']}")

    fake_llm.script(text_reply("Later answer."))
    chat.post(f"{BASE}/{cid}/messages", json={"message": "And later?"}, headers=alice)
    read = chat.get(f"/api/v1/shared/{created['shareId']}")  # no caller at all
    assert read.status_code == 200, read.text
    body = read.json()
    assert body["title"] == "Ports"
    assert [(m["role"], m["content"], m["sources"]) for m in body["messages"]] == [
        ("user", "Which port?", []),
        ("assistant", "Port 8000 [source:guide#0].", ["guide#0"]),
    ]  # as of sharing: the later turn is not in it
    text = read.text
    assert alice["X-Caller-Id"] not in text and "secret-meta" not in text and "REASONING" not in text

    other = {"X-Caller-Id": who()}
    assert chat.delete(f"{BASE}/{cid}/shares/{created['shareId']}", headers=other).status_code == 404
    assert chat.post(f"{BASE}/{cid}/shares", headers=other).status_code == 404  # not theirs to share
    assert chat.delete(f"{BASE}/{cid}/shares/{created['shareId']}", headers=alice).status_code == 204
    assert chat.get(f"/api/v1/shared/{created['shareId']}").status_code == 404
    assert chat.delete(f"{BASE}/{cid}/shares/{created['shareId']}", headers=alice).status_code == 404
    for unknown in (str(uuid.uuid4()), "nope"):
        response = chat.get(f"/api/v1/shared/{unknown}")
        assert response.status_code == 404 and response.json()["error"] == "Share not found"


def test_deleting_the_conversation_or_erasing_its_caller_revokes_every_share(chat, fake_llm):
    alice = {"X-Caller-Id": who()}
    deleted, erased = talked(chat, fake_llm, alice), talked(chat, fake_llm, alice)
    gone = [share(chat, deleted, alice)["shareId"], share(chat, deleted, alice)["shareId"]]
    kept = share(chat, erased, alice)["shareId"]
    assert chat.delete(f"{BASE}/{deleted}", headers=alice).status_code == 204
    assert [chat.get(f"/api/v1/shared/{s}").status_code for s in gone] == [404, 404]
    assert chat.post(f"{BASE}/{deleted}/shares", headers=alice).status_code == 404  # a deleted one: 404
    assert chat.get(f"/api/v1/shared/{kept}").status_code == 200

    job = erase(chat, alice["X-Caller-Id"])
    assert job["status"] == "COMPLETED"
    assert chat.get(f"/api/v1/shared/{kept}").status_code == 404

"""The audit trail as deployed: turns through the app on the moto server (DynamoDB + S3), a real Chroma
and the fake LLM; records altered or removed straight in DynamoDB and S3; archival and purge."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

import boto3
import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.config import load_settings
from rag_orchestrator.conversations.archival import run_archival
from rag_orchestrator.domain.audit import GENESIS
from rag_orchestrator.domain.base import utcnow
from tests.fakes.llm_script import text_reply, tool_calls_reply
from tests.integration.test_archive_function import thinking_chat

pytestmark = pytest.mark.integration

BASE = "/api/v1/chat/conversations"
AUDIT = "/api/v1/admin/audit"
ALICE = {"X-Caller-Id": "alice"}
ADMIN = {"X-Caller-Id": "root", "X-Caller-Roles": "admin"}
MODERATOR = {"X-Caller-Id": "mo", "X-Caller-Roles": "moderator"}
REASONING = "REASONING-MARKER"
FAR = 10**9


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical_hash(record: dict) -> str:
    fields = {k: v for k, v in record.items() if k not in ("hash", "callerId")}  # the plain id is outside
    return sha(json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


@pytest.fixture
def chat(own_tables, chroma_url, fake_llm, monkeypatch) -> TestClient:
    return thinking_chat(fake_llm, monkeypatch)


@pytest.fixture
def dynamodb(own_tables):
    return boto3.client("dynamodb", endpoint_url=own_tables["endpoint"])


def turn(chat: TestClient, cid: str, text: str) -> None:
    response = chat.post(f"{BASE}/{cid}/messages", json={"message": text}, headers=ALICE)
    assert response.status_code == 200, response.text


def talked(chat: TestClient, fake_llm, turns: int) -> str:
    cid = chat.post(BASE, json={}, headers=ALICE).json()["conversationId"]
    for n in range(turns):
        fake_llm.script(text_reply(f"Answer {n}.", reasoning=f"{REASONING} {n}"))
        turn(chat, cid, f"Question {n}?")
    return cid


def audit(chat: TestClient, cid: str, headers=ADMIN, **params) -> dict:
    response = chat.get(AUDIT, params={"conversationId": cid, **params}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def audit_keys(dynamodb, table: str, cid: str) -> list[dict]:
    items = dynamodb.query(
        TableName=table,
        KeyConditionExpression="PK = :pk AND begins_with(SK, :audit)",
        ExpressionAttributeValues={":pk": {"S": f"CONV#{cid}"}, ":audit": {"S": "AUDIT#"}},
        ConsistentRead=True,
    )["Items"]
    return [{"PK": item["PK"], "SK": item["SK"]} for item in items]


def test_a_turn_with_two_tool_calls_is_one_record_with_the_right_hashes(chat, fake_llm):
    fake_llm.script(
        tool_calls_reply(
            [
                ("rag_search", {"query": "dev server port"}, "call_a"),
                ("rag_search", {"query": "port"}, "call_b"),
            ],
            reasoning=REASONING + " first",
        ),
        text_reply("Port 8000 [source:guide#0].", reasoning=REASONING + " second"),
    )
    cid = chat.post(BASE, json={}, headers=ALICE).json()["conversationId"]
    sent = chat.post(
        f"{BASE}/{cid}/messages", json={"message": "Which port?"}, headers=ALICE | {"X-Request-Id": "req-42"}
    )
    assert sent.status_code == 200, sent.text

    body = audit(chat, cid)
    assert audit(chat, cid, headers=MODERATOR) == body  # `moderator` is `mod`
    assert body["chainValid"] is True and body["nextCursor"] is None
    (record,) = body["records"]
    question, calling, result_a, result_b, answer = chat.get(f"{BASE}/{cid}/messages", headers=ALICE).json()[
        "items"
    ]
    assert record["userMessage"] == {
        "messageId": question["messageId"],
        "sha256": sha("Which port?"),
        "length": 11,
    }
    calls = {c["function"]["name"] + c["id"]: c["function"]["arguments"] for c in calling["toolCalls"]}
    assert [c["toolCallId"] for c in record["toolCalls"]] == ["call_a", "call_b"]
    for audited, result in zip(record["toolCalls"], (result_a, result_b), strict=True):
        assert audited["arguments"]["sha256"] == sha(calls["rag_search" + audited["toolCallId"]])
        assert audited["result"] == {
            "sha256": sha(result["content"]),
            "length": len(result["content"].encode()),
        }
        assert (audited["toolName"], audited["success"]) == ("rag_search", True)
    assert record["answer"] == {
        "messageId": answer["messageId"],
        "sha256": sha(answer["content"]),
        "length": len(answer["content"].encode()),
    }
    assert record["reasoning"]["sha256"] == sha(f"{REASONING} first\n\n{REASONING} second")
    assert record["actor"] == {"roles": ["user"]} and record["callerId"] == "alice"
    assert len(record["actorRef"]) == 64 and "alice" not in record["actorRef"]  # an HMAC, in the hash
    assert (record["clientRequestId"], record["model"], record["iterations"]) == ("req-42", "qwen-plus", 2)
    assert record["requestId"] == sent.headers["x-request-id"] != "req-42"  # ours, never the client's
    assert (record["outcome"], record["finishReason"]) == ("completed", "stop")
    assert record["tokens"] == sent.json()["tokensUsed"] > 0
    assert record["prevHash"] == GENESIS and record["hash"] == canonical_hash(record)
    assert REASONING not in json.dumps(body) and "Port 8000" not in json.dumps(body)


def test_altering_or_removing_a_record_in_dynamodb_breaks_the_chain(chat, fake_llm, dynamodb, own_tables):
    table = own_tables["CONVERSATIONS_TABLE"]
    cid = talked(chat, fake_llm, 3)
    records = audit(chat, cid)["records"]
    assert [r["prevHash"] for r in records] == [GENESIS, records[0]["hash"], records[1]["hash"]]
    _, middle, last = audit_keys(dynamodb, table, cid)

    def set_tokens(key: dict, value: int) -> None:
        dynamodb.update_item(
            TableName=table,
            Key=key,
            UpdateExpression="SET tokens = :t",
            ExpressionAttributeValues={":t": {"N": str(value)}},
        )

    set_tokens(middle, 1)
    assert audit(chat, cid)["chainValid"] is False
    set_tokens(middle, records[1]["tokens"])
    assert audit(chat, cid)["chainValid"] is True  # as sealed again

    pages = [audit(chat, cid, limit=1)]
    while pages[-1]["nextCursor"]:
        pages.append(audit(chat, cid, limit=1, cursor=pages[-1]["nextCursor"]))
    assert [p["chainValid"] for p in pages] == [True, True, True]
    assert [p["records"][0] for p in pages] == records

    saved = dynamodb.get_item(TableName=table, Key=last, ConsistentRead=True)["Item"]
    dynamodb.delete_item(TableName=table, Key=last)  # the last one: only META's head notices
    assert audit(chat, cid)["chainValid"] is False
    dynamodb.put_item(TableName=table, Item=saved)
    assert audit(chat, cid)["chainValid"] is True
    dynamodb.delete_item(TableName=table, Key=middle)
    broken = audit(chat, cid)
    assert broken["chainValid"] is False and len(broken["records"]) == 2


def test_a_trail_whose_records_were_all_deleted_or_whose_head_is_broken_is_not_valid(
    chat, fake_llm, dynamodb, own_tables
):
    """The issue's finding: every record deleted and the head broken read `chainValid: true`. Now
    META's auditCount must match the records, and the head must be there and well-formed."""
    table = own_tables["CONVERSATIONS_TABLE"]
    meta = {"PK": {"S": ""}, "SK": {"S": "META"}}

    def head(cid: str, expression: str, values: dict | None = None) -> None:
        params = {"ExpressionAttributeValues": values} if values else {}
        dynamodb.update_item(
            TableName=table, Key=meta | {"PK": {"S": f"CONV#{cid}"}}, UpdateExpression=expression, **params
        )

    emptied, broken, headless = (talked(chat, fake_llm, 2) for _ in range(3))
    for cid in (emptied, broken, headless):
        assert audit(chat, cid)["chainValid"] is True
    stored = dynamodb.get_item(TableName=table, Key=meta | {"PK": {"S": f"CONV#{emptied}"}})["Item"]
    assert stored["auditCount"] == {"N": "2"}

    for key in audit_keys(dynamodb, table, emptied):  # every record gone, and the head with them
        dynamodb.delete_item(TableName=table, Key=key)
    head(emptied, "REMOVE lastAuditHash")
    assert audit(chat, emptied) == {"records": [], "chainValid": False, "nextCursor": None}

    head(broken, "SET lastAuditHash = :h", {":h": {"S": "not-a-hash"}})  # records intact, head malformed
    assert audit(chat, broken)["chainValid"] is False

    head(headless, "REMOVE lastAuditHash")  # records intact, head missing
    assert audit(chat, headless)["chainValid"] is False
    pages = [audit(chat, headless, limit=1)]  # paged alike: the count travels in the cursor
    pages.append(audit(chat, headless, limit=1, cursor=pages[0]["nextCursor"]))
    assert [p["chainValid"] for p in pages] == [True, False]


def test_only_admins_and_moderators_read_it(chat, fake_llm):
    cid = talked(chat, fake_llm, 1)
    for headers, status in (
        (ALICE, 403),
        ({"X-Caller-Id": "support", "X-Caller-Roles": "support"}, 403),
        ({}, 401),
    ):
        response = chat.get(AUDIT, params={"conversationId": cid}, headers=headers)
        assert response.status_code == status, headers
        assert set(response.json()) == {"error", "message", "timestamp", "requestId"}
    missing = chat.get(
        AUDIT, params={"conversationId": "9d4c2f1e-5b6a-4e3d-8c7b-0a1f2e3d4c5b"}, headers=ADMIN
    )
    assert missing.status_code == 404
    assert chat.get(AUDIT, headers=ADMIN).status_code == 422  # conversationId is required
    fresh = chat.post(BASE, json={}, headers=ALICE).json()["conversationId"]
    assert audit(chat, fresh) == {"records": [], "chainValid": True, "nextCursor": None}


def test_archived_trails_are_read_back_from_s3_and_checked(
    chat, fake_llm, own_tables, monkeypatch, aws_clients
):
    cid = talked(chat, fake_llm, 2)
    before = audit(chat, cid)
    monkeypatch.setenv("ARCHIVE_AFTER_DAYS", "0")
    report = run_archival(load_settings(), aws_clients, remaining_ms=lambda: FAR)
    assert report.archived == 1
    s3 = boto3.client("s3", endpoint_url=own_tables["endpoint"])
    key = f"audit/alice/{cid}.jsonl"
    lines = (
        s3.get_object(Bucket=own_tables["TRANSCRIPTS_BUCKET"], Key=key)["Body"].read().decode().splitlines()
    )
    assert [json.loads(line) for line in lines] == before["records"]
    assert audit(chat, cid) == before  # read back from S3, the table's records gone

    fake_llm.script(text_reply("Answer 2.", reasoning=REASONING))
    turn(chat, cid, "Question 2?")  # continued: the new record chains onto the archived ones
    after = audit(chat, cid)
    assert after["chainValid"] is True and after["records"][:2] == before["records"]
    assert after["records"][2]["prevHash"] == before["records"][1]["hash"]
    paged = audit(chat, cid, limit=2)
    assert paged["chainValid"] and audit(chat, cid, limit=2, cursor=paged["nextCursor"])["chainValid"]

    altered = json.loads(lines[0]) | {"tokens": 0}
    body = "\n".join([json.dumps(altered), lines[1]]) + "\n"
    s3.put_object(Bucket=own_tables["TRANSCRIPTS_BUCKET"], Key=key, Body=body.encode())
    assert audit(chat, cid)["chainValid"] is False


def test_a_purged_conversation_keeps_its_trail_for_the_retention_then_loses_it(
    chat,
    fake_llm,
    dynamodb,
    own_tables,
    monkeypatch,
    aws_clients,
):
    table = own_tables["CONVERSATIONS_TABLE"]
    cid = talked(chat, fake_llm, 2)
    monkeypatch.setenv("ARCHIVE_AFTER_DAYS", "0")
    run_archival(load_settings(), aws_clients, remaining_ms=lambda: FAR)  # its older records go to S3
    fake_llm.script(text_reply("Answer 2.", reasoning=REASONING))
    turn(chat, cid, "Question 2?")  # and one stays in the table
    before = audit(chat, cid)
    assert chat.delete(f"{BASE}/{cid}", headers=ALICE).status_code == 204
    assert audit(chat, cid) == before  # a deleted conversation's trail is still there

    settings = load_settings(deleted_retention_days=30, audit_retention_days=365)
    report = run_archival(settings, aws_clients, remaining_ms=lambda: FAR, now=utcnow() + timedelta(days=31))
    assert report.purged == 1
    assert chat.get(f"{BASE}/{cid}/messages", headers=ALICE).status_code == 404
    keys = [
        k["SK"]["S"]
        for k in dynamodb.query(
            TableName=table,
            KeyConditionExpression="PK = :pk",
            ExpressionAttributeValues={":pk": {"S": f"CONV#{cid}"}},
            ConsistentRead=True,
        )["Items"]
    ]
    assert [k for k in keys if not k.startswith("AUDIT#")] == ["AUDIT$"]  # META and messages gone
    kept = dynamodb.get_item(TableName=table, Key=audit_keys(dynamodb, table, cid)[0])["Item"]
    deleted_at = utcnow()
    assert abs(int(kept["expiresAt"]["N"]) - (deleted_at + timedelta(days=372)).timestamp()) < 3600
    assert audit(chat, cid) == before  # read from the AUDIT$ head and the S3 trail

    again = run_archival(settings, aws_clients, remaining_ms=lambda: FAR, now=utcnow() + timedelta(days=300))
    assert again.trails_expired == 0 and audit(chat, cid) == before
    last = run_archival(settings, aws_clients, remaining_ms=lambda: FAR, now=utcnow() + timedelta(days=366))
    assert last.trails_expired == 1
    assert chat.get(AUDIT, params={"conversationId": cid}, headers=ADMIN).status_code == 404
    s3 = boto3.client("s3", endpoint_url=own_tables["endpoint"])
    versions = s3.list_object_versions(Bucket=own_tables["TRANSCRIPTS_BUCKET"], Prefix=f"audit/alice/{cid}")
    assert not versions.get("Versions") and not versions.get("DeleteMarkers")

"""Erasure as deployed: a caller with data in every store (DynamoDB and S3 on the moto server, a real
Chroma), erased through the routes and the same job LifecycleFunction runs; then the table, the buckets
and the memory collection scanned for anything of that caller."""

from __future__ import annotations

import json
import uuid
import zlib
from datetime import timedelta

import boto3
import httpx
import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.config import load_settings
from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.archival import run_archival
from rag_orchestrator.conversations.archive_steps import ConversationArchiver
from rag_orchestrator.conversations.cursors import actor_key
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.domain.audit import actor_ref
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.lifecycle.jobs import ErasureJobs, ErasureRequest
from rag_orchestrator.lifecycle.runner import caller_eraser
from rag_orchestrator.retrieval.fragments import attachment_segment
from tests.fakes.llm_script import text_reply
from tests.integration.knowledge import memory
from tests.integration.test_archive_function import thinking_chat

pytestmark = pytest.mark.integration

BASE = "/api/v1/chat/conversations"
ADMIN = {"X-Caller-Id": "root", "X-Caller-Roles": "admin"}
FAR = 10**9


class Killed(Exception):
    """What a test raises at a checkpoint: the function stopped there."""


@pytest.fixture
def chat(own_tables, chroma_url, fake_llm, monkeypatch) -> TestClient:
    monkeypatch.setenv("BUDGET_TOKENS_PER_DAY", "1000000")  # so usage is counted
    return thinking_chat(fake_llm, monkeypatch)


def who() -> str:
    return f"user-{uuid.uuid4().hex[:10]}"


def turn(chat: TestClient, fake_llm, caller: str, cid: str, text: str) -> str:
    fake_llm.script(text_reply(f"About {text} [source:guide#0]."))
    response = chat.post(f"{BASE}/{cid}/messages", json={"message": text}, headers={"X-Caller-Id": caller})
    assert response.status_code == 200, response.text
    return response.json()["messageId"]


def conversation(chat: TestClient, fake_llm, caller: str, *questions: str) -> tuple[str, str]:
    cid = chat.post(BASE, json={}, headers={"X-Caller-Id": caller}).json()["conversationId"]
    answer = ""
    for question in questions:
        answer = turn(chat, fake_llm, caller, cid, question)
    return cid, answer


def build(chat: TestClient, fake_llm, tables: dict, aws_clients, caller: str) -> dict[str, str]:
    """The caller's data in every store: conversations live, archived and continued, deleted, purged with
    their trail kept; versions, feedback, usage, an approval, an attachment (item, file, segment)."""
    headers = {"X-Caller-Id": caller}
    archived, _ = conversation(chat, fake_llm, caller, "ports")
    purged, _ = conversation(chat, fake_llm, caller, "purge me")
    run_archival(load_settings(archive_after_days=0), aws_clients, remaining_ms=lambda: FAR)
    turn(chat, fake_llm, caller, archived, "continued")  # transcript in S3 and messages in the table
    assert chat.delete(f"{BASE}/{purged}", headers=headers).status_code == 204
    settings = load_settings()
    s3, dynamodb = (
        boto3.client("s3", endpoint_url=tables["endpoint"]),
        boto3.client("dynamodb", endpoint_url=tables["endpoint"]),
    )
    table = Table(dynamodb, tables["CONVERSATIONS_TABLE"])
    archiver = ConversationArchiver(table, s3, tables["TRANSCRIPTS_BUCKET"], forget=lambda cid: None)
    assert archiver.purge(purged, iso(utcnow() + timedelta(days=1))).outcome == "purged"

    live, answer = conversation(chat, fake_llm, caller, "refunds")
    fake_llm.script(text_reply("Another answer."))
    assert chat.post(f"{BASE}/{live}/messages/{answer}/regenerate", headers=headers).status_code == 200
    newest = chat.get(f"{BASE}/{live}/messages", headers=headers).json()["items"][-1]["messageId"]
    rated = chat.put(f"{BASE}/{live}/messages/{newest}/feedback", json={"rating": "up"}, headers=headers)
    assert rated.status_code == 200, rated.text
    shared = chat.post(f"{BASE}/{live}/shares", headers=headers)
    assert shared.status_code == 201, shared.text
    deleted, _ = conversation(chat, fake_llm, caller, "deleted")
    assert chat.delete(f"{BASE}/{deleted}", headers=headers).status_code == 204

    attachment = str(uuid.uuid4())
    key = f"attachments/{caller}/{live}/{attachment}"
    s3.put_object(Bucket=settings.attachments_bucket, Key=key, Body=b"a file")
    table.batch_put(
        [
            it.to_attributes(
                {"PK": it.pk(live), "SK": f"ATT#{attachment}", "callerId": caller, "objectKey": key}
            ),
            it.to_attributes({"PK": it.pk(live), "SK": "APPROVAL#a1", "callerId": caller, "toolName": "t"}),
        ]
    )
    memory(settings).add(
        [
            attachment_segment(
                conversation_id=live,
                caller_id=caller,
                attachment_id=attachment,
                file_name="notes.txt",
                modality="document",
                index=0,
                text="Segment text of the notes.",
                created_at=utcnow(),
            )
        ]
    )
    return {
        "archived": archived,
        "purged": purged,
        "live": live,
        "deleted": deleted,
        "share": shared.json()["shareId"],
    }


def readable(value: object) -> str:
    """Binary attributes are zlib-compressed JSON (a turn's logged events)."""
    return zlib.decompress(value).decode() if isinstance(value, bytes) else repr(value)


def traces(tables: dict, caller: str) -> dict[str, list[str]]:
    """Everything naming the caller: table items, S3 keys or bodies, memory fragments."""
    endpoint = tables["endpoint"]
    dynamodb, s3 = boto3.client("dynamodb", endpoint_url=endpoint), boto3.client("s3", endpoint_url=endpoint)
    settings = load_settings()
    found: dict[str, list[str]] = {"dynamodb": [], "s3": [], "chroma": []}
    for page in dynamodb.get_paginator("scan").paginate(TableName=tables["CONVERSATIONS_TABLE"]):
        texts = [json.dumps(i, default=readable) for i in page["Items"]]
        found["dynamodb"] += [text for text in texts if caller in text]
    for bucket in (tables["TRANSCRIPTS_BUCKET"], settings.attachments_bucket):
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket):
            for version in page.get("Versions", ()):
                body = s3.get_object(Bucket=bucket, Key=version["Key"], VersionId=version["VersionId"])
                if caller in version["Key"] or caller.encode() in body["Body"].read():
                    found["s3"].append(version["Key"])
            found["s3"] += [m["Key"] for m in page.get("DeleteMarkers", ()) if caller in m["Key"]]
    store = memory(settings).store
    found["chroma"] = [str(n)] if (n := store.count(where={"callerId": caller})) else []
    return found


def jobs(tables: dict) -> ErasureJobs:
    dynamodb = boto3.client("dynamodb", endpoint_url=tables["endpoint"])
    return ErasureJobs(Table(dynamodb, tables["CONVERSATIONS_TABLE"]))


def erase(chat: TestClient, caller: str) -> dict:
    accepted = chat.delete(f"/api/v1/admin/callers/{caller}", headers=ADMIN)
    assert accepted.status_code == 202, accepted.text
    chat.app.state.services.lifecycle.dispatcher.wait()
    status = chat.get(f"/api/v1/admin/erasures/{accepted.json()['erasureId']}", headers=ADMIN)
    assert status.status_code == 200, status.text
    return status.json()


def export(chat: TestClient, caller: str) -> dict:
    headers = {"X-Caller-Id": caller}
    accepted = chat.post("/api/v1/me/exports", headers=headers)
    assert accepted.status_code == 202, accepted.text
    chat.app.state.services.lifecycle.dispatcher.wait()
    status = chat.get(f"/api/v1/me/exports/{accepted.json()['exportId']}", headers=headers)
    assert status.status_code == 200, status.text
    return status.json()


def audit(chat: TestClient, cid: str) -> dict:
    response = chat.get("/api/v1/admin/audit", params={"conversationId": cid}, headers=ADMIN)
    assert response.status_code == 200, response.text
    return response.json()


def assert_erased(chat: TestClient, tables: dict, caller: str, made: dict[str, str]) -> None:
    assert traces(tables, caller) == {"dynamodb": [], "s3": [], "chroma": []}
    for name in ("archived", "purged", "live", "deleted"):
        trail = audit(chat, made[name])
        assert trail["chainValid"] is True and trail["records"], name
        assert all("callerId" not in r and len(r["actorRef"]) == 64 for r in trail["records"])
    listed = chat.get(BASE, headers={"X-Caller-Id": caller}).json()["items"]
    assert listed == []
    assert chat.get(f"/api/v1/shared/{made['share']}").status_code == 404  # the share went too
    dynamodb = boto3.client("dynamodb", endpoint_url=tables["endpoint"])
    key = {"PK": {"S": f"SHARE#{made['share']}"}, "SK": {"S": "META"}}
    assert "Item" not in dynamodb.get_item(TableName=tables["CONVERSATIONS_TABLE"], Key=key)


def test_an_erasure_leaves_nothing_of_the_caller_but_pseudonymous_audit_records(
    chat, fake_llm, own_tables, aws_clients
):
    alice, bob = who(), who()
    made = build(chat, fake_llm, own_tables, aws_clients, alice)
    bob_made = build(chat, fake_llm, own_tables, aws_clients, bob)
    assert export(chat, alice)["status"] == "READY"  # the caller's data too: the erasure removes it
    bob_before = traces(own_tables, bob)
    actor_refs = {r["actorRef"] for r in audit(chat, made["live"])["records"]}

    job = erase(chat, alice)

    assert job["status"] == "COMPLETED" and "callerId" not in job
    assert job["actorRef"] in actor_refs
    counts = job["counts"]
    assert counts["conversations"] == 3 and counts["chroma"] >= 4 and counts["s3"] >= 3
    assert counts["dynamodb"] > 10 and counts["auditRecords"] >= 6
    assert_erased(chat, own_tables, alice, made)
    assert traces(own_tables, bob) == bob_before  # another caller untouched
    assert len(chat.get(BASE, headers={"X-Caller-Id": bob}).json()["items"]) == 2
    assert audit(chat, bob_made["live"])["records"][0]["callerId"] == bob

    noted = audit(chat, job["erasureId"])  # the erasure's own record
    assert noted["chainValid"] is True
    assert noted["records"][0]["kind"] == "erasure" and noted["records"][0]["counts"] == counts

    again = erase(chat, alice)  # a second erasure of the same caller runs again and finds nothing
    assert again["erasureId"] != job["erasureId"] and again["status"] == "COMPLETED"
    assert again["counts"]["conversations"] == 0


def test_an_erasure_stopped_at_each_step_and_run_again_finishes(chat, fake_llm, own_tables, aws_clients):
    alice = who()
    made = build(chat, fake_llm, own_tables, aws_clients, alice)
    started = jobs(own_tables).start(ErasureRequest(alice, "ref", {}))  # no dispatch: the test runs it
    for step in ("objects", "trail", "audit"):
        seen: list[str] = []

        def stop(at: str, cid: str, step: str = step, seen: list[str] = seen) -> None:
            seen.append(cid)
            if at == step and len(seen) > 1:  # the first conversation done, the next stopped here
                raise Killed(step)

        with pytest.raises(Killed):
            caller_eraser(load_settings(), aws_clients, checkpoint=stop).run(started.erasure_id)
    job = caller_eraser(load_settings(), aws_clients).run(started.erasure_id)
    assert job["status"] == "COMPLETED"
    assert_erased(chat, own_tables, alice, made)


def test_erasing_an_unknown_caller_is_accepted_and_finds_nothing(chat):
    job = erase(chat, who())
    assert job["status"] == "COMPLETED"
    assert set(job["counts"].values()) == {0}


def test_a_second_request_while_one_runs_joins_it(chat, own_tables):
    alice = who()
    lifecycle = chat.app.state.services.lifecycle
    running = jobs(own_tables).start(ErasureRequest(alice, actor_ref(actor_key(load_settings()), alice), {}))
    joined = chat.delete("/api/v1/me", headers={"X-Caller-Id": alice})
    assert joined.status_code == 202 and joined.json() == {"erasureId": running.erasure_id}
    lifecycle.dispatcher.wait()


def test_only_admins_erase_others_or_read_erasures_and_unknown_ids_are_404(chat):
    alice = {"X-Caller-Id": who()}
    assert chat.delete(f"/api/v1/admin/callers/{who()}", headers=alice).status_code == 403
    moderator = {"X-Caller-Id": "mo", "X-Caller-Roles": "moderator"}
    assert chat.delete(f"/api/v1/admin/callers/{who()}", headers=moderator).status_code == 403
    mine = chat.delete("/api/v1/me", headers=alice)
    assert mine.status_code == 202
    chat.app.state.services.lifecycle.dispatcher.wait()
    assert chat.get(f"/api/v1/admin/erasures/{mine.json()['erasureId']}", headers=alice).status_code == 403
    for unknown in (str(uuid.uuid4()), "not-an-id"):
        response = chat.get(f"/api/v1/admin/erasures/{unknown}", headers=ADMIN)
        assert response.status_code == 404 and response.json()["error"] == "Erasure not found"
    assert chat.delete("/api/v1/me").status_code == 401  # the anonymous caller owns nothing


def test_an_export_is_one_json_document_of_everything_about_the_caller(
    chat, fake_llm, own_tables, aws_clients
):
    alice = who()
    made = build(chat, fake_llm, own_tables, aws_clients, alice)
    done = export(chat, alice)
    assert done["status"] == "READY" and done["expiresIn"] == 3600
    document = httpx.get(done["url"]).json()  # the presigned URL, on the moto server

    assert document["callerId"] == alice
    conversations = {c["conversationId"]: c for c in document["conversations"]}
    assert set(conversations) == {
        made["archived"],
        made["live"],
    }  # deleted ones are not the caller's any more
    archived = [m["content"] for m in conversations[made["archived"]]["messages"]]
    assert archived[0] == "ports" and "continued" in archived  # from the S3 transcript and the table
    live = conversations[made["live"]]["messages"]
    assert [m["supersededBy"] is not None for m in live if m["role"] == "assistant"] == [True, False]
    assert "REASONING" not in json.dumps(document) and all("reasoning" not in m for m in live)
    (attachment,) = document["attachments"]
    assert httpx.get(attachment["downloadUrl"]).content == b"a file"
    assert {f["metadata"]["modality"] for f in document["memory"]} >= {"text", "document"}
    said = {f["text"] for f in document["memory"] if f["metadata"].get("kind") == "said"}
    assert {"ports", "continued", "refunds"} <= said  # what the caller said, and each answer beside it
    assert any(f["metadata"].get("kind") == "answered" for f in document["memory"])
    assert [r["rating"] for r in document["feedback"]] == ["up"]
    assert document["usage"] and document["usage"][0]["tokensUsed"] > 0

    other = chat.get(f"/api/v1/me/exports/{done['exportId']}", headers={"X-Caller-Id": who()})
    assert other.status_code == 404  # another caller's export is not found
    for unknown in (str(uuid.uuid4()), "nope"):
        response = chat.get(f"/api/v1/me/exports/{unknown}", headers={"X-Caller-Id": alice})
        assert response.status_code == 404 and response.json()["error"] == "Export not found"


def test_erasing_a_caller_leaves_callers_whose_ids_extend_it_with_a_slash_or_hash_intact(
    chat, fake_llm, own_tables, aws_clients
):
    """Caller ids may hold `/` and `#`: the S3 keys of `X/b` lie under `transcripts/X/`, `audit/X/` and
    `attachments/X/`, the ledger lines of `X#b` begin with `CALLER#X#`. Erasing `X` leaves them alone."""
    alice = who()
    # Not `/b`: `X/b` would be a substring of X's own keys `…/X/b0c1…` (conversation ids are hex).
    others = [alice + "/other", alice + "#other"]
    made = build(chat, fake_llm, own_tables, aws_clients, alice)
    kept = {other: build(chat, fake_llm, own_tables, aws_clients, other) for other in others}
    # A caller `X/<conversation of X>`: its files lie under that conversation's prefix of X's files.
    nested = f"attachments/{alice}/{made['live']}/{uuid.uuid4()}/{uuid.uuid4()}"
    files = load_settings().attachments_bucket
    s3 = boto3.client("s3", endpoint_url=own_tables["endpoint"])
    s3.put_object(Bucket=files, Key=nested, Body=b"another caller's file")
    before = {other: traces(own_tables, other) for other in others}
    for other in others:
        assert {"transcripts/", "audit/", "attachments/"} <= {
            k[: k.index("/") + 1] for k in before[other]["s3"]
        }
        assert any(f"CALLER#{other}#MODEL#" in v for v in before[other]["dynamodb"])  # a ledger line
    messages = {
        other: chat.get(f"{BASE}/{kept[other]['archived']}/messages", headers={"X-Caller-Id": other})
        for other in others
    }
    assert all(m.status_code == 200 for m in messages.values())

    job = erase(chat, alice)

    assert job["status"] == "COMPLETED"
    left = traces(own_tables, alice)  # what names `X`: the others' keys and items name it too
    mine = {
        store: [v for v in found if v != nested and not any(o in v for o in others)]
        for store, found in left.items()
    }
    assert mine == {"dynamodb": [], "s3": [], "chroma": []}
    assert chat.get(BASE, headers={"X-Caller-Id": alice}).json()["items"] == []
    for other in others:
        assert traces(own_tables, other) == before[other], other
        headers = {"X-Caller-Id": other}
        after = chat.get(f"{BASE}/{kept[other]['archived']}/messages", headers=headers)
        assert after.status_code == 200, after.text
        assert after.json() == messages[other].json()
        assert len(chat.get(BASE, headers=headers).json()["items"]) == 2
    assert s3.get_object(Bucket=files, Key=nested)["Body"].read() == b"another caller's file"

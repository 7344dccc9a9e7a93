"""ArchiveFunction's handler, loaded by path as `make invoke` does, on the moto server: a conversation
chatted through the app is archived, read back, continued, and archived again; and the throughput."""

from __future__ import annotations

import json
import uuid

import boto3
import pytest
from fastapi.testclient import TestClient

from devserver.invoke import LambdaContext, load_handler_module
from devserver.stack import ROOT
from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from rag_orchestrator.config import load_settings
from rag_orchestrator.conversations.archival import run_archival
from rag_orchestrator.conversations.transcripts import from_jsonl
from tests.fakes.llm_script import text_reply, tool_calls_reply
from tests.integration.knowledge import ingest
from tests.unit.test_archival import seed

pytestmark = pytest.mark.integration

ALICE = {"X-Caller-Id": "alice"}
REASONING = "REASONING-MARKER"
BASE = "/api/v1/chat/conversations"


def thinking_chat(fake_llm, monkeypatch) -> TestClient:
    """The app with a thinking model (the fake LLM), over a fresh collection holding one guide."""
    monkeypatch.setenv("CHROMA_COLLECTION", f"archive-{uuid.uuid4().hex[:8]}")
    for key, value in fake_llm.settings_for("qwen_single_thinking", api_key="sk-test").items():
        monkeypatch.setenv(key.upper(), str(value))
    ingest(
        [{"documentId": "guide", "title": "Guide", "text": "The dev server uses port 8000."}], load_settings()
    )
    return TestClient(create_app(ALL_ROUTERS))


@pytest.fixture
def chat(own_tables, chroma_url, fake_llm, monkeypatch) -> TestClient:
    monkeypatch.setenv("ARCHIVE_AFTER_DAYS", "0")
    return thinking_chat(fake_llm, monkeypatch)


def invoke_archive() -> dict:
    module = load_handler_module("archive")  # imported anew: settings as the test set them
    event = json.loads((ROOT / "events" / "schedule.json").read_text())
    return module.handler(event, LambdaContext(function_name="rag-orchestrator-archive"))


def turn(chat: TestClient, cid: str, text: str) -> None:
    response = chat.post(f"{BASE}/{cid}/messages", json={"message": text}, headers=ALICE)
    assert response.status_code == 200, response.text


def stored_transcript(tables, key: str) -> list:
    s3 = boto3.client("s3", endpoint_url=tables["endpoint"])
    return from_jsonl(s3.get_object(Bucket=tables["TRANSCRIPTS_BUCKET"], Key=key)["Body"].read())


def test_handler_archives_then_reads_back_continues_and_archives_again(chat, own_tables, fake_llm):
    fake_llm.script(
        tool_calls_reply(
            [("rag_search", {"query": "dev server port"}, "call_a")], reasoning=REASONING + " 1"
        ),
        text_reply("Port 8000 [source:guide#0].", reasoning=REASONING + " 2"),
        text_reply("Yes, 8000.", reasoning=REASONING + " 3"),
    )
    cid = chat.post(BASE, json={}, headers=ALICE).json()["conversationId"]
    turn(chat, cid, "Which port does the dev server use?")
    before = chat.get(f"{BASE}/{cid}/messages", headers=ALICE).json()["items"]
    assert [m["role"] for m in before] == ["user", "assistant", "tool", "assistant"]

    report = invoke_archive()
    assert (report["archived"], report["messages_moved"], report["failures"]) == (1, 4, 0)

    conversation = chat.get(f"{BASE}/{cid}", headers=ALICE).json()
    assert conversation["status"] == "ARCHIVED"
    assert conversation["s3Key"] == f"transcripts/alice/{cid}.jsonl"
    listed = chat.get(f"{BASE}/{cid}/messages", headers=ALICE)
    assert listed.json()["items"] == before  # the same messages, tool calls intact
    assert before[1]["toolCalls"][0]["function"]["name"] == "rag_search"
    assert REASONING not in listed.text and "reasoning" not in listed.text
    internal = stored_transcript(own_tables, conversation["s3Key"])
    assert [m.reasoning for m in internal if m.reasoning] == [REASONING + " 1", REASONING + " 2"]

    turn(chat, cid, "Sure?")  # continuing: the window comes from the transcript
    sent = fake_llm.requests[-1]["messages"]
    assert any(m["role"] == "user" and m["content"] == "Which port does the dev server use?" for m in sent)
    continued = chat.get(f"{BASE}/{cid}", headers=ALICE).json()
    assert (continued["status"], continued["messageCount"]) == ("ACTIVE", 6)
    after = chat.get(f"{BASE}/{cid}/messages", headers=ALICE).json()["items"]
    assert after[:4] == before and [m["content"] for m in after[4:]] == ["Sure?", "Yes, 8000."]

    again = invoke_archive()
    assert (again["archived"], again["messages_moved"]) == (1, 2)
    internal = stored_transcript(own_tables, conversation["s3Key"])
    assert [m.message_id for m in internal] == [m["messageId"] for m in after]  # each message once
    assert chat.get(f"{BASE}/{cid}/messages", headers=ALICE).json()["items"] == after


def test_300_conversations_on_the_moto_server(own_tables, monkeypatch, aws_clients):
    monkeypatch.setenv("ARCHIVE_AFTER_DAYS", "30")
    clients = (aws_clients.client("dynamodb"), aws_clients.client("s3"))  # the ones run_archival is given
    seed(clients, 300, per_conversation=3, table=own_tables["CONVERSATIONS_TABLE"])
    report = run_archival(load_settings(), aws_clients, remaining_ms=lambda: 10**9)
    assert (report.archived, report.failures, report.messages_moved) == (300, 0, 900)

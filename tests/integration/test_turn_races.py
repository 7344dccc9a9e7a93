"""What a running turn may still write once its conversation is deleted, made a temporary chat or erased
with its caller (a turn runs on after its client leaves, docs/conversations.md): the model is held
mid-answer while the change is made, then let go. Nothing of the turn may be remembered or recalled, no
usage counter made again, and the client is told the turn was not stored."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import boto3
import httpx
import pytest
from fastapi.testclient import TestClient

from tests.fakes.llm_script import text_reply
from tests.fakes.sse import parse_sse
from tests.integration.test_archive_function import thinking_chat
from tests.integration.test_erasure import erase, traces, who

pytestmark = pytest.mark.integration

BASE = "/api/v1/chat/conversations"
SECRET = "my locker code is 4711"


@contextmanager
def held_turn(fake_llm, post: Callable[[], str]) -> Iterator[dict[str, str]]:
    """A streamed turn whose model is held after its first chunk while the body runs; then let go and
    read to its end (`ended["events"]`, the SSE event names)."""
    fake_llm.script(text_reply(f"Noted, {SECRET}.", chunks=4, gate_after=1))
    ended: dict[str, str] = {}

    def run() -> None:
        ended["events"] = post()

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 20
    while not fake_llm.requests and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)  # the first chunk out
    try:
        yield ended
    finally:
        fake_llm.open_gate()
        thread.join(60)


def recalled_elsewhere(dev_app, headers: dict[str, str]) -> bool:
    """Whether a new conversation of the caller gets the secret in front of the model."""
    other = httpx.post(f"{dev_app.url}{BASE}", json={}, headers=headers).json()["conversationId"]
    before = len(dev_app.llm.requests)
    dev_app.llm.script(text_reply("I do not know."))
    asked = httpx.post(
        dev_app.conversation_url(other, "messages"),
        json={"message": "What is my locker code?"},
        headers=headers,
        timeout=60,
    )
    assert asked.status_code == 200, asked.text
    return "4711" in str(dev_app.llm.requests[before]["messages"])


def remembered(dev_app, headers: dict[str, str], cid: str) -> list[dict]:
    listed = httpx.get(f"{dev_app.url}/api/v1/memory", headers=headers)
    assert listed.status_code == 200, listed.text
    return [f for f in listed.json()["items"] if f["conversationId"] == cid]


def dev_stream(dev_app, cid: str, headers: dict[str, str]) -> Callable[[], str]:
    def post() -> str:
        url = dev_app.conversation_url(cid, "messages/stream")
        answered = httpx.post(url, json={"message": SECRET}, headers=headers, timeout=60)
        return ",".join(m.event for m in parse_sse(answered.text))

    return post


@pytest.mark.parametrize("change", ["delete", "make temporary"])
def test_a_conversation_deleted_or_made_temporary_while_its_turn_runs_is_not_remembered(dev_app, change):
    headers = {"X-Caller-Id": f"race-{uuid.uuid4().hex[:8]}"}
    cid = httpx.post(f"{dev_app.url}{BASE}", json={}, headers=headers).json()["conversationId"]
    url = f"{dev_app.url}{BASE}/{cid}"
    with held_turn(dev_app.llm, dev_stream(dev_app, cid, headers)):
        if change == "delete":
            assert httpx.delete(url, headers=headers).status_code == 204
        else:
            made = httpx.patch(url, json={"memory": False}, headers=headers)
            assert made.status_code == 200 and made.json()["memory"] is False
    time.sleep(0.5)  # the after-turn work, once the terminal event is out
    assert remembered(dev_app, headers, cid) == []
    assert not recalled_elsewhere(dev_app, headers)


@pytest.fixture
def chat(own_tables, chroma_url, fake_llm, monkeypatch) -> TestClient:
    monkeypatch.setenv("BUDGET_TOKENS_PER_DAY", "1000000")  # so usage is counted, and held while a turn runs
    return thinking_chat(fake_llm, monkeypatch)


def test_a_caller_erased_while_their_turn_runs_keeps_nothing_of_it(chat, fake_llm, own_tables):
    caller = who()
    headers = {"X-Caller-Id": caller}
    cid = chat.post(BASE, json={}, headers=headers).json()["conversationId"]

    def post() -> str:
        with chat.stream(
            "POST", f"{BASE}/{cid}/messages/stream", json={"message": SECRET}, headers=headers
        ) as r:
            return ",".join(m.event for m in parse_sse("".join(r.iter_text())))

    with held_turn(fake_llm, post) as ended:
        assert erase(chat, caller)["status"] == "COMPLETED"
    chat.app.state.services.lifecycle.dispatcher.wait()
    # Its end could not be stored: an Error, not a Completed naming an answer that is nowhere.
    assert ended["events"].split(",")[-1] == "Error" and "Completed" not in ended["events"]
    time.sleep(0.5)
    # No memory fragment, no usage counter made again by letting go of the turn's hold, nothing in S3.
    assert traces(own_tables, caller) == {"dynamodb": [], "s3": [], "chroma": []}
    assert chat.get(BASE, headers=headers).json()["items"] == []
    # Nor its event log's batches, written after the erasure had emptied the conversation's partition.
    left = partition(own_tables, cid)
    assert all(item["SK"]["S"].startswith("AUDIT") for item in left), [item["SK"]["S"] for item in left]


def partition(tables: dict, cid: str) -> list[dict]:
    """Every item left under the conversation's partition key."""
    dynamodb = boto3.client("dynamodb", endpoint_url=tables["endpoint"])
    return dynamodb.query(
        TableName=tables["CONVERSATIONS_TABLE"],
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": f"CONV#{cid}"}},
        ConsistentRead=True,
    )["Items"]


@pytest.mark.parametrize("budget", ["1000000", None], ids=["limited", "unlimited"])
def test_a_caller_erased_while_their_answer_runs_keeps_nothing_of_it(
    own_tables, chroma_url, fake_llm, monkeypatch, budget
):
    """A generated answer has no conversation whose absence would refuse its write, as a turn's has:
    once its model let go, it counted its tokens on the erased caller's day and usage-report line,
    with the caller id in clear (limited: its hold made the day again; unlimited: the line)."""
    if budget:
        monkeypatch.setenv("BUDGET_TOKENS_PER_DAY", budget)
    monkeypatch.setenv("RAG_SIMILARITY_THRESHOLD", "0.05")
    chat = thinking_chat(fake_llm, monkeypatch)
    caller = who()
    headers = {"X-Caller-Id": caller}

    def post() -> str:
        body = {"query": "Which port does the dev server use?"}
        with chat.stream("POST", "/api/v1/query/answer/stream", json=body, headers=headers) as r:
            return ",".join(m.event for m in parse_sse("".join(r.iter_text())))

    with held_turn(fake_llm, post) as ended:
        assert fake_llm.requests  # the model is answering
        assert erase(chat, caller)["status"] == "COMPLETED"
    assert ended["events"].split(",")[-1] == "done"  # the answer is its asker's all the same
    time.sleep(0.5)
    assert traces(own_tables, caller) == {"dynamodb": [], "s3": [], "chroma": []}
    # A caller erased may ask again: that answer is counted as any.
    fake_llm.script(text_reply("Port 8000 [source:guide#0]."))
    asked = chat.post("/api/v1/query/answer", json={"query": "Which port?"}, headers=headers)
    assert asked.status_code == 200 and traces(own_tables, caller)["dynamodb"]

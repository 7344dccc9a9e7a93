"""Streamed and whole turns through the app, on DynamoDB (moto server) and a real Chroma server."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from rag_orchestrator.config import load_settings
from tests.fakes.llm_script import Reset, Stream, error_reply, text_reply, tool_calls_reply
from tests.fakes.sse import parse_sse
from tests.integration.knowledge import ingest

pytestmark = pytest.mark.integration

API_KEY = "sk-test-SECRET-KEY-4242"
REASONING = "REASONING-MARKER"
ALICE = {"X-Caller-Id": "alice"}
GUIDE = (
    "The suite runs with make test on a fresh machine. It starts a moto server and a Chroma server.\n\n"
    "The dev server starts with make dev and listens on port 8000 by default."
)


def no_leak(text: str) -> None:
    """Nothing a client reads may hold a reasoning trace, a key or a stack trace."""
    for marker in (REASONING, API_KEY, "Traceback", 'File "/'):
        assert marker not in text, marker


@pytest.fixture
def stack(aws_stack, chroma_url, monkeypatch):
    monkeypatch.setenv("CHROMA_COLLECTION", f"chat-{id(monkeypatch)}")
    monkeypatch.setenv("RAG_SIMILARITY_THRESHOLD", "0.05")
    ingest(
        [{"documentId": "guide", "title": "Guide", "text": GUIDE, "source": "docs", "tags": ["dev"]}],
        load_settings(),
    )


def client() -> TestClient:
    """An app built from the environment as the test has set it."""
    return TestClient(create_app(ALL_ROUTERS))


def new_conversation(c: TestClient, headers=ALICE) -> str:
    response = c.post("/api/v1/chat/conversations", json={}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["conversationId"]


def stream_turn(c: TestClient, conversation_id: str, message: str, headers=ALICE, **extra):
    with c.stream(
        "POST",
        f"/api/v1/chat/conversations/{conversation_id}/messages/stream",
        json={"message": message, **extra},
        headers=headers,
    ) as response:
        body = "".join(response.iter_text())
    no_leak(body)
    return response, parse_sse(body)


def assert_well_formed(messages, conversation_id):
    turn_id = messages[0].data["turnId"]
    assert [m.id for m in messages] == [f"{turn_id}:{n}" for n in range(1, len(messages) + 1)]
    for m in messages:
        assert m.data["type"] == m.event and m.data["conversationId"] == conversation_id
        assert m.data["turnId"] == turn_id
    assert [m.event for m in messages].count("Completed") + [m.event for m in messages].count("Error") == 1
    assert messages[-1].event in ("Completed", "Error")


def test_extractive_turn_streams_search_answer_sources_and_completion(stack):
    c = client()
    cid = new_conversation(c)
    response, messages = stream_turn(c, cid, "How do I run the test suite?")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert_well_formed(messages, cid)
    events = [m.event for m in messages]
    assert events[:5] == ["StatusUpdate", "StatusUpdate", "ToolCallStart", "ToolCallResult", "StatusUpdate"]
    assert set(events[5:-2]) == {"ResponseChunk"} and events[-2:] == ["Sources", "Completed"]
    assert messages[-1].data["finishReason"] == "stop"
    answer = "".join(m.data["content"] for m in messages if m.event == "ResponseChunk")
    assert "make test" in answer and "[source:guide#0]" in answer
    assert messages[-2].data["sources"][0]["documentId"] == "guide"

    stored = c.get(f"/api/v1/chat/conversations/{cid}/messages", headers=ALICE).json()["items"]
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[-1]["messageId"] == messages[-1].data["messageId"]
    conversation = c.get(f"/api/v1/chat/conversations/{cid}", headers=ALICE).json()
    assert (conversation["messageCount"], conversation["toolCallsCount"]) == (4, 1)


def test_model_turn_with_qwen_style_tool_calls_reasoning_and_usage(stack, fake_llm, monkeypatch):
    for key, value in fake_llm.settings_for("qwen_single_thinking", api_key=API_KEY).items():
        monkeypatch.setenv(key.upper(), str(value))
    fake_llm.script(
        tool_calls_reply(
            [("rag_search", {"query": "dev server port"}, "call_a")], reasoning=REASONING + " think"
        ),
        text_reply(
            "It listens on port 8000 [source:guide#0].",
            chunks=4,
            reasoning=REASONING + " again",
            keepalive=True,
        ),
    )
    c = client()
    cid = new_conversation(c)
    _, messages = stream_turn(c, cid, "Which port does the dev server use?")
    assert_well_formed(messages, cid)
    assert [m.event for m in messages if m.event.startswith("ToolCall")] == [
        "ToolCallStart",
        "ToolCallResult",
    ]
    assert messages[-1].event == "Completed"
    assert messages[-1].data["tokensUsed"] == (20 + 9) + (11 + 7)
    answer = "".join(m.data["content"] for m in messages if m.event == "ResponseChunk")
    assert answer == "It listens on port 8000 [source:guide#0]."
    # the model was sent the tool result, and the conversation's messages never show reasoning
    second = fake_llm.requests[1]["messages"]
    assert any(m["role"] == "tool" and "guide" in m["content"] for m in second)
    listed = c.get(f"/api/v1/chat/conversations/{cid}/messages", headers=ALICE)
    no_leak(listed.text)
    assert "reasoning" not in listed.text


def test_whole_turn_answers_a_chat_response(stack, fake_llm, monkeypatch):
    for key, value in fake_llm.settings_for("openai_compatible", api_key=API_KEY).items():
        monkeypatch.setenv(key.upper(), str(value))
    fake_llm.script(text_reply("Use make dev [source:guide#0].", reasoning=REASONING))
    c = client()
    cid = new_conversation(c)
    response = c.post(
        f"/api/v1/chat/conversations/{cid}/messages", json={"message": "How to start?"}, headers=ALICE
    )
    no_leak(response.text)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["message"] == "Use make dev [source:guide#0]."
    assert body["iterationsUsed"] == 1 and body["tokensUsed"] == 18 and body["role"] == "assistant"
    assert body["sources"] and body["sources"][0]["chunkIndex"] == 0


def test_provider_failure_is_one_safe_error_event_and_the_next_turn_works(stack, fake_llm, monkeypatch):
    for key, value in fake_llm.settings_for(
        "openai_compatible", api_key=API_KEY, model_max_retries=0
    ).items():
        monkeypatch.setenv(key.upper(), str(value))
    fake_llm.script(error_reply(401, f"invalid key {API_KEY}"), text_reply("Fine now."))
    c = client()
    cid = new_conversation(c)
    _, messages = stream_turn(c, cid, "hello")
    assert_well_formed(messages, cid)
    assert messages[-1].event == "Error"
    _, messages = stream_turn(c, cid, "hello again")
    assert messages[-1].event == "Completed"
    roles = [
        m["role"] for m in c.get(f"/api/v1/chat/conversations/{cid}/messages", headers=ALICE).json()["items"]
    ]
    assert roles == ["user", "user", "assistant"]


@pytest.mark.parametrize("reset", [Reset(), Stream([Reset()])], ids=["before-head", "after-head"])
def test_a_model_server_resetting_the_connection_once_is_retried_and_the_turn_completes(
    stack, fake_llm, monkeypatch, reset
):
    for key, value in fake_llm.settings_for("openai_compatible", api_key=API_KEY).items():
        monkeypatch.setenv(key.upper(), str(value))
    fake_llm.script(reset, text_reply("Run make test [source:guide#0]."))
    c = client()
    cid = new_conversation(c)
    _, messages = stream_turn(c, cid, "How do I run the test suite?")
    assert_well_formed(messages, cid)
    assert [m.event for m in messages][-1] == "Completed"
    assert "".join(m.data["content"] for m in messages if m.event == "ResponseChunk") == (
        "Run make test [source:guide#0]."
    )
    assert len(fake_llm.requests) == 2  # the reset request, then its retry


def test_turn_on_another_callers_conversation_is_404_and_repeated_client_message_id_is_409(stack):
    c = client()
    cid = new_conversation(c)
    response, _ = stream_turn(c, cid, "hi", headers={"X-Caller-Id": "mallory"})
    assert response.status_code == 404
    first, messages = stream_turn(c, cid, "hi", clientMessageId="m-1")
    assert first.status_code == 200 and messages[-1].event == "Completed"
    again, _ = stream_turn(c, cid, "hi", clientMessageId="m-1")
    assert again.status_code == 409
    assert again.headers["content-type"].startswith("application/json")
    users = [
        m
        for m in c.get(f"/api/v1/chat/conversations/{cid}/messages", headers=ALICE).json()["items"]
        if m["role"] == "user"
    ]
    assert len(users) == 1


def test_bad_turn_bodies_are_refused_before_anything_is_stored(stack):
    c = client()
    cid = new_conversation(c)
    bodies = [
        ({"message": "   "}, 422),  # JSON that breaks the schema (docs/errors.md)
        ({"message": ""}, 422),
        ({}, 422),
        ({"message": "x", "callerId": "bob"}, 403),  # another caller named in the body
    ]
    for body, status in bodies:
        response = c.post(f"/api/v1/chat/conversations/{cid}/messages/stream", json=body, headers=ALICE)
        assert response.status_code == status, body
        assert set(response.json()) == {"error", "message", "timestamp", "requestId"}
    assert c.get(f"/api/v1/chat/conversations/{cid}", headers=ALICE).json()["messageCount"] == 0


def test_stream_route_answers_with_ids_and_no_stack_traces_on_unknown_conversation(stack):
    c = client()
    response = c.post(
        "/api/v1/chat/conversations/00000000-0000-4000-8000-000000000000/messages/stream",
        json={"message": "hi"},
        headers=ALICE,
    )
    assert response.status_code == 404
    assert re.fullmatch(r"[0-9a-f-]{36}", response.json()["requestId"])


def test_the_streaming_app_flushes_a_turns_metrics_once_when_the_stream_ends(stack, monkeypatch, capsys):
    """No handler decorator runs on the streaming function: the app's middleware publishes EMF."""
    import asyncio
    import json

    from rag_orchestrator.api.app import STREAM_ROUTERS
    from rag_orchestrator.domain.conversations import Conversation
    from rag_orchestrator.observability import metrics

    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    app = create_app(STREAM_ROUTERS)
    cid = asyncio.run(app.state.services.store.create(Conversation(caller_id="alice"))).conversation_id
    capsys.readouterr()
    _, messages = stream_turn(TestClient(app), cid, "How do I run the test suite?")
    assert messages[-1].event == "Completed"
    emitted = [
        json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')
    ]
    assert len(emitted) == 1
    names = {m["Name"] for m in emitted[0]["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert {"TurnsCompleted", "TurnTokens"} <= names and emitted[0]["TurnsCompleted"] == [1.0]
    assert not metrics.metric_set  # nothing left over for the next request


def test_a_later_turn_is_searched_with_one_condensing_call_and_a_first_turn_with_none(
    stack, fake_llm, monkeypatch
):
    for key, value in fake_llm.settings_for("openai_compatible", api_key=API_KEY).items():
        monkeypatch.setenv(key.upper(), str(value))
    monkeypatch.setenv("CONDENSE_FOLLOW_UPS", "true")
    fake_llm.script(
        text_reply("With make test [source:guide#0]."),
        text_reply("Which port does the dev server listen on?", usage=(40, 9)),  # the condensing call
        text_reply("On port 8000 [source:guide#0]."),
    )
    c = client()
    cid = new_conversation(c)
    first, _ = stream_turn(c, cid, "How does the suite run?")
    assert first.status_code == 200 and len(fake_llm.requests) == 1  # a first turn: no condensing call
    _, messages = stream_turn(c, cid, "And the dev server, which port?")
    assert messages[-1].event == "Completed"
    assert messages[-1].data["tokensUsed"] == (40 + 9) + (11 + 7)  # the condensing call is the turn's too
    condensing, answering = fake_llm.requests[1], fake_llm.requests[2]
    assert condensing["messages"][0]["content"].startswith("Rewrite the user's last message")
    assert "How does the suite run?" in condensing["messages"][1]["content"]
    assert condensing["max_tokens"] == 80 and not condensing.get("tools")
    # The condensed question's initial search gave the model its passage.
    # (the app's data message before the question carries it, enclosed as data)
    data = [m["content"] for m in answering["messages"] if m["content"].startswith("[Data from the app]")]
    assert len(data) == 1 and "listens on port 8000" in data[0]


FIRST_TURN_IMPORTS = """
import asyncio, json, sys
from starlette.testclient import TestClient
from rag_orchestrator.api.app import STREAM_ROUTERS, create_app
from rag_orchestrator.domain.conversations import Conversation
app = create_app(STREAM_ROUTERS)
cid = asyncio.run(app.state.services.store.create(Conversation(caller_id="alice"))).conversation_id
with TestClient(app) as client:
    with client.stream(
        "POST", f"/api/v1/chat/conversations/{cid}/messages/stream",
        json={"message": "How do I run the test suite?"}, headers={"X-Caller-Id": "alice"},
    ) as response:
        events = [line for line in response.iter_lines() if line.startswith("event: ")]
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("boto3", "fastapi") or m == "botocore.client")
print(json.dumps([events[-1], heavy]))
"""


@pytest.mark.parametrize("embedder", ["hashing", "bedrock"])
def test_a_fresh_stream_apps_first_turn_imports_neither_boto3_nor_fastapi(stack, embedder):
    """DynamoDB through aws_json.py, the default embedder's Bedrock through aws_bedrock.py (a fake Titan
    here), the routes on Starlette alone: a cold instance's first turn pays for neither package's import
    (docs/performance.md)."""
    import json
    import os
    import subprocess
    import sys
    import uuid

    from tests.fakes.fake_titan import fake_titan

    environ = os.environ | {"PYTHONPATH": os.pathsep.join(sys.path)}
    with fake_titan([1 / 32] * 1024) as titan:
        if embedder == "bedrock":  # collections of its own: the stack's are the hashing embedder's
            suffix = uuid.uuid4().hex[:12]
            environ |= {
                "EMBEDDING_PROVIDER": "bedrock",
                "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": titan.url,
                "CHROMA_COLLECTION": f"titan-{suffix}",
                "CHROMA_MEMORY_COLLECTION": f"titan-memory-{suffix}",
            }
        done = subprocess.run(
            [sys.executable, "-c", FIRST_TURN_IMPORTS],
            capture_output=True,
            text=True,
            env=environ,
            check=True,
        )
    last_event, heavy = json.loads(done.stdout.strip().splitlines()[-1])
    assert last_event == "event: Completed"
    assert heavy == []
    assert (len(titan.received) > 0) == (embedder == "bedrock")  # the question was embedded by Titan

"""A model server that echoes the whole request in its 400 (as several servers' validation errors do):
nothing of the prompt, the app's context or a retrieved passage reaches any byte a client receives.

Real parts throughout: the app on DynamoDB/S3 (moto server), a Chroma server holding the passage,
the fake OpenAI-compatible server answering every request with the echo.
"""

from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from rag_orchestrator.api.app import ALL_ROUTERS, create_app
from rag_orchestrator.config import load_settings
from tests.fakes.llm_script import Echo
from tests.fakes.sse import parse_sse
from tests.integration.knowledge import ingest

pytestmark = pytest.mark.integration

API_KEY = "sk-echo-test-KEY-31337"
PASSAGE = "PASSAGE-MARKER-7f3a: the suite runs with make test and starts a moto server and a Chroma server."
CONTEXT = "CONTEXT-MARKER-91bd"
QUESTION = "How does the suite run with make test?"
ALICE = {"X-Caller-Id": "alice"}
WINDOW = 32  # a run of this many characters of the prompt in a client byte counts as a leak


@pytest.fixture
def app(aws_stack, chroma_url, fake_llm, monkeypatch) -> TestClient:
    monkeypatch.setenv("CHROMA_COLLECTION", f"leak-{id(monkeypatch)}")
    monkeypatch.setenv("RAG_SIMILARITY_THRESHOLD", "0.0")
    for key, value in fake_llm.settings_for("openai_compatible", api_key=API_KEY).items():
        monkeypatch.setenv(key.upper(), str(value))
    fake_llm.default = Echo(400)
    ingest([{"documentId": "guide", "title": "Guide", "text": PASSAGE}], load_settings())
    return TestClient(create_app(ALL_ROUTERS), raise_server_exceptions=False)


def client_bytes(response) -> str:
    headers = "\n".join(f"{k}: {v}" for k, v in response.headers.items())
    return f"{headers}\n{response.text}"


def assert_nothing_of_the_prompts(text: str, sent: list[dict]) -> None:
    assert PASSAGE[:20] not in text and CONTEXT not in text and API_KEY not in text
    for request in sent:
        for message in request["messages"]:
            content = message["content"] or ""
            if message["role"] == "user" and content == QUESTION:
                continue  # the client's own words
            for start in range(0, max(len(content) - WINDOW, 0) + 1, 8):
                assert content[start : start + WINDOW] not in text, content[start : start + WINDOW]


def test_no_byte_of_an_echoed_prompt_reaches_the_client_on_any_route(app, fake_llm, caplog):
    caplog.set_level(logging.WARNING)
    cid = app.post("/api/v1/chat/conversations", json={}, headers=ALICE).json()["conversationId"]
    turn = {"message": QUESTION, "contextType": "help", "context": {"screen": CONTEXT}}

    with app.stream(
        "POST", f"/api/v1/chat/conversations/{cid}/messages/stream", json=turn, headers=ALICE
    ) as streamed:
        streamed.read()
    events = parse_sse(streamed.text)
    assert events[-1].event == "Error"
    assert events[-1].data["error"] == "openai_compatible answered HTTP 400; trying again will not help"
    assert events[-1].data["details"] == f"request id {streamed.headers['x-request-id']}"

    whole = app.post(f"/api/v1/chat/conversations/{cid}/messages", json=turn, headers=ALICE)
    assert whole.status_code == 502, whole.text
    assert set(whole.json()) == {"error", "message", "timestamp", "requestId"}

    ask = {"query": QUESTION, "similarityThreshold": 0.0}
    answer = app.post("/api/v1/query/answer", json=ask, headers=ALICE)
    assert answer.status_code == 502, answer.text
    with app.stream("POST", "/api/v1/query/answer/stream", json=ask, headers=ALICE) as answer_stream:
        answer_stream.read()
    answer_events = parse_sse(answer_stream.text)
    assert [e.event for e in answer_events] == ["sources", "error"]
    assert answer_events[-1].data["status"] == 502

    # Every route reached the model with the passage and the context, and got the echo back.
    sent = fake_llm.requests
    assert len(sent) == 4 and all(PASSAGE[:20] in str(r["messages"]) for r in sent)
    assert CONTEXT in str(sent[0]["messages"]) and CONTEXT in str(sent[1]["messages"])
    for response in (streamed, whole, answer, answer_stream):
        assert_nothing_of_the_prompts(client_bytes(response), sent)

    # The upstream's text is in the log for the operator, with the key redacted.
    refusals = [r for r in caplog.records if r.getMessage() == "model provider refused a request"]
    assert len(refusals) == 4
    assert all("Invalid request body" in r.detail and API_KEY not in r.detail for r in refusals)

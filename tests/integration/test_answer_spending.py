"""What a generated answer spends (POST /api/v1/query/answer, its stream, MCP's `ask`) is counted as a
turn's is, on both stores: on the asker's day (GET /api/v1/usage) and in the usage report, held against a
limited asker's budget before anything is searched (429 and no model call when it is spent), and let go
when the model wrote no answer. Before, an answer was counted nowhere: a caller with a budget of 18
tokens could spend without end there."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.fakes.llm_script import error_reply, text_reply
from tests.integration.features import ADMIN, assert_error, client, fresh_caller, use_fake_llm
from tests.integration.knowledge import ingest

pytestmark = pytest.mark.integration

ANSWER, STREAM = "/api/v1/query/answer", "/api/v1/query/answer/stream"
QUESTION = "How long do refunds take to reach the card?"
DOCS = [
    {
        "documentId": "refunds",
        "title": "Refund policy",
        "text": "Refunds are paid back to the original card within 14 days.",
        "source": "help-center",
    }
]
REPLY = "Refunds reach the card within 14 days [source:refunds#0]."  # the fake's usage: 11 in, 7 out
JSON_RPC = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(params=["memory", "dynamodb"])
def answers(request, chroma_url, fake_llm, monkeypatch) -> TestClient:
    """The app on either store (a table of the test's own on the moto server), the fake model, and a
    knowledge base of one document in a collection of the test's own."""
    if request.param == "dynamodb":
        request.getfixturevalue("own_tables")
    else:
        monkeypatch.setenv("CONVERSATION_STORAGE", "memory")
    monkeypatch.setenv("CHROMA_COLLECTION", f"spending-{uuid.uuid4().hex[:12]}")
    monkeypatch.setenv("RAG_SIMILARITY_THRESHOLD", "0.1")
    monkeypatch.setenv("ALLOW_ANONYMOUS", "true")
    monkeypatch.setenv("GUEST_TOKEN_SECRET", "guest-secret-for-the-tests-0123456789abcdef")
    use_fake_llm(fake_llm, monkeypatch)
    from rag_orchestrator.config import load_settings

    ingest(DOCS, load_settings())
    return client()


def ask(c: TestClient, headers: dict[str, str], path: str = ANSWER, question: str = QUESTION) -> Any:
    if path == STREAM:
        with c.stream("POST", path, json={"query": question}, headers=headers) as response:
            response.read()
        return response
    return c.post(path, json={"query": question}, headers=headers)


def used(c: TestClient, headers: dict[str, str]) -> dict[str, Any]:
    response = c.get("/api/v1/usage", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def reported(c: TestClient, caller_id: str) -> dict[str, Any] | None:
    response = c.get("/api/v1/admin/usage", params={"groupBy": "caller"}, headers=ADMIN)
    assert response.status_code == 200, response.text
    return next((row for row in response.json()["rows"] if row["key"] == caller_id), None)


def mcp_ask(c: TestClient, headers: dict[str, str]) -> dict[str, Any]:
    """`tools/call` of `ask`, one stateless JSON-RPC request; its result."""
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    call["params"] = {"name": "ask", "arguments": {"question": QUESTION}}
    response = c.post("/mcp", content=json.dumps(call), headers={**JSON_RPC, **headers})
    assert response.status_code == 200, response.text
    return response.json()["result"]


def test_every_answer_route_counts_its_tokens_on_the_askers_day_and_in_the_report(
    answers, fake_llm, monkeypatch
):
    monkeypatch.setenv("BUDGET_TOKENS_PER_DAY", "1000")
    c = client()
    me = fresh_caller()
    fake_llm.script(*(text_reply(REPLY) for _ in range(3)))
    assert ask(c, me).status_code == 200
    streamed = ask(c, me, STREAM)
    assert streamed.status_code == 200 and "event: done" in streamed.text
    assert not mcp_ask(c, me)["isError"]
    assert used(c, me) == {**used(c, me), "tokensUsed": 54, "tokensLimit": 1000}
    row = reported(c, me["X-Caller-Id"])
    assert row is not None and (row["turns"], row["inputTokens"], row["outputTokens"]) == (0, 33, 21)


def test_the_report_counts_answers_with_no_budget_configured(answers, fake_llm):
    me = fresh_caller()
    fake_llm.script(text_reply(REPLY))
    assert ask(answers, me).status_code == 200
    row = reported(answers, me["X-Caller-Id"])
    assert row is not None and (row["inputTokens"], row["outputTokens"]) == (11, 7)
    assert used(answers, me)["tokensLimit"] is None


def test_a_spent_budget_is_429_on_every_route_before_any_model_call(answers, fake_llm, monkeypatch):
    monkeypatch.setenv("BUDGET_TOKENS_PER_DAY", "18")  # one answer
    c = client()
    me = fresh_caller()
    fake_llm.script(text_reply(REPLY))
    assert ask(c, me).status_code == 200
    asked = len(fake_llm.requests)
    for path in (ANSWER, STREAM):
        refused = ask(c, me, path)
        assert "token budget is spent (18 of 18)" in assert_error(refused, 429)["message"]
        assert int(refused.headers["retry-after"]) >= 1
    tool = mcp_ask(c, me)
    assert tool["isError"] and "token budget is spent" in tool["content"][0]["text"]
    assert len(fake_llm.requests) == asked  # the model was not asked again
    assert used(c, me)["tokensUsed"] == 18


def test_an_answer_the_model_never_wrote_counts_nothing_and_lets_its_hold_go(answers, fake_llm, monkeypatch):
    """The hold (BUDGET_TURN_RESERVE_TOKENS, above the whole limit here) is let go after a model failure
    and after a question nothing in the knowledge base answers: the next answer is not refused."""
    monkeypatch.setenv("BUDGET_TOKENS_PER_DAY", "18")
    monkeypatch.setenv("BUDGET_TURN_RESERVE_TOKENS", "500")
    c = client()
    me = fresh_caller()
    fake_llm.script(error_reply(500), error_reply(500))
    assert_error(ask(c, me), 502)
    failed = ask(c, me, STREAM)  # the failure is the stream's error event
    assert failed.status_code == 200 and "event: error" in failed.text
    unrelated = ask(c, me, question="zxqv wvut ploq")
    assert unrelated.status_code == 200 and unrelated.json()["promptTokens"] == 0
    assert used(c, me)["tokensUsed"] == 0
    fake_llm.script(text_reply(REPLY))
    assert ask(c, me).status_code == 200  # nothing was left held
    assert used(c, me)["tokensUsed"] == 18


def test_guests_answers_count_on_their_own_day_and_all_guests(answers, fake_llm, monkeypatch):
    monkeypatch.setenv("GUEST_TOKENS_PER_DAY", "18")
    monkeypatch.setenv("GUEST_TOKENS_PER_DAY_TOTAL", "30")
    c = client()

    def guest() -> dict[str, str]:
        minted = c.post("/api/v1/auth/guest")
        assert minted.status_code == 201, minted.text
        return {"Authorization": f"Bearer {minted.json()['token']}"}

    first, second = guest(), guest()
    fake_llm.script(text_reply(REPLY), text_reply(REPLY))
    assert ask(c, first).status_code == 200
    assert_error(ask(c, first, STREAM), 429)  # its own 18
    assert ask(c, second).status_code == 200  # all guests: 18 of 30 before it
    third = guest()
    assert assert_error(ask(c, third), 429)["message"].startswith("Guests have used today's tokens")


def test_mcp_ask_is_refused_to_the_shared_anonymous_caller_and_search_is_not(answers, fake_llm):
    asked = len(fake_llm.requests)
    tool = mcp_ask(answers, {})
    assert tool["isError"] and "guest token" in tool["content"][0]["text"]
    assert len(fake_llm.requests) == asked
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
    call["params"] = {"name": "search_knowledge_base", "arguments": {"query": QUESTION}}
    found = answers.post("/mcp", content=json.dumps(call), headers=JSON_RPC).json()["result"]
    assert not found["isError"] and found["structuredContent"]["results"][0]["documentId"] == "refunds"

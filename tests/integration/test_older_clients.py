"""Chat bodies as older clients send them (callerId, userId, accountId, conversationId) and the
structured finalizer's Markdown answer, over the served dev app with the demo tool API."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.fakes.llm_script import text_reply, tool_calls_reply
from tests.fakes.sse import parse_sse

pytestmark = pytest.mark.integration

ALICE = {"X-Caller-Id": "alice-older"}


def new_conversation(base: str) -> str:
    response = httpx.post(
        f"{base}/api/v1/chat/conversations", json={"callerId": "alice-older"}, headers=ALICE
    )
    assert response.status_code == 201, response.text
    return response.json()["conversationId"]


def test_a_chat_body_with_the_callers_id_and_an_account_runs_the_tool_for_that_account(dev_app):
    dev_app.llm.script(
        tool_calls_reply([("get_order_status", {"orderId": "A-1001"}, "call_1")]),
        text_reply("Order A-1001 has shipped."),
    )
    cid = new_conversation(dev_app.url)
    body = {
        "message": "Where is my order A-1001?",
        "conversationId": cid,
        "callerId": "alice-older",
        "userId": "u-42",
        "accountId": "acct-1001",
        "metadata": {"channel": "kiosk"},
    }
    # the tool's account is pinned to her sign-in's claim (docs/tools.md); the body's joins the context
    claimed = {**ALICE, "X-Caller-Claims": json.dumps({"accountId": "acct-1001"})}
    response = httpx.post(dev_app.conversation_url(cid, "messages"), json=body, headers=claimed, timeout=60)
    assert response.status_code == 200, response.text
    assert response.json()["message"] == "Order A-1001 has shipped."
    tool_result = next(m for m in dev_app.llm.requests[-1]["messages"] if m["role"] == "tool")
    assert '"shipped"' in tool_result["content"]
    assert "acct-1001" in json.dumps(dev_app.llm.requests[0]["messages"])  # the body's account, as context
    # userId joined the turn's context, which the model reads (wherever the prompt puts it)
    assert "u-42" in json.dumps(dev_app.llm.requests[0]["messages"])


def test_another_callers_id_in_a_chat_body_is_403_and_starts_nothing(dev_app):
    """On every route a turn starts from: the native ones, useChat's and the agent chat."""
    cid = new_conversation(dev_app.url)
    user = {"id": "u-1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}
    sent = [
        (dev_app.conversation_url(cid, "messages"), {"message": "hello"}),
        (dev_app.conversation_url(cid, "messages/stream"), {"message": "hello"}),
        (dev_app.conversation_url(cid, "ui-stream"), {"messages": [user]}),
        (f"{dev_app.url}/api/v1/agent/chat", {"message": "hello"}),
        (f"{dev_app.url}/api/v1/agent/chat", {"message": "hello", "caller_id": "someone-else"}),
    ]
    for url, body in sent:
        refused = httpx.post(url, json={"callerId": "someone-else", **body}, headers=ALICE)
        assert refused.status_code == 403, (url, refused.text)
        assert set(refused.json()) == {"error", "message", "timestamp", "requestId"}
    stored = httpx.get(dev_app.conversation_url(cid, "messages"), headers=ALICE).json()["items"]
    assert stored == [] and dev_app.llm.requests == []
    listed = httpx.get(f"{dev_app.url}/api/v1/chat/conversations", headers=ALICE).json()["items"]
    assert [c["conversationId"] for c in listed] == [cid]  # the agent chat kept nothing either


def test_the_callers_own_id_is_ignored_by_the_ui_stream_and_the_agent_chat(dev_app):
    dev_app.llm.script(text_reply("Hello from the stream."), text_reply("Hello from the agent."))
    cid = new_conversation(dev_app.url)
    user = {"id": "u-1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}
    ui = httpx.post(
        dev_app.conversation_url(cid, "ui-stream"),
        json={"messages": [user], "callerId": "alice-older"},
        headers=ALICE,
        timeout=60,
    )
    agent = httpx.post(
        f"{dev_app.url}/api/v1/agent/chat",
        json={"message": "hello", "callerId": "alice-older"},
        headers=ALICE,
        timeout=60,
    )
    assert (ui.status_code, agent.status_code) == (200, 200)
    parts = [json.loads(line[6:]) for line in ui.text.splitlines() if line.startswith("data: {")]
    assert "".join(p.get("delta", "") for p in parts if p["type"] == "text-delta") == "Hello from the stream."
    assert [m.event for m in parse_sse(agent.text)][-1] == "message_complete"


def test_user_and_account_ids_join_the_context_on_the_ui_stream_and_the_agent_chat_too(dev_app):
    dev_app.llm.script(text_reply("Hello from the stream."), text_reply("Hello from the agent."))
    cid = new_conversation(dev_app.url)
    user = {"id": "u-1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}
    ids = {"userId": "u-4242", "accountId": "acct-9191"}
    ui = httpx.post(
        dev_app.conversation_url(cid, "ui-stream"),
        json={"messages": [user], **ids, "context": {"accountId": "acct-own"}},  # the context's own wins
        headers=ALICE,
        timeout=60,
    )
    agent = httpx.post(
        f"{dev_app.url}/api/v1/agent/chat",
        json={"message": "hello", "user_id": "u-4242", "account_id": "acct-9191"},  # seed 004's case too
        headers=ALICE,
        timeout=60,
    )
    assert (ui.status_code, agent.status_code) == (200, 200), (ui.text, agent.text)
    streamed, agents = (json.dumps(request["messages"]) for request in dev_app.llm.requests)
    assert "u-4242" in streamed and "acct-own" in streamed and "acct-9191" not in streamed
    assert "u-4242" in agents and "acct-9191" in agents
    refused = httpx.post(
        dev_app.conversation_url(cid, "ui-stream"),
        json={"messages": [user], "userId": "u\u200b1"},  # a format character: as on every chat body
        headers=ALICE,
    )
    assert refused.status_code == 422


@pytest.fixture
def structured(monkeypatch) -> None:
    monkeypatch.setenv("LOOP_FINALIZER", "structured")


def test_the_structured_finalizer_starts_the_answer_with_a_response_heading(structured, dev_app):
    dev_app.llm.script(text_reply("Run the suite with make test [source:guide#0].", chunks=3))
    cid = new_conversation(dev_app.url)
    response = httpx.post(
        dev_app.conversation_url(cid, "messages/stream"),
        json={"message": "How do I run the tests?"},
        headers=ALICE,
        timeout=60,
    )
    streamed = "".join(m.data["content"] for m in parse_sse(response.text) if m.event == "ResponseChunk")
    stored = httpx.get(dev_app.conversation_url(cid, "messages"), headers=ALICE).json()["items"][-1][
        "content"
    ]
    assert streamed == stored
    assert (
        stored
        == "## Response\n\nRun the suite with make test [source:guide#0].\n\n**Sources**\n- Guide [source:guide#0]"
    )

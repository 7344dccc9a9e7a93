"""The AI SDK UI message stream routes, read by the AI SDK's own chat client of both current majors
(node, `ai` 6 and 7 pinned in tests/node): text, tool parts, sources and metadata of a turn, an
approval approved and one denied, a resume after the connection drops mid-answer, an error turn, a turn
the app stops, regenerate and edit; refusals before a byte."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.fakes.llm_script import error_reply, text_reply, tool_calls_reply
from tests.integration.served import run_node

pytestmark = pytest.mark.integration

ALICE = {"X-Caller-Id": "alice"}
API_KEY = "sk-test-SECRET-KEY-4242"
ORDERS = json.dumps({"contextType": "orders"})
ALICE_CLAIMS = {"CALLER_CLAIMS": json.dumps({"accountId": "acct-1001"})}  # her account in the demo tool API


def new_conversation(base: str, headers=ALICE) -> str:
    response = httpx.post(f"{base}/api/v1/chat/conversations", json={}, headers=headers)
    assert response.status_code == 201, response.text
    return response.json()["conversationId"]


def ui_message(text: str, message_id: str = "u-1", role: str = "user") -> dict:
    return {"id": message_id, "role": role, "parts": [{"type": "text", "text": text}]}


def use_chat(major: str, url: str, caller: str, text: str, body: str = "{}", mode: str = "", **kw) -> dict:
    return run_node("ui_stream_client.mjs", major, url, caller, text, body, mode, **kw)


MAJORS = pytest.mark.parametrize("major", ["6", "7"])


@MAJORS
def test_use_chat_assembles_tool_parts_text_sources_and_metadata(dev_app, major):
    dev_app.llm.script(
        tool_calls_reply([("get_order_status", {"orderId": "A-1001"}, "call_1")]),
        text_reply("Order A-1001 has shipped; tests run with make test [source:guide#0].", chunks=4),
    )
    cid = new_conversation(dev_app.url)
    out = use_chat(
        major,
        dev_app.conversation_url(cid, "ui-stream"),
        "alice",
        "Where is my order A-1001, and how do I run the tests?",
        ORDERS,
        env=ALICE_CLAIMS,
    )
    assert (out["status"], out["error"], out["errors"]) == ("ready", None, [])
    user, assistant = out["messages"]
    assert user["role"] == "user" and assistant["role"] == "assistant"
    parts = assistant["parts"]
    assert [p["type"] for p in parts] == [
        "step-start",
        "dynamic-tool",
        "step-start",
        "text",
        "source-document",
    ]
    tool = parts[1]
    assert (tool["toolName"], tool["toolCallId"], tool["state"]) == (
        "get_order_status",
        "call_1",
        "output-available",
    )
    assert tool["input"] == {"orderId": "A-1001"}
    assert json.loads(tool["output"])["status"] == "shipped"  # the demo tool API, for alice's own account
    assert parts[3] == {
        "type": "text",
        "text": "Order A-1001 has shipped; tests run with make test [source:guide#0].",
        "state": "done",
    }
    source = parts[4]
    assert (source["sourceId"], source["title"], source["mediaType"]) == ("guide#0", "Guide", "text/plain")
    assert source["providerMetadata"]["ragOrchestrator"]["documentId"] == "guide"
    # status updates arrive as transient data parts: on onData, never in the message
    assert {"type": "data-status", "data": {"status": "Searching the knowledge base"}} in [
        {k: v for k, v in d.items() if k != "transient"} for d in out["data"]
    ]
    metadata = assistant["metadata"]
    stored = httpx.get(dev_app.conversation_url(cid, "messages"), headers=ALICE).json()["items"]
    assert stored[-1]["messageId"] == metadata["messageId"] and stored[-1]["role"] == "assistant"
    assert (metadata["conversationId"], metadata["iterationsUsed"]) == (cid, 2)
    assert assistant["id"] == metadata["turnId"]  # the UI message is the turn's: a resume finds it
    assert metadata["usage"] == {"totalTokens": metadata["tokensUsed"]} and metadata["finishReason"] == "stop"
    assert out["finishes"] == [{"finishReason": "stop", "isDisconnect": False}]
    assert stored[0]["clientMessageId"] == user["id"]  # the SDK's message id: a resend starts no turn
    users = [m["content"] for m in dev_app.llm.requests[0]["messages"] if m["role"] == "user"]
    assert users[0].startswith("[Data from the app]")  # the context and the passages, as data
    assert users[1:] == ["Where is my order A-1001, and how do I run the tests?"]


def test_preview_tools_give_a_data_preview_part(dev_app):
    dev_app.llm.script(
        tool_calls_reply([("preview_workflow", {"change": "reminder email"}, "call_p")]),
        text_reply("Here is the workflow with a reminder email. Shall I save it?"),
    )
    cid = new_conversation(dev_app.url)
    body = json.dumps({"contextType": "workflow", "context": {"workflowId": "wf-onboarding"}})
    out = use_chat("7", dev_app.conversation_url(cid, "ui-stream"), "alice", "Add a reminder", body)
    parts = out["messages"][1]["parts"]
    preview = next(p for p in parts if p["type"] == "data-preview")
    assert preview["data"]["previewType"] == "workflow_preview"
    assert preview["data"]["payload"]["steps"][-1] == "reminder email"
    tool = next(p for p in parts if p["type"] == "dynamic-tool")
    assert tool["output"] == "preview_sent"


def test_a_failed_turn_is_the_chats_error_and_leaks_nothing(dev_app):
    dev_app.llm.script(error_reply(401, f"invalid key {API_KEY}"))
    cid = new_conversation(dev_app.url)
    out = use_chat("6", dev_app.conversation_url(cid, "ui-stream"), "alice", "hello")
    assert out["status"] == "error"
    assert out["error"] and API_KEY not in json.dumps(out)
    assert "Traceback" not in json.dumps(out)


def test_stop_cancels_the_turn_and_the_chat_keeps_the_partial_answer(dev_app):
    """An app's Stop button: the cancel route with the turnId of the message's metadata."""
    dev_app.llm.script(
        text_reply("Run the suite with make test, then read the report.", chunks=4, gate_after=1)
    )
    cid = new_conversation(dev_app.url)
    url = dev_app.conversation_url(cid, "ui-stream")
    out = use_chat("7", url, "alice", "How do I run the tests?", "{}", "stop")
    assert (out["status"], out["error"], out["cancelStatuses"]) == ("ready", None, [202])
    assistant = out["messages"][1]
    text = "".join(p["text"] for p in assistant["parts"] if p["type"] == "text")
    metadata = assistant["metadata"]
    assert metadata["finishReason"] == "cancelled" and metadata["turnId"]
    stored = httpx.get(dev_app.conversation_url(cid, "messages"), headers=ALICE).json()["items"][-1]
    assert (stored["messageId"], stored["content"], stored["interrupted"]) == (
        metadata["messageId"],
        text,
        True,
    )
    assert text and "read the report" not in text  # the model never got past its first piece


def test_another_callers_conversation_fails_before_the_stream(dev_app):
    cid = new_conversation(dev_app.url)
    out = use_chat("7", dev_app.conversation_url(cid, "ui-stream"), "mallory", "hello")
    assert out["status"] == "error"
    assert json.loads(out["error"])["error"] == "Conversation not found"
    assert len(out["messages"]) == 1  # the user's message only: no assistant message was started


@pytest.mark.parametrize("dev_app", ["extractive"], indirect=True)
def test_the_wire_format_headers_parts_and_done(dev_app):
    cid = new_conversation(dev_app.url)
    body = {
        "id": "chat-1",
        "messages": [ui_message("How do I run the test suite?")],
        "trigger": "submit-message",
    }
    with httpx.stream(
        "POST", dev_app.conversation_url(cid, "ui-stream"), json=body, headers=ALICE
    ) as response:
        text = response.read().decode()
    assert response.status_code == 200
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert response.headers["content-type"].startswith("text/event-stream")
    blocks = [b for b in text.split("\n\n") if b]
    assert all(b.startswith("data: ") and "\n" not in b for b in blocks)
    assert blocks[-1] == "data: [DONE]"
    parts = [json.loads(b[6:]) for b in blocks[:-1]]
    kinds = [p["type"] for p in parts]
    assert kinds[:2] == ["start", "start-step"] and kinds[-2:] == ["finish-step", "finish"]
    assert "tool-input-available" in kinds and "source-document" in kinds
    assert not [k for k in kinds if k.startswith("reasoning")]


@pytest.mark.parametrize("dev_app", ["extractive"], indirect=True)
def test_bodies_the_route_refuses_start_nothing(dev_app):
    cid = new_conversation(dev_app.url)
    url = dev_app.conversation_url(cid, "ui-stream")
    cases = [
        ({"messages": []}, 422),
        ({"messages": [ui_message("hi", role="assistant")]}, 422),
        ({"messages": [{"id": "u", "role": "user", "parts": [{"type": "file", "url": "x"}]}]}, 422),
        ({"messages": [ui_message("hi")], "trigger": "regenerate-message"}, 409),
    ]
    for body, status in cases:
        response = httpx.post(url, json=body, headers=ALICE)
        assert response.status_code == status, (body, response.text)
        assert set(response.json()) == {"error", "message", "timestamp", "requestId"}
    conversation = httpx.get(f"{dev_app.url}/api/v1/chat/conversations/{cid}", headers=ALICE).json()
    assert conversation["messageCount"] == 0
    first = httpx.post(url, json={"messages": [ui_message("hi", "same")]}, headers=ALICE)
    again = httpx.post(url, json={"messages": [ui_message("hi", "same")]}, headers=ALICE)
    assert (first.status_code, again.status_code) == (200, 409)


@pytest.mark.parametrize("dev_app", ["extractive"], indirect=True)
def test_regenerate_message_answers_the_last_question_again(dev_app):
    """useChat's regenerate(): the chat up to the last question, sent again with its trigger."""
    cid = new_conversation(dev_app.url)
    url = dev_app.conversation_url(cid, "ui-stream")
    asked = {"messages": [ui_message("How do I run the tests?", "u-1")]}
    assert httpx.post(url, json=asked, headers=ALICE, timeout=30).status_code == 200
    again = httpx.post(url, json=asked | {"trigger": "regenerate-message"}, headers=ALICE, timeout=30)
    assert again.status_code == 200 and '"type":"finish"' in again.text
    listed = httpx.get(dev_app.conversation_url(cid, "messages"), params={"versions": "all"}, headers=ALICE)
    answers = [m for m in listed.json()["items"] if m["role"] == "assistant" and not m["toolCalls"]]
    assert len(answers) == 2 and answers[0]["supersededBy"] == answers[1]["messageId"]
    other = {"messages": [ui_message("Something else?", "u-2")], "trigger": "regenerate-message"}
    refused = httpx.post(url, json=other, headers=ALICE, timeout=30)
    assert refused.status_code == 409 and set(refused.json()) == {
        "error",
        "message",
        "timestamp",
        "requestId",
    }
    stranger = httpx.post(url, json=asked | {"trigger": "regenerate-message"}, headers={"X-Caller-Id": "eve"})
    assert stranger.status_code == 404


CANCEL = {"orderId": "A-1002"}


def tool_parts(message: dict) -> list[dict]:
    return [p for p in message["parts"] if p["type"] == "dynamic-tool"]


@MAJORS
def test_an_approval_is_the_sdks_own_and_its_answer_continues_the_turn(dev_app, major):
    """addToolApprovalResponse, sent by the chat itself: approved, the tool runs; denied, it does not."""
    for decision, answer in [("approve", "Order A-1002 is cancelled."), ("deny", "I left A-1002 as it is.")]:
        dev_app.llm.script(tool_calls_reply([("cancel_order", CANCEL, "call_c")]), text_reply(answer))
        cid = new_conversation(dev_app.url)
        url = dev_app.conversation_url(cid, "ui-stream")
        out = use_chat(
            major, url, "alice", "Cancel order A-1002", ORDERS, f"{decision}:not today", env=ALICE_CLAIMS
        )
        assert (out["status"], out["error"], out["errors"]) == ("ready", None, []), out
        (asked,) = tool_parts(out["before"][-1])
        assert (asked["state"], asked["toolName"], asked["input"]) == (
            "approval-requested",
            "cancel_order",
            CANCEL,
        )
        assert out["before"][-1]["metadata"]["finishReason"] == "awaiting_approval"
        _user, assistant = out["messages"]  # one assistant message: the continuation went on with it
        (call,) = tool_parts(assistant)
        assert call["approval"]["id"] == asked["approval"]["id"]
        text = "".join(p["text"] for p in assistant["parts"] if p["type"] == "text")
        assert text == answer and assistant["metadata"]["finishReason"] == "stop"
        told = [m for m in dev_app.llm.requests[-1]["messages"] if m["role"] == "tool"][-1]
        if decision == "approve":
            assert call["state"] == "output-available" and json.loads(call["output"])["status"] == "cancelled"
        else:
            assert call["state"] == "output-denied"
            assert "denied" in told["content"] and "not today" in told["content"]
        stored = httpx.get(dev_app.conversation_url(cid, "messages"), headers=ALICE).json()["items"]
        assert (
            stored[-1]["content"] == answer and stored[-1]["messageId"] == assistant["metadata"]["messageId"]
        )


@MAJORS
def test_a_chat_that_lost_its_connection_resumes_the_running_turn(dev_app, major):
    """The body fails after the first text; the turn runs on; the chat GETs the route and gets the
    turn replayed from its start and followed to its end, into the same message."""
    answer = "Run the suite with make test, then read the report."
    dev_app.llm.script(text_reply(answer, chunks=4, gate_after=1))
    cid = new_conversation(dev_app.url)
    url = dev_app.conversation_url(cid, "ui-stream")

    def go_on(line: dict) -> None:
        if line.get("resuming"):  # the model finishes only once the chat has dropped and resumed
            dev_app.llm.open_gate()

    out = use_chat(major, url, "alice", "How do I run the tests?", "{}", "resume", on_line=go_on)
    assert out["finishes"][0]["isDisconnect"] is True
    partial = "".join(p["text"] for p in out["before"][-1]["parts"] if p["type"] == "text")
    assert partial and answer.startswith(partial) and partial != answer
    assert (out["status"], out["error"]) == ("ready", None), out
    _user, assistant = out["messages"]  # the replay replaced the partial message: no second one
    assert "".join(p["text"] for p in assistant["parts"] if p["type"] == "text") == answer
    assert assistant["id"] == out["before"][-1]["id"] == assistant["metadata"]["turnId"]
    stored = httpx.get(dev_app.conversation_url(cid, "messages"), headers=ALICE).json()["items"]
    assert stored[-1]["content"] == answer and stored[-1]["messageId"] == assistant["metadata"]["messageId"]
    assert httpx.get(url, headers=ALICE).status_code == 204  # ended: nothing to resume


def test_edit_replaces_the_question_the_chat_names(dev_app):
    """useChat's sendMessage({text, messageId}) on the last question: an edit (docs/conversations.md)."""
    dev_app.llm.script(text_reply("Run make test."), text_reply("Run make dev."))
    cid = new_conversation(dev_app.url)
    url = dev_app.conversation_url(cid, "ui-stream")
    out = use_chat("7", url, "alice", "How do I run the tests?", "{}", "edit:How do I start the dev server?")
    assert (out["status"], out["error"]) == ("ready", None)
    user, _assistant = out["messages"]
    assert (
        user["id"] == out["before"][0]["id"] and user["parts"][0]["text"] == "How do I start the dev server?"
    )
    listed = httpx.get(dev_app.conversation_url(cid, "messages"), params={"versions": "all"}, headers=ALICE)
    items = listed.json()["items"]
    assert [m["content"] for m in items if not m.get("supersededBy")] == [
        "How do I start the dev server?",
        "Run make dev.",
    ]
    assert len([m for m in items if m.get("supersededBy")]) == 2


@pytest.mark.parametrize("dev_app", ["extractive"], indirect=True)
def test_resume_is_204_while_nothing_runs_and_404_for_another_callers(dev_app):
    cid = new_conversation(dev_app.url)
    url = dev_app.conversation_url(cid, "ui-stream")
    assert httpx.get(url, headers=ALICE).status_code == 204
    foreign = httpx.get(url, headers={"X-Caller-Id": "mallory"})
    assert foreign.status_code == 404 and set(foreign.json()) == {
        "error",
        "message",
        "timestamp",
        "requestId",
    }


def answered(approval_id: str, approved: bool = True, message_id: str = "a-1") -> dict:
    part = {
        "type": "dynamic-tool",
        "toolName": "cancel_order",
        "toolCallId": "call_c",
        "state": "approval-responded",
        "input": CANCEL,
        "approval": {"id": approval_id, "approved": approved},
    }
    return {"id": message_id, "role": "assistant", "parts": [part]}


def test_approval_answers_the_route_refuses_store_nothing(dev_app):
    """Not pending (already decided), not the caller's, unknown, or malformed: a 4xx before a byte."""
    dev_app.llm.script(tool_calls_reply([("cancel_order", CANCEL, "call_c")]), text_reply("Done."))
    cid = new_conversation(dev_app.url)
    url = dev_app.conversation_url(cid, "ui-stream")
    held = httpx.post(
        url, json={"messages": [ui_message("Cancel A-1002")], **json.loads(ORDERS)}, headers=ALICE
    )
    parts = [json.loads(line[6:]) for line in held.text.splitlines() if line.startswith("data: {")]
    (request,) = [p for p in parts if p["type"] == "tool-approval-request"]
    approval = request["approvalId"]
    chat = [ui_message("Cancel A-1002"), answered(approval)]
    stranger = httpx.post(url, json={"messages": chat}, headers={"X-Caller-Id": "mallory"})
    unknown = httpx.post(url, json={"messages": [ui_message("x"), answered("01UNKNOWN")]}, headers=ALICE)
    two = {"messages": [answered(approval) | {"parts": answered(approval)["parts"] * 2}]}
    malformed = [
        {"messages": [answered(approval) | {"parts": []}]},  # an assistant message answering nothing
        two,
        {"messages": chat, "trigger": "regenerate-message"},
        {
            "messages": [
                answered(approval)
                | {"parts": [{"type": "dynamic-tool", "state": "approval-responded", "approval": {"id": ""}}]}
            ]
        },
    ]
    refusals = [stranger, unknown, *(httpx.post(url, json=b, headers=ALICE) for b in malformed)]
    assert [r.status_code for r in refusals] == [404, 404, 422, 422, 422, 422]
    for refused in refusals:
        assert set(refused.json()) == {"error", "message", "timestamp", "requestId"}
    assert dev_app.llm.pending == 1  # nothing ran: the continuation's reply is still unread
    first = httpx.post(url, json={"messages": chat}, headers=ALICE)
    again = httpx.post(url, json={"messages": chat}, headers=ALICE)
    assert (first.status_code, again.status_code) == (200, 409)
    assert again.json()["error"] == "Approval closed"

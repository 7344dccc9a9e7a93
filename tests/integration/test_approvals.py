"""Approvals and budgets over real HTTP: the two functions' apps in processes of their own, on one moto
table, with the fake LLM as the model and the fake tool API behind an `approval: required` tool.

A held call is stored by one request and decided by another (on any process: the state is in the
table); approve runs it once with its original arguments, deny tells the model why; an expired hold
is a denial; of two decisions one wins. Budgets: 20 concurrent turns of one caller against a small
budget overspend by at most one turn's tokens, and the next turn gets 429 with Retry-After.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
import pytest
import yaml

from devserver.stack import LOCAL_DEFAULTS
from rag_orchestrator.domain.fences import APP_DATA
from tests.fakes.fake_llm import FakeLLM
from tests.fakes.fake_tool_api import FakeToolAPI
from tests.fakes.llm_script import text_reply, tool_call_reply
from tests.fakes.sse import parse_sse
from tests.integration.apps import AppProcess, app_env

pytestmark = pytest.mark.integration

# Callers of this module alone: the moto table is shared with the suite (the chat page counts alice's).
ALICE = {"X-Caller-Id": "approvals-alice"}
BOB = {"X-Caller-Id": "approvals-bob"}
ORDERS = {"contextType": "orders"}
CANCEL = {"orderId": "A-1002"}
CATALOG = {
    "tools": [
        {
            "name": "cancel_order",
            "description": "Cancel an order that has not shipped",
            "contexts": ["orders"],
            "inputSchema": {
                "type": "object",
                "properties": {"orderId": {"type": "string"}},
                "required": ["orderId"],
            },
            "http": {"method": "POST", "url": "${TOOL_API_URL}/orders/{orderId}/cancel"},
            "approval": "required",
        },
        {  # the demo catalogue's shape: the account pinned to the caller's claim, nothing else accepted
            "name": "cancel_account_order",
            "description": "Cancel an order of the caller's account",
            "contexts": ["orders"],
            "inputSchema": {
                "type": "object",
                "properties": {"orderId": {"type": "string"}, "accountId": {"type": "string"}},
                "required": ["orderId", "accountId"],
                "additionalProperties": False,
            },
            "http": {
                "method": "POST",
                "url": "${TOOL_API_URL}/orders/{orderId}/cancel",
                "contextParams": {"accountId": "claim:accountId"},
            },
            "approval": "required",
        },
    ]
}
TURN_TOKENS = 18  # the fake LLM's usage per reply: 11 prompt + 7 completion
LIMIT = 100


@dataclass
class Stack:
    llm: FakeLLM
    tools: FakeToolAPI
    stream: AppProcess  # ChatStreamFunction: SSE turns and decisions
    api: AppProcess  # ApiFunction: REST turns, /usage

    def conversation(self, caller: dict[str, str] = ALICE) -> str:
        response = httpx.post(f"{self.api.url}/api/v1/chat/conversations", json={}, headers=caller)
        assert response.status_code == 201, response.text
        return response.json()["conversationId"]

    def chat(self, conversation_id: str, message: str, caller=ALICE) -> httpx.Response:
        url = f"{self.stream.url}/api/v1/chat/conversations/{conversation_id}/messages/stream"
        return httpx.post(url, json={"message": message, **ORDERS}, headers=caller, timeout=30)

    def decide(self, conversation_id: str, approval_id: str, body: dict, caller=ALICE) -> httpx.Response:
        url = f"{self.stream.url}/api/v1/chat/conversations/{conversation_id}/approvals/{approval_id}"
        return httpx.post(url, json=body, headers=caller, timeout=30)

    def held(self) -> tuple[str, str]:
        """A conversation whose turn holds a cancel_order call; its approvalId."""
        conversation = self.conversation()
        self.llm.script(tool_call_reply("cancel_order", CANCEL, call_id="call_cancel"))
        events = parse_sse(self.chat(conversation, "Please cancel order A-1002").text)
        asked = [e.data for e in events if e.event == "ApprovalRequested"]
        assert len(asked) == 1, [e.event for e in events]
        assert events[-1].data["finishReason"] == "awaiting_approval"
        return conversation, asked[0]["approvalId"]


@pytest.fixture(scope="module")
def stack(moto_server, servers_dir, tmp_path_factory) -> Iterator[Stack]:
    from devserver.resources import create_resources

    catalog = tmp_path_factory.mktemp("approvals") / "catalog.yaml"
    catalog.write_text(yaml.safe_dump(CATALOG))
    with pytest.MonkeyPatch.context() as env, FakeLLM() as llm, FakeToolAPI() as tools:
        env.setenv("AWS_ENDPOINT_URL", moto_server.url)
        env.setenv("CONVERSATION_STORAGE", "dynamodb")
        create_resources(LOCAL_DEFAULTS["CONVERSATIONS_TABLE"], [LOCAL_DEFAULTS["TRANSCRIPTS_BUCKET"]])
        settings = {
            "TOOL_CATALOG_PATH": str(catalog),
            "TOOL_API_URL": tools.url,
            "LOOP_INITIAL_RAG": "false",
            "MEMORY_ENABLED": "false",
            "MODEL_MAX_RETRIES": "0",
            # Only callers with the `mod` role are limited, so the approval tests run unlimited.
            "BUDGET_TOKENS_PER_DAY": f"mod={LIMIT}",
            "BUDGET_TURN_RESERVE_TOKENS": str(TURN_TOKENS),
        }
        stream = AppProcess("chat_stream", app_env(llm, **settings), servers_dir / "approvals-stream.log")
        api = AppProcess("api", app_env(llm, **settings), servers_dir / "approvals-api.log")
        try:
            yield Stack(llm, tools, stream, api)
        finally:
            stream.stop()
            api.stop()


@pytest.fixture(autouse=True)
def quiet(stack):
    stack.llm.reset()
    stack.tools.requests.clear()


def cancels(stack: Stack) -> list[dict]:
    return [r for r in stack.tools.requests if r["path"] == "/orders/A-1002/cancel"]


def test_an_approval_tool_is_held_the_tool_api_is_not_called_and_new_messages_wait(stack):
    listed = httpx.get(f"{stack.api.url}/api/v1/agent/tools", headers=ALICE).json()["tools"]
    assert {t["name"]: t["approval"] for t in listed} == {
        "rag_search": None,
        "cancel_order": "required",
        "cancel_account_order": "required",
    }
    conversation, approval = stack.held()
    assert cancels(stack) == []
    refused = stack.chat(conversation, "hello?")
    assert refused.status_code == 409
    assert refused.json()["error"] == "Approval pending" and set(refused.json()) == {
        "error",
        "message",
        "timestamp",
        "requestId",
    }
    rest = httpx.post(
        f"{stack.api.url}/api/v1/chat/conversations/{conversation}/messages",
        json={"message": "hi"},
        headers=ALICE,
    )
    assert rest.status_code == 409 and approval in rest.json()["message"]


def test_a_call_writing_its_pinned_parameter_is_held_too_and_runs_with_the_pinned_value(stack):
    """The model's schema hides the pinned accountId and accepts nothing else, so a call that writes it
    looked invalid to the approval check, was not held, and then ran: the execution fills pinned
    parameters in (docs/tools.md: "the call is not refused, it goes out with the pinned value")."""
    mine = {**ALICE, "X-Caller-Claims": '{"accountId": "acct-1001"}'}
    conversation = stack.conversation(mine)
    written = {"orderId": "A-1002", "accountId": "acct-someone-else"}
    stack.llm.script(tool_call_reply("cancel_account_order", written, call_id="call_pinned"))
    events = parse_sse(stack.chat(conversation, "Please cancel order A-1002", mine).text)
    (asked,) = [e.data for e in events if e.event == "ApprovalRequested"]
    assert asked["arguments"] == written  # shown as the model wrote them
    assert events[-1].data["finishReason"] == "awaiting_approval" and cancels(stack) == []
    stack.llm.script(text_reply("Cancelled."))
    decided = stack.decide(conversation, asked["approvalId"], {"decision": "approve"}, mine)
    assert decided.status_code == 200, decided.text
    (sent,) = cancels(stack)
    assert sent["body"] == {"accountId": "acct-1001"}  # the caller's own account, not the model's


def test_approve_calls_the_tool_api_once_and_the_answer_uses_its_result(stack):
    conversation, approval = stack.held()
    stack.llm.script(text_reply("Done: order A-1002 is cancelled."))
    response = stack.decide(conversation, approval, {"decision": "approve"})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    events = parse_sse(response.text)
    assert [e.event for e in events if e.event.startswith("Tool")] == ["ToolCallStart", "ToolCallResult"]
    assert events[-1].event == "Completed" and events[-1].data["finishReason"] == "stop"
    (called,) = cancels(stack)
    assert called["method"] == "POST"
    sent = stack.llm.requests[-1]["messages"]
    assert sent[-1]["role"] == "tool" and "cancelled" in sent[-1]["content"]
    assert sent[-2]["tool_calls"][0]["id"] == "call_cancel"
    texts = "".join(e.data["content"] for e in events if e.event == "ResponseChunk")
    assert texts == "Done: order A-1002 is cancelled."
    again = stack.decide(conversation, approval, {"decision": "deny"})
    assert again.status_code == 409 and again.json()["error"] == "Approval closed"
    assert len(cancels(stack)) == 1


def test_deny_with_a_reason_never_calls_the_tool_and_the_model_reads_the_reason(stack):
    conversation, approval = stack.held()
    stack.llm.script(text_reply("All right, I left the order alone."))
    events = parse_sse(
        stack.decide(conversation, approval, {"decision": "deny", "reason": "I still want it"}).text
    )
    assert events[-1].data["finishReason"] == "stop"
    told = stack.llm.requests[-1]["messages"][-1]
    assert told["role"] == "tool" and "denied" in told["content"] and "I still want it" in told["content"]
    assert cancels(stack) == []
    # The conversation takes messages again, and the audit trail has the request and the decision.
    stack.llm.script(text_reply("Anything else?"))
    assert stack.chat(conversation, "thanks").status_code == 200
    audit = httpx.get(
        f"{stack.api.url}/api/v1/admin/audit",
        params={"conversationId": conversation},
        headers={"X-Caller-Id": "approvals-root", "X-Caller-Roles": "admin"},
    ).json()
    assert audit["chainValid"]
    kinds = [
        (r.get("approvalRequested") or {}).get("approvalId")
        or (r.get("approvalDecision") or {}).get("decision")
        for r in audit["records"]
    ]
    assert kinds == [approval, "denied", None]


def test_an_expired_approval_is_refused_and_the_next_message_answers_it_as_denied(stack):
    from rag_orchestrator.api.deps import process_aws
    from rag_orchestrator.conversations import items as it
    from rag_orchestrator.conversations.approvals import PENDING_FIELD

    conversation, approval = stack.held()
    process_aws().client("dynamodb").update_item(
        TableName=LOCAL_DEFAULTS["CONVERSATIONS_TABLE"],
        Key=it.to_attributes({"PK": it.pk(conversation), "SK": it.META}),
        UpdateExpression=f"SET {PENDING_FIELD}.decideBy = :past",  # as if the hour had gone by
        ExpressionAttributeValues={":past": {"N": str(int(time.time()) - 1)}},
    )
    late = stack.decide(conversation, approval, {"decision": "approve"})
    assert late.status_code == 409 and "expired" in late.json()["message"]
    stack.llm.script(text_reply("Sure. What else can I do?"))
    events = parse_sse(stack.chat(conversation, "Something else then").text)
    assert events[-1].data["finishReason"] == "stop" and cancels(stack) == []
    sent = [m for m in stack.llm.requests[-1]["messages"] if not (m["content"] or "").startswith(APP_DATA)]
    assert [m["role"] for m in sent[-3:]] == ["assistant", "tool", "user"]  # the app's data set aside
    assert "expired" in sent[-2]["content"] and sent[-1]["content"] == "Something else then"


def test_two_concurrent_decisions_one_wins(stack):
    conversation, approval = stack.held()
    stack.llm.default = text_reply("Cancelled.")
    with ThreadPoolExecutor(2) as pool:
        answers = list(
            pool.map(lambda d: stack.decide(conversation, approval, {"decision": d}), ["approve", "deny"])
        )
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200, 409]
    winner = next(a for a in answers if a.status_code == 200)
    approved = any(e.event == "ToolCallStart" for e in parse_sse(winner.text))
    assert len(cancels(stack)) == (1 if approved else 0)


def test_another_callers_or_an_unknown_approval_is_404(stack):
    conversation, approval = stack.held()
    foreign = stack.decide(conversation, approval, {"decision": "approve"}, caller=BOB)
    assert foreign.status_code == 404 and foreign.json()["error"] == "Approval not found"
    assert stack.decide(conversation, "01UNKNOWN", {"decision": "approve"}).status_code == 404
    assert stack.decide(conversation, approval, {"decision": "maybe"}).status_code == 422
    assert cancels(stack) == []


MOD = {"X-Caller-Id": "moderator-1", "X-Caller-Roles": "mod"}


def usage(stack: Stack, caller=MOD) -> dict:
    response = httpx.get(f"{stack.api.url}/api/v1/usage", headers=caller)
    assert response.status_code == 200, response.text
    return response.json()


def test_twenty_concurrent_turns_overspend_by_at_most_one_turn_and_the_next_gets_429(stack):
    stack.llm.default = text_reply("ok")
    conversations = [stack.conversation(MOD) for _ in range(20)]

    async def turn(client: httpx.AsyncClient, conversation_id: str) -> httpx.Response:
        url = f"{stack.api.url}/api/v1/chat/conversations/{conversation_id}/messages"
        return await client.post(url, json={"message": "hi"}, headers=MOD)

    async def all_at_once() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=60) as client:
            return await asyncio.gather(*(turn(client, c) for c in conversations))

    answers = asyncio.run(all_at_once())
    done = [a for a in answers if a.status_code == 200]
    refused = [a for a in answers if a.status_code == 429]
    assert len(done) + len(refused) == 20 and done and refused
    assert all(a.headers["retry-after"] and a.json()["error"] == "Budget exhausted" for a in refused)
    figures = usage(stack)
    assert figures["tokensUsed"] == TURN_TOKENS * len(done) == sum(a.json()["tokensUsed"] for a in done)
    assert LIMIT <= figures["tokensUsed"] <= LIMIT + TURN_TOKENS  # over by at most one turn
    assert figures["tokensLimit"] == LIMIT
    resets = datetime.fromisoformat(figures["resetsAt"].replace("Z", "+00:00"))
    assert resets > datetime.now(UTC) and (resets.hour, resets.minute, resets.second) == (0, 0, 0)
    calls = len(stack.llm.requests)
    nxt = stack.chat(
        stack.conversation(MOD), "one more", caller=MOD
    )  # the SSE route answers 429 before streaming
    assert nxt.status_code == 429 and nxt.headers["content-type"].startswith("application/json")
    to_midnight = (resets - datetime.now(UTC)).total_seconds()
    assert abs(int(nxt.headers["retry-after"]) - to_midnight) < 5
    assert len(stack.llm.requests) == calls  # no model call


def test_usage_of_unlimited_callers(stack):
    stack.llm.script(text_reply("hello"))
    conversation = stack.conversation(BOB)
    before = usage(stack, BOB)["tokensUsed"]
    assert stack.chat(conversation, "hi", caller=BOB).status_code == 200
    figures = usage(stack, BOB)
    assert figures["tokensLimit"] is None and figures["tokensUsed"] == before + TURN_TOKENS
    admin = usage(stack, {"X-Caller-Id": "approvals-root", "X-Caller-Roles": "admin"})
    assert admin["tokensLimit"] is None


def test_a_rest_turn_names_the_approval_and_another_function_decides_it(stack):
    conversation = stack.conversation()
    stack.llm.script(tool_call_reply("cancel_order", CANCEL, call_id="call_rest"))
    answered = httpx.post(
        f"{stack.api.url}/api/v1/chat/conversations/{conversation}/messages",
        json={"message": "Cancel A-1002", **ORDERS},
        headers=ALICE,
        timeout=30,
    ).json()
    assert answered["finishReason"] == "awaiting_approval" and answered["message"] == ""
    approval = answered["approval"]
    assert (approval["toolName"], approval["toolCallId"], approval["arguments"]) == (
        "cancel_order",
        "call_rest",
        CANCEL,
    )
    stack.llm.script(text_reply("Cancelled."))
    events = parse_sse(stack.decide(conversation, approval["approvalId"], {"decision": "approve"}).text)
    assert events[-1].data["finishReason"] == "stop" and len(cancels(stack)) == 1

"""Approvals and budgets through the real loop over the memory store, with a scripted model.

What the loop does with an `approval: required` tool (held, not run), with a decision (run with the
original arguments, or the model told why not), with several calls in one step, with an expired
hold, and with a caller's daily budget. The DynamoDB side is shown over HTTP in
tests/integration/test_approvals.py.
"""

from __future__ import annotations

import json
import time
from typing import ClassVar

import pytest

from rag_orchestrator.config import load_settings
from rag_orchestrator.conversations.in_process import InProcessStore
from rag_orchestrator.domain.approvals import NOT_RUN
from rag_orchestrator.domain.budgets import Budgets, Spend, seconds_to_reset
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import Conversation
from rag_orchestrator.domain.fences import blocks
from rag_orchestrator.domain.messages import Role, ToolResult
from rag_orchestrator.errors import ApprovalClosed, ApprovalNotFound, ApprovalPending, BudgetExhausted
from rag_orchestrator.loop.request import TurnRequest
from tests.fakes.scripted import ScriptedStrategy, answer, call, scripted_orchestrator, tool_calls

ALICE = Caller("alice", ("user",))
BOB = Caller("bob", ("user",))
ARGS = json.dumps({"orderId": "A-1002"})


class OrderTool:
    parameters: ClassVar[dict] = {
        "type": "object",
        "properties": {"orderId": {"type": "string"}},
        "required": ["orderId"],
    }

    def __init__(self, name: str, *, approval: bool) -> None:
        self.name, self.description, self.approval_required = name, f"{name} an order", approval
        self.runs: list[dict] = []

    async def execute(self, arguments, ctx):
        self.runs.append(arguments)
        return ToolResult(
            tool_call_id="", tool_name=self.name, result=f"{self.name} done for {arguments['orderId']}"
        )


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class Setup:
    def __init__(self, *script, store=None, **env):
        self.strategy = ScriptedStrategy(list(script))
        self.cancel = OrderTool("cancel_order", approval=True)
        self.refund = OrderTool("refund_order", approval=True)
        self.status = OrderTool("order_status", approval=False)
        self.store = store or InProcessStore()
        settings = load_settings(conversation_storage="memory", loop_initial_rag=False, **env)
        self.orchestrator = scripted_orchestrator(
            self.strategy, store=self.store, tools=[self.cancel, self.refund, self.status], settings=settings
        )

    async def conversation(self, caller=ALICE) -> str:
        return (await self.store.create(Conversation(caller_id=caller.caller_id))).conversation_id

    async def turn(self, conversation_id, message="cancel A-1002", caller=ALICE):
        turn = await self.orchestrator.begin(TurnRequest(conversation_id, caller, message))
        return [event async for event in turn.events()]

    async def decide(self, conversation_id, approval_id, decision, reason=None, caller=ALICE):
        request = TurnRequest(conversation_id, caller, "")
        turn = await self.orchestrator.decide(request, approval_id, decision, reason)
        return [event async for event in turn.events()]


def of_type(events, kind):
    return [e for e in events if e.type == kind]


async def test_an_approval_tool_is_held_and_the_turn_waits():
    s = Setup(tool_calls(call("cancel_order", ARGS, "c1")))
    conversation = await s.conversation()
    events = await s.turn(conversation)
    (asked,) = of_type(events, "ApprovalRequested")
    assert (asked.tool_name, asked.tool_call_id, asked.arguments) == (
        "cancel_order",
        "c1",
        {"orderId": "A-1002"},
    )
    assert events[-1].type == "Completed" and events[-1].finish_reason == "awaiting_approval"
    assert events[-1].message_id is None and s.cancel.runs == []
    with pytest.raises(ApprovalPending):
        await s.turn(conversation, "hello?")
    stored = (await s.store.messages(conversation, "alice")).items
    assert [m.role for m in stored] == [Role.USER, Role.ASSISTANT]  # the call, no empty answer


async def test_approve_runs_the_original_call_and_the_model_answers_with_its_result():
    s = Setup(tool_calls(call("cancel_order", ARGS, "c1")), answer("Order A-1002 is cancelled."))
    conversation = await s.conversation()
    approval = of_type(await s.turn(conversation), "ApprovalRequested")[0].approval_id
    events = await s.decide(conversation, approval, "approve")
    assert s.cancel.runs == [{"orderId": "A-1002"}]
    result = of_type(events, "ToolCallResult")[0]
    assert result.success and result.result == "cancel_order done for A-1002"
    sent = s.strategy.requests[-1][0]
    assert sent[-1].role is Role.TOOL and blocks(sent[-1].content, "tool-result") == [
        "cancel_order done for A-1002"
    ]
    assert sent[-2].tool_calls[0].id == "c1" and sent[-3].content == "cancel A-1002"
    assert events[-1].finish_reason == "stop"
    trail = await s.store.audit(conversation)
    assert trail.chain_valid
    asked, decided = trail.records
    assert (
        asked["approvalRequested"]["approvalId"] == approval and asked["finishReason"] == "awaiting_approval"
    )
    assert decided["approvalDecision"] == {
        "approvalId": approval,
        "toolName": "cancel_order",
        "toolCallId": "c1",
        "decision": "approved",
        "reason": None,
    }
    assert decided["userMessage"] is None
    with pytest.raises(ApprovalClosed):  # decided once: a second decision is refused
        await s.decide(conversation, approval, "deny")


async def test_deny_tells_the_model_why_and_never_runs_the_tool():
    s = Setup(tool_calls(call("cancel_order", ARGS, "c1")), answer("I left the order as it is."))
    conversation = await s.conversation()
    approval = of_type(await s.turn(conversation), "ApprovalRequested")[0].approval_id
    events = await s.decide(conversation, approval, "deny", "I changed my mind")
    assert s.cancel.runs == []
    told = s.strategy.requests[-1][0][-1]
    assert told.role is Role.TOOL and "denied" in told.content and "I changed my mind" in told.content
    assert of_type(events, "ToolCallResult")[0].success is False
    assert (await s.store.audit(conversation)).records[-1]["approvalDecision"]["decision"] == "denied"


async def test_one_step_runs_the_free_calls_holds_one_and_refuses_the_other_approval_calls():
    s = Setup(
        tool_calls(
            call("order_status", ARGS, "s1"),
            call("cancel_order", ARGS, "c1"),
            call("refund_order", ARGS, "r1"),
        )
    )
    conversation = await s.conversation()
    events = await s.turn(conversation)
    assert s.status.runs == [{"orderId": "A-1002"}] and s.cancel.runs == s.refund.runs == []
    assert [e.tool_call_id for e in of_type(events, "ApprovalRequested")] == ["c1"]
    results = {e.tool_call_id: e for e in of_type(events, "ToolCallResult")}
    assert set(results) == {"s1", "r1"} and NOT_RUN in results["r1"].result and not results["r1"].success


async def test_invalid_arguments_are_not_held_they_fail_like_any_call():
    s = Setup(tool_calls(call("cancel_order", "{}", "c1")), answer("I need the order number."))
    conversation = await s.conversation()
    events = await s.turn(conversation)
    assert not of_type(events, "ApprovalRequested") and events[-1].finish_reason == "stop"
    assert of_type(events, "ToolCallResult")[0].success is False and s.cancel.runs == []


async def test_another_callers_or_an_unknown_approval_is_not_found():
    s = Setup(tool_calls(call("cancel_order", ARGS, "c1")))
    conversation = await s.conversation()
    approval = of_type(await s.turn(conversation), "ApprovalRequested")[0].approval_id
    with pytest.raises(ApprovalNotFound):
        await s.decide(conversation, approval, "approve", caller=BOB)
    with pytest.raises(ApprovalNotFound):
        await s.decide(conversation, "nope", "approve")


async def test_an_expired_hold_is_a_denial_the_next_message_answers():
    clock = Clock()
    s = Setup(
        tool_calls(call("cancel_order", ARGS, "c1")),
        answer("Sure, what else?"),
        store=InProcessStore(clock=clock),
        approval_ttl_minutes=1,
    )
    conversation = await s.conversation()
    approval = of_type(await s.turn(conversation), "ApprovalRequested")[0].approval_id
    clock.now += 61
    with pytest.raises(ApprovalClosed, match="expired"):
        await s.decide(conversation, approval, "approve")
    events = await s.turn(conversation, "never mind, something else")
    assert events[-1].finish_reason == "stop" and s.cancel.runs == []
    sent = s.strategy.requests[-1][0]
    assert [m.role for m in sent[-3:]] == [Role.ASSISTANT, Role.TOOL, Role.USER]
    assert "expired" in sent[-2].content and sent[-2].tool_call_id == "c1"
    assert (await s.store.audit(conversation)).records[-1]["approvalDecision"]["decision"] == "expired"


async def test_a_caller_over_budget_gets_429_before_any_model_call():
    s = Setup(answer("one", tokens=30), answer("two", tokens=30), budget_tokens_per_day="user=50")
    first, other = await s.conversation(), await s.conversation(BOB)
    await s.turn(first, "hi")
    await s.turn(first, "again")  # 30 used < 50: starts, and crosses the budget
    with pytest.raises(BudgetExhausted) as refused:
        await s.turn(first, "more")
    assert refused.value.status_code == 429 and refused.value.retry_after == pytest.approx(
        seconds_to_reset(), abs=2
    )
    assert len(s.strategy.requests) == 2
    day = Spend.today(ALICE, Budgets.parse("user=50"), 0).day
    assert await s.store.usage("alice", day) == 60 and await s.store.usage("bob", day) == 0
    assert other  # bob's day is his own: nothing was counted for him


def test_budgets_parse_one_number_or_roles():
    assert Budgets.parse("5000").limit_for(ALICE) == 5000
    per_role = Budgets.parse("user=10, moderator=20")
    assert per_role.limit_for(ALICE) == 10 and per_role.limit_for(Caller("m", ("moderator",))) == 20
    assert per_role.limit_for(Caller("g", ("anonymous",))) is None  # not listed: unlimited
    assert Budgets.parse("5000").limit_for(Caller("root", ("user", "admin"))) is None
    assert not Budgets.parse(None).configured
    for bad in ("x", "user=", "user=0", "=5", "user=1,user=2"):
        with pytest.raises(ValueError):
            Budgets.parse(bad)


async def test_the_ai_sdk_stream_carries_the_request_as_the_sdks_approval_parts():
    from rag_orchestrator.api.ui_parts import UIParts

    s = Setup(tool_calls(call("cancel_order", ARGS, "c1")))
    conversation = await s.conversation()
    asked = of_type(await s.turn(conversation), "ApprovalRequested")[0]
    translation = UIParts(conversation, asked.turn_id)
    translation.start()
    call_part, request = translation.parts(asked)
    assert (call_part["type"], call_part["toolCallId"], call_part["input"]) == (
        "tool-input-available",
        "c1",
        {"orderId": "A-1002"},
    )
    assert request == {"type": "tool-approval-request", "approvalId": asked.approval_id, "toolCallId": "c1"}

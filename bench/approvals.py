"""What approvals and budgets cost: DynamoDB requests (counted on the wire, moto server) and latency.

The real Orchestrator over the DynamoDB store with a scripted model (no model on the wire) and an
in-process approval tool: a plain turn without and with a budget configured, a turn that holds a
call, and the decision's round trip (the claim, then the continuation to its Completed). Latencies
are the local stack's (moto over loopback), for comparison between the rows, not DynamoDB's own.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, ClassVar

from bench.dynamodb import WireCounter
from bench.report import Section

ARGS = '{"orderId": "A-1002"}'


class CancelTool:
    name = "cancel_order"
    description = "Cancel an order"
    approval_required = True
    parameters: ClassVar[dict] = {
        "type": "object",
        "properties": {"orderId": {"type": "string"}},
        "required": ["orderId"],
    }

    async def execute(self, arguments: dict[str, Any], ctx: Any) -> Any:
        from rag_orchestrator.domain.messages import ToolResult

        return ToolResult(tool_call_id="", tool_name=self.name, result='{"status": "cancelled"}')


def run(quick: bool = False) -> Section:
    from bench.stack import shared
    from rag_orchestrator.api.deps import process_aws
    from rag_orchestrator.conversations.factory import create_store
    from rag_orchestrator.domain.callers import Caller
    from rag_orchestrator.domain.conversations import Conversation
    from rag_orchestrator.loop.request import TurnRequest
    from tests.fakes.scripted import ScriptedStrategy, answer, call, scripted_orchestrator, tool_calls

    aws = process_aws()

    section = Section("approvals", packages=["boto3", "botocore", "moto"])
    stack = shared()
    plain = stack.settings(loop_initial_rag=False)
    budgeted = stack.settings(loop_initial_rag=False, budget_tokens_per_day="user=100000000")
    aws.reset()
    store = create_store(plain, aws)
    wire = WireCounter({"dynamodb": aws.client("dynamodb")})
    caller = Caller("bench-approvals", ("user",))
    rounds = 3 if quick else 10

    def orchestrator(script: list[Any], settings: Any) -> Any:
        return scripted_orchestrator(
            ScriptedStrategy(script), store=store, tools=[CancelTool()], settings=settings
        )

    async def new_conversation() -> str:
        return (await store.create(Conversation(caller_id=caller.caller_id))).conversation_id

    async def turn(script: list[Any], settings: Any, conversation_id: str) -> tuple[list[Any], int, float]:
        wire.take()
        started = time.perf_counter()
        active = await orchestrator(script, settings).begin(
            TurnRequest(conversation_id, caller, "Cancel A-1002")
        )
        events = [event async for event in active.events()]
        return events, wire.total("dynamodb"), (time.perf_counter() - started) * 1000

    async def main() -> None:
        rows: dict[str, list[float]] = {}
        for name, settings in (("plain turn, no budget", plain), ("plain turn, budget configured", budgeted)):
            conversation = await new_conversation()
            for _ in range(rounds):
                _, requests, _ = await turn([answer("ok")], settings, conversation)
                rows.setdefault(f"{name}: DynamoDB requests", []).append(requests)
        claim_ms, continuation_ms, holds, decisions, claims, limited = [], [], [], [], [], []
        for n in range(rounds * 2):
            settings = budgeted if n >= rounds else plain
            conversation = await new_conversation()
            events, requests, _ = await turn(
                [tool_calls(call("cancel_order", ARGS, "c1"))], settings, conversation
            )
            if events[-1].finish_reason != "awaiting_approval":
                raise RuntimeError(f"the call was not held: {events[-1]}")
            approval = next(e for e in events if e.type == "ApprovalRequested").approval_id
            wire.take()
            started = time.perf_counter()
            request = TurnRequest(conversation, caller, "")
            active = await orchestrator([answer("Cancelled.")], settings).decide(
                request, approval, "approve" if n % 2 else "deny", "bench"
            )
            claimed, claiming = time.perf_counter(), wire.total("dynamodb")
            done = [event async for event in active.events()]
            if done[-1].type != "Completed":
                raise RuntimeError(f"continuation failed: {done[-1]}")
            if settings is budgeted:
                limited.append(wire.total("dynamodb"))
                continue
            holds.append(requests)
            claims.append(claiming)
            claim_ms.append((claimed - started) * 1000)
            continuation_ms.append((time.perf_counter() - started) * 1000)
            decisions.append(wire.total("dynamodb"))
        for name, samples in rows.items():
            section.add(name, "requests", samples)
        section.add("turn that holds a call: DynamoDB requests", "requests", holds)
        section.add("decision: claim (conditional UpdateItem)", "requests", claims)
        section.add("decision: claim + continuation to Completed", "requests", decisions)
        section.add("decision with a budget (hold + claim + continuation)", "requests", limited)
        section.add("decision: claim latency", "ms", claim_ms)
        section.add(
            "decision: round trip to Completed (scripted model, in-process tool)", "ms", continuation_ms
        )

    async def concurrent(reserve: int) -> tuple[int, int, int]:
        """20 turns of one caller at once against a 100-token budget, 10 tokens each: (used, ran, refused)."""
        from rag_orchestrator.domain.budgets import Budgets, Spend
        from rag_orchestrator.errors import BudgetExhausted

        settings = stack.settings(
            loop_initial_rag=False, budget_tokens_per_day="100", budget_turn_reserve_tokens=reserve
        )
        who = Caller(f"bench-budget-{reserve}-{time.time_ns()}", ("user",))
        conversations = [
            (await store.create(Conversation(caller_id=who.caller_id))).conversation_id for _ in range(20)
        ]

        async def one(conversation_id: str) -> bool:
            try:
                active = await orchestrator([answer("ok", tokens=10)], settings).begin(
                    TurnRequest(conversation_id, who, "hi")
                )
            except BudgetExhausted:
                return False
            _ = [event async for event in active.events()]
            return True

        ran = sum(await asyncio.gather(*(one(c) for c in conversations)))
        used = await store.usage(who.caller_id, Spend.today(who, Budgets.parse("100"), 0).day)
        return used, ran, 20 - ran

    async def budgets() -> None:
        for reserve, label in ((10, "reserve 10 = one turn"), (0, "reserve 0 (check only)")):
            used, ran, refused = await concurrent(reserve)
            section.details[f"20 concurrent turns, budget 100, 10 tokens a turn, {label}"] = (
                f"{ran} ran, {refused} got 429, {used} tokens used (over by {max(0, used - 100)})"
            )

    asyncio.run(main())
    asyncio.run(budgets())
    aws.reset()
    return section

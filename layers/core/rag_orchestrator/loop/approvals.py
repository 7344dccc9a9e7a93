"""Approval in a turn (docs/approvals.md): hold a call of an `approval: required` tool, and act on its decision.

When the model calls tools in one step, the calls that need no approval run as usual, the first call
of an approval tool is held (the step is a HoldForApproval: the turn ends `awaiting_approval`), and
any further approval calls of that step are answered "not run" so the model may ask again after the
decision: one decision per turn. A call whose arguments would fail anyway is not held; it runs, and
fails, like any other. A Continuation opens with the decision acted on.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime

from rag_orchestrator.domain import events as ev
from rag_orchestrator.domain.approvals import HeldCall, Resolution
from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.ids import sortable_id
from rag_orchestrator.domain.messages import Role, ToolCall
from rag_orchestrator.loop.deps import TurnDeps
from rag_orchestrator.loop.finish import complete
from rag_orchestrator.loop.ports import Tools
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.loop.state import TurnState
from rag_orchestrator.loop.steps import HoldForApproval
from rag_orchestrator.loop.tool_round import run_tools
from rag_orchestrator.tools.registry import argument_errors


def needs_approval(call: ToolCall, tools: Tools, offered: Sequence[str]) -> bool:
    """Whether the call must wait for its caller's decision: an offered tool that needs one, called
    with arguments it would run with (arguments it would refuse fail as any tool call does). The
    check is the one the call meets when it runs, so no call that would run goes unheld."""
    tool = tools.get(call.function.name)
    if tool is None or not getattr(tool, "approval_required", False) or tool.name not in offered:
        return False
    try:
        arguments = call.parsed_arguments()
    except ValueError:
        return False
    return not argument_errors(tool, arguments)


def hold(call: ToolCall, request: TurnRequest, turn_id: str, ttl_minutes: int) -> HeldCall:
    return HeldCall(
        approval_id=sortable_id(),
        conversation_id=request.conversation_id,
        caller_id=request.caller.caller_id,
        turn_id=turn_id,
        tool_name=call.function.name,
        tool_call_id=call.id,
        arguments=call.function.arguments or "{}",
        decide_by=int(time.time()) + ttl_minutes * 60,
        context_type=request.context_type,
        context=dict(request.context),
    )


def approval_requested(held: HeldCall, turn_id: str | None = None) -> ev.ApprovalRequested:
    """The event that asks for the decision (the REST answer carries it too)."""
    return ev.ApprovalRequested(
        conversation_id=held.conversation_id,
        turn_id=turn_id or held.turn_id,
        approval_id=held.approval_id,
        tool_name=held.tool_name,
        tool_call_id=held.tool_call_id,
        arguments=json.loads(held.arguments),
        expires_at=datetime.fromtimestamp(held.decide_by, UTC),
    )


def resumed_request(request: TurnRequest, window: Sequence[ConversationMessage]) -> TurnRequest:
    """The continuation's request: the question it goes on answering (for tool selection and memory)."""
    question = next((m.content for m in reversed(window) if m.role is Role.USER), "")
    return dataclasses.replace(request, message=question)


async def hold_call(deps: TurnDeps, state: TurnState, step: HoldForApproval) -> AsyncIterator[ev.StreamEvent]:
    """Ask for the decision on the step's held call, and end the turn awaiting it."""
    held = hold(step.held, state.request, state.turn_id, deps.config.approval_ttl_minutes)
    state.record.held = held
    yield approval_requested(held, state.turn_id)
    async for event in complete(deps, state, step):
        yield event


async def act_on(
    deps: TurnDeps, state: TurnState, decided: Resolution, offered: Sequence[str]
) -> AsyncIterator[ev.StreamEvent]:
    """A continuation's first step. Approved: run the held call with its original arguments. Denied
    (or expired): the model reads why."""
    held = decided.held
    if decided.approved:
        async for event in run_tools(deps, state, [held.call()], [*offered, held.tool_name]):
            yield event
        return
    message = decided.tool_message()
    yield state.events.tool_result(held.tool_name, held.tool_call_id, message.content, success=False)
    state.messages.append(message)
    state.record.add(message, success=False)

"""Approval in a turn (docs/approvals.md): hold a call of an `approval: required` tool, and act on its decision.

When the model calls tools in one step, the calls that need no approval run as usual, the first call
of an approval tool is held (the turn ends `awaiting_approval`), and any further approval calls of that
step are answered "not run" so the model may ask again after the decision: one decision per turn.
A call whose arguments would fail anyway is not held; it runs, and fails, like any other.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rag_orchestrator.domain import events as ev
from rag_orchestrator.domain.approvals import HeldCall, Resolution
from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.ids import sortable_id
from rag_orchestrator.domain.messages import Message, Role, ToolCall
from rag_orchestrator.loop.ports import Tools, TurnRequest
from rag_orchestrator.tools.base import ToolContext
from rag_orchestrator.tools.registry import schema_errors

if TYPE_CHECKING:
    from rag_orchestrator.loop.record import TurnRecord


def needs_approval(call: ToolCall, tools: Tools, offered: Sequence[str]) -> bool:
    tool = tools.get(call.function.name)
    if tool is None or not getattr(tool, "approval_required", False) or tool.name not in offered:
        return False
    try:
        arguments = call.parsed_arguments()
    except ValueError:
        return False
    return not schema_errors(tool.parameters, arguments)


def split_calls(
    calls: Sequence[ToolCall], tools: Tools, offered: Sequence[str]
) -> tuple[ToolCall | None, list[ToolCall], list[ToolCall]]:
    """(the call to hold, the calls to run now, the approval calls not run)."""
    held: ToolCall | None = None
    run: list[ToolCall] = []
    refused: list[ToolCall] = []
    for call in calls:
        if not needs_approval(call, tools, offered):
            run.append(call)
        elif held is None:
            held = call
        else:
            refused.append(call)
    return held, run, refused


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


class ApprovalSteps:
    """ActiveTurn's part in approvals: holding a call, and acting on a decision at a continuation's start."""

    if TYPE_CHECKING:  # what ActiveTurn, which this is a part of, provides
        request: TurnRequest
        turn_id: str
        record: TurnRecord

        def _event(self, cls: type[Any], **fields: Any) -> Any: ...

        def _complete(
            self, content: str, reasoning: str | None, reason: ev.FinishReason, *, cut: bool = False
        ) -> AsyncIterator[ev.StreamEvent]: ...

        def _run_tools(
            self,
            calls: Sequence[ToolCall],
            tool_ctx: ToolContext,
            allowed: Sequence[str],
            messages: list[Message],
            refused: Sequence[ToolCall] = (),
        ) -> AsyncIterator[ev.StreamEvent]: ...

    async def _hold(self, call: ToolCall, ttl_minutes: int) -> AsyncIterator[ev.StreamEvent]:
        """Ask for the decision, and end the turn awaiting it."""
        held = hold(call, self.request, self.turn_id, ttl_minutes)
        self.record.held = held
        yield approval_requested(held, self.turn_id)
        async for event in self._complete("", None, "awaiting_approval"):
            yield event

    async def _act_on(
        self, decided: Resolution, tool_ctx: ToolContext, offered: Sequence[str], messages: list[Message]
    ) -> AsyncIterator[ev.StreamEvent]:
        """Approved: run the held call with its original arguments. Denied: the model reads why."""
        held = decided.held
        if decided.approved:
            async for event in self._run_tools([held.call()], tool_ctx, [*offered, held.tool_name], messages):
                yield event
            return
        message = decided.tool_message()
        yield self._event(
            ev.ToolCallResult,
            tool_name=held.tool_name,
            tool_call_id=held.tool_call_id,
            result=message.content,
            success=False,
        )
        messages.append(message)
        self.record.add(message, success=False)

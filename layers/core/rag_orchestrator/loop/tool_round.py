"""A round of tool calls: announced, run together (never raising, each traced: tool_spans.py), their
results recorded, streamed and handed back to the model; calls answered "not run" are recorded the same way."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from rag_orchestrator.domain import events as ev
from rag_orchestrator.domain.approvals import NOT_RUN
from rag_orchestrator.domain.messages import Message, Role, ToolCall
from rag_orchestrator.domain.text import scrub
from rag_orchestrator.loop.deps import TurnDeps
from rag_orchestrator.loop.state import TurnState
from rag_orchestrator.loop.steps import HoldForApproval, RunTools
from rag_orchestrator.loop.tool_spans import execute_calls
from rag_orchestrator.tools.base import failure


def take_calls(state: TurnState, step: RunTools | HoldForApproval, tokens: int) -> None:
    """The model's message with its calls (`tokens` its completion), for the next call and the store."""
    assistant = Message(
        role=Role.ASSISTANT, content=step.content, tool_calls=list(step.calls), reasoning=step.reasoning
    )
    state.messages.append(assistant)
    state.record.add(assistant, tokens)


async def run_tools(
    deps: TurnDeps,
    state: TurnState,
    calls: Sequence[ToolCall],
    allowed: Sequence[str],
    refused: Sequence[ToolCall] = (),
) -> AsyncIterator[ev.StreamEvent]:
    """Run `calls` (of the `allowed` tools); `refused` ones (approval calls beyond the one held) are
    answered not run."""
    emit, record = state.events, state.record
    for call in [*calls, *refused]:
        try:
            arguments = call.parsed_arguments()
        except ValueError:
            arguments = {"_raw": scrub(call.function.arguments[:2000])}
        yield emit.tool_start(call, arguments)
    context = state.request.tool_context(state.control.deadline)
    results = await state.control.wait(execute_calls(deps, calls, context, allowed)) if calls else []
    for result in [*results, *(failure(c.function.name, NOT_RUN, c.id) for c in refused)]:
        if result.success:
            record.remember(result.passages)
        if result.preview is not None:
            yield emit.preview(result.preview)
        yield emit.tool_result(result.tool_name, result.tool_call_id, result.for_client(), result.success)
        message = Message(
            role=Role.TOOL,
            content=result.for_model(),
            tool_call_id=result.tool_call_id,
            tool_name=result.tool_name,
        )
        state.messages.append(message)
        record.add(message, success=result.success)

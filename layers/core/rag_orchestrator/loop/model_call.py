"""One model call of a turn: its text streamed as ResponseChunk events, then what it produced."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any, assert_never

from rag_orchestrator.domain import events as ev
from rag_orchestrator.loop.deps import TurnDeps
from rag_orchestrator.loop.state import TurnState
from rag_orchestrator.loop.steps import ModelOutput
from rag_orchestrator.providers import events as se


async def call_model(
    deps: TurnDeps, state: TurnState, offered: list[dict[str, Any]], iteration: int
) -> AsyncIterator[ev.StreamEvent | ModelOutput]:
    """Send the state's messages with the `offered` tools; the call's ModelOutput comes last."""
    request = state.request
    ctx = se.IterationContext(
        conversation_id=request.conversation_id,
        iteration=iteration,
        max_iterations=deps.config.max_iterations,
        # Chunks in both modes, so a turn cut short keeps its text; FINAL_ONLY sends none on.
        streaming_mode=se.StreamingMode.PROGRESSIVE,
        allow_tools=bool(offered),
    )
    output, wait, emit = ModelOutput(), state.control.wait, state.events
    progressive = request.mode is se.StreamingMode.PROGRESSIVE
    partial: list[str] = []
    state.partial = partial
    async with aclosing(deps.strategy.run_iteration(state.messages, offered, ctx)) as stream:
        while (item := await wait(anext(stream, None))) is not None:
            match item:
                case se.ContentChunk(content=text):
                    partial.append(text)
                    if progressive:
                        yield emit.chunk(text)
                case se.ToolCallsComplete(tool_calls=calls, assistant_content=text, reasoning=thought):
                    output.calls, output.content, output.reasoning = calls, text or "", thought
                case se.FinalResponse(content=text, reasoning=thought):
                    output.content, output.reasoning = text, thought
                case se.IterationComplete(usage=usage):
                    output.usage = usage
                case _:
                    assert_never(item)
    state.record.iterations = iteration
    state.record.tokens += output.usage.total_tokens
    yield output

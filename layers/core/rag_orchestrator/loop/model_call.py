"""One model call of a turn: its text streamed as ResponseChunk events, then what it produced; traced
as a `chat {model}` span (docs/observability.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any, assert_never

from rag_orchestrator import tracing as tr
from rag_orchestrator.domain import events as ev
from rag_orchestrator.domain.messages import Message
from rag_orchestrator.loop.deps import TurnDeps
from rag_orchestrator.loop.history import fenced
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
    tracer, metadata = deps.tracer, deps.strategy.metadata
    sent = fenced(state.messages, state.fence)  # tool results are data (stored as the tools gave them)
    name, attributes = (
        (f"chat {metadata.model}", chat_attributes(deps, state)) if tracer.enabled else ("chat", {})
    )
    with tracer.span(name, attributes, "client") as span:
        async with aclosing(deps.strategy.run_iteration(sent, offered, ctx)) as stream:
            while (item := await wait(anext(stream, None))) is not None:
                match item:
                    case se.ContentChunk(content=text):
                        partial.append(text)
                        if progressive:
                            if not state.headed and (head := deps.finalizer.prologue):
                                state.headed = True
                                yield emit.chunk(head)
                            yield emit.chunk(text)
                    case se.ToolCallsComplete(tool_calls=calls, assistant_content=text, reasoning=thought):
                        output.calls, output.content, output.reasoning = calls, text or "", thought
                    case se.FinalResponse(content=text, reasoning=thought):
                        output.content, output.reasoning = text, thought
                    case se.IterationComplete(usage=usage, finish_reason=reason):
                        output.usage, output.finish_reason = usage, reason
                    case _:
                        assert_never(item)
        if tracer.enabled:
            span.set(outcome_attributes(output, tracer.capture_content))
    state.record.iterations = iteration
    state.record.count(output.usage)
    yield output


def chat_attributes(deps: TurnDeps, state: TurnState) -> tr.Attributes:
    metadata = deps.strategy.metadata
    attributes: dict[str, Any] = {
        tr.OPERATION: "chat",
        tr.PROVIDER: metadata.provider,
        tr.REQUEST_MODEL: metadata.model,
        tr.CONVERSATION: state.request.conversation_id,
        "gen_ai.request.stream": True,
    }
    if deps.tracer.capture_content:
        attributes["gen_ai.input.messages"] = tr.as_json([_message(m) for m in state.messages])
    return attributes


def outcome_attributes(output: ModelOutput, capture_content: bool) -> tr.Attributes:
    attributes: dict[str, Any] = {
        tr.INPUT_TOKENS: output.usage.prompt_tokens,
        tr.OUTPUT_TOKENS: output.usage.completion_tokens,
        tr.FINISH_REASONS: [output.finish_reason or ("tool_calls" if output.calls else "stop")],
    }
    if capture_content:
        calls = [{"type": "tool_call", "id": c.id, "name": c.function.name} for c in output.calls]
        parts = [{"type": "text", "content": output.content}, *calls]
        attributes["gen_ai.output.messages"] = tr.as_json([{"role": "assistant", "parts": parts}])
    return attributes


def _message(message: Message) -> dict[str, Any]:
    return {"role": message.role.value, "parts": [{"type": "text", "content": message.content or ""}]}

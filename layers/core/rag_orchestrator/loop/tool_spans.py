"""A round of tool calls with an `execute_tool {name}` span each (docs/observability.md); with tracing
off, the registry's own concurrent run, untouched."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from rag_orchestrator import tracing as tr
from rag_orchestrator.domain.messages import ToolCall
from rag_orchestrator.loop.deps import TurnDeps
from rag_orchestrator.tools.base import ToolContext, ToolResult
from rag_orchestrator.tools.rag_search import NAME as RAG_SEARCH


async def execute_calls(
    deps: TurnDeps, calls: Sequence[ToolCall], context: ToolContext, allowed: Sequence[str]
) -> list[ToolResult]:
    """The calls' results in call order, run together; each call traced when tracing is on."""
    if not deps.tracer.enabled:
        return await deps.tools.execute_all(calls, context, allowed)
    return list(await asyncio.gather(*(_traced(deps, call, context, allowed) for call in calls)))


async def _traced(deps: TurnDeps, call: ToolCall, context: ToolContext, allowed: Sequence[str]) -> ToolResult:
    tracer, name = deps.tracer, call.function.name
    attributes: dict[str, Any] = {
        tr.OPERATION: "execute_tool",
        tr.TOOL_NAME: name,
        tr.TOOL_CALL_ID: call.id,
        "gen_ai.tool.type": "datastore" if name == RAG_SEARCH else "function",
    }
    if tracer.capture_content:
        attributes["gen_ai.tool.call.arguments"] = call.function.arguments
    with tracer.span(f"execute_tool {name}", attributes) as span:
        (result,) = await deps.tools.execute_all([call], context, allowed)
        if not result.success:
            span.fail("tool_error")
        if tracer.capture_content:
            span.set({"gen_ai.tool.call.result": result.for_model()})
    return result

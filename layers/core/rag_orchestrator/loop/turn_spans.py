"""The attributes of a turn's `invoke_agent` span, and the spans of its prelude's work (docs/observability.md)."""

from __future__ import annotations

from typing import Any

from rag_orchestrator import tracing as tr
from rag_orchestrator.loop.deps import TurnDeps
from rag_orchestrator.loop.prelude import Prelude
from rag_orchestrator.loop.record import TurnRecord
from rag_orchestrator.loop.state import TurnState


def agent_attributes(deps: TurnDeps, state: TurnState) -> tr.Attributes:
    metadata = deps.strategy.metadata
    return {
        tr.OPERATION: "invoke_agent",
        tr.PROVIDER: metadata.provider,
        tr.REQUEST_MODEL: metadata.model,
        tr.CONVERSATION: state.request.conversation_id,
        "gen_ai.agent.name": "rag-orchestrator",
    }


def totals(record: TurnRecord) -> tr.Attributes:
    """What the turn's model calls used, and how it ended."""
    return {
        tr.INPUT_TOKENS: record.input_tokens,
        tr.OUTPUT_TOKENS: record.output_tokens,
        tr.FINISH_REASONS: [record.finish_reason],
        "rag.turn.iterations": record.iterations,
        "rag.turn.tool_calls": record.tool_calls,
    }


KNOWLEDGE_BASE = "knowledge_base"  # the data source rag_search and the initial search read


def record_prelude(deps: TurnDeps, prelude: Prelude) -> None:
    """The message's embedding, the initial search and the model call it made (a follow-up condensed),
    which ran in the prelude's tasks beside the claim, as spans of the turn with their own times (once
    the turn has awaited them)."""
    tracer, vector = deps.tracer, prelude.vector
    if vector is not None and vector.timing is not None:
        name = vector.embedder.name
        attributes = {tr.OPERATION: "embeddings", tr.REQUEST_MODEL: name}
        tracer.record(f"embeddings {name}", attributes, vector.timing, "client")
    task = prelude.found
    if task is not None and task.done() and not task.cancelled() and prelude.search_timing is not None:
        searched: dict[str, str | int] = {tr.OPERATION: "retrieval", tr.DATA_SOURCE: KNOWLEDGE_BASE}
        found = task.result()
        if found is not None:
            searched["rag.retrieval.passages"] = len(found)
        else:
            searched[tr.ERROR_TYPE] = "unavailable"
        tracer.record(f"retrieval {KNOWLEDGE_BASE}", searched, prelude.search_timing, "client")
    metadata = deps.strategy.metadata
    for call in prelude.short_calls:  # the search's own model call: a follow-up made a question
        called: dict[str, Any] = {
            tr.OPERATION: "chat",
            tr.PROVIDER: metadata.provider,
            tr.REQUEST_MODEL: metadata.model,
            tr.INPUT_TOKENS: call.usage.prompt_tokens,
            tr.OUTPUT_TOKENS: call.usage.completion_tokens,
            "rag.model_call.purpose": "follow-up",
        }
        if call.error_type is not None:
            called[tr.ERROR_TYPE] = call.error_type
        else:
            called[tr.FINISH_REASONS] = [call.finish_reason or "stop"]
        tracer.record(f"chat {metadata.model}", called, call.timing, "client")

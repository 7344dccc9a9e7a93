"""The spans of a generated answer (docs/observability.md): one trace per answer, recorded when it ends.

    answer                       the request: rag.answer.query_id, rag.answer.streaming, the model,
                                 totals of input/output tokens, error.type when it failed
      retrieval knowledge_base   the search: rag.retrieval.passages
      chat <model>               the model call, when one was made: tokens, finish reasons

The answer's events are an async generator whose consumer may change tasks between events, so no span
is current across them: each part keeps its times, and the spans are recorded with them at the end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from rag_orchestrator import tracing as tr
from rag_orchestrator.providers.events import Usage

KNOWLEDGE_BASE = "knowledge_base"


@dataclass
class AnswerTrace:
    """What one answer did, filled in as it runs."""

    started: int = field(default_factory=time.time_ns)
    searched: tuple[int, int] | None = None
    passages: int = 0
    called: tuple[int, int] | None = None
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    call_ended: bool = False  # the model's answer came whole
    error_type: str | None = None  # it failed, or its client left ("cancelled")


def record_answer(tracer: tr.Tracer, trace: AnswerTrace, provider: str, model: str, keys: dict) -> None:
    """The answer's spans, the root from its start to now."""
    usage = trace.usage
    root: dict[str, Any] = {
        "rag.answer.query_id": keys["query_id"],
        "rag.answer.streaming": keys["streaming"],
        tr.REQUEST_MODEL: model,
        tr.INPUT_TOKENS: usage.prompt_tokens,
        tr.OUTPUT_TOKENS: usage.completion_tokens,
    }
    with tracer.span("answer", root, start=trace.started) as span:
        if trace.searched is not None:
            searched: dict[str, Any] = {
                tr.OPERATION: "retrieval",
                tr.DATA_SOURCE: KNOWLEDGE_BASE,
                "rag.retrieval.passages": trace.passages,
            }
            tracer.record(f"retrieval {KNOWLEDGE_BASE}", searched, trace.searched, "client")
        if trace.called is not None:  # the call failed with the answer, unless the answer failed after it
            failed = trace.error_type if not trace.call_ended else None
            chat: dict[str, Any] = {
                tr.OPERATION: "chat",
                tr.PROVIDER: provider,
                tr.REQUEST_MODEL: model,
                tr.INPUT_TOKENS: usage.prompt_tokens,
                tr.OUTPUT_TOKENS: usage.completion_tokens,
            }
            if failed is None:
                chat[tr.FINISH_REASONS] = [trace.finish_reason or "stop"]
            tracer.record(f"chat {model}", chat, trace.called, "client", failed)
        if trace.error_type is not None:
            span.fail(trace.error_type)

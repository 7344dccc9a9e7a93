"""Generative answers with citations: retrieval, one model call, citation check (docs/answers.md).

`Answerer.events` is the one code path for both the whole and the streamed answer. It yields

    sources   the passages retrieved and put in the prompt (first; empty when nothing matched)
    delta     text increments, already citation-checked
    done      the whole answer object, last: the same object the REST endpoint returns
    error     instead of `done` when something failed; nothing follows it

`done.answer` is authoritative. The deltas concatenate to it whenever the model's streamed text equals its
final text (every strategy here): invented citations are withheld from the deltas too, because text that
could still grow into a citation is held back until it is complete.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field
from string import Template
from typing import TYPE_CHECKING, Literal, Protocol

from rag_orchestrator.domain.base import CamelModel, new_id
from rag_orchestrator.domain.passages import Passage, Source, drawn_on
from rag_orchestrator.errors import ProviderError, ProviderStreamError, RagError
from rag_orchestrator.observability import log_enabled, logger, metrics
from rag_orchestrator.providers.events import (
    ContentChunk,
    FinalResponse,
    IterationComplete,
    IterationContext,
    StreamingMode,
    ToolCallsComplete,
    Usage,
)
from rag_orchestrator.retrieval.answer_trace import AnswerTrace, record_answer
from rag_orchestrator.retrieval.citation_check import CitationFilter, strip_unknown
from rag_orchestrator.retrieval.prompt import build_prompt
from rag_orchestrator.retrieval.search import SearchQuery
from rag_orchestrator.tracing import NO_TRACER, Tracer

if TYPE_CHECKING:
    from rag_orchestrator.config import Settings
    from rag_orchestrator.providers.strategies import ModelStrategy

NO_CONTEXT_ANSWER = "I could not find anything about that in the knowledge base."
MODEL_FAILURE = "The language model could not answer"
UNEXPECTED = "An unexpected error occurred"


@dataclass(frozen=True, slots=True)
class AnswerQuery:
    """A validated request, defaults applied (the API layer checks ranges against the settings)."""

    query: str
    top_k: int
    threshold: float
    source: str | None = None
    tags: tuple[str, ...] = ()
    streaming: bool = False  # how the caller receives it; the model call is the same either way
    query_id: str = field(default_factory=new_id)


class ContextSnippet(CamelModel):
    document_id: str
    chunk_index: int
    snippet: str


class AnswerResponse(CamelModel):
    answer: str
    sources: list[Source]
    context_used: list[ContextSnippet]
    latency_ms: int
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True, slots=True)
class SourcesEvent:
    sources: list[Source]
    type: Literal["sources"] = "sources"


@dataclass(frozen=True, slots=True)
class DeltaEvent:
    text: str
    type: Literal["delta"] = "delta"


@dataclass(frozen=True, slots=True)
class DoneEvent:
    answer: AnswerResponse
    type: Literal["done"] = "done"


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    error: RagError  # its message is safe for a client
    type: Literal["error"] = "error"


AnswerEvent = SourcesEvent | DeltaEvent | DoneEvent | ErrorEvent


async def collect_answer(events: AsyncGenerator[AnswerEvent, None]) -> AnswerResponse:
    """The `done` answer of an event stream; raises the `error` event's error."""
    async with aclosing(events) as stream:
        async for event in stream:
            if isinstance(event, ErrorEvent):
                raise event.error
            if isinstance(event, DoneEvent):
                return event.answer
    raise RagError(UNEXPECTED)


class KnowledgeSearch(Protocol):
    """The retriever (`search.Retriever`), as the answers need it."""

    async def search(self, query: SearchQuery) -> list[Passage]: ...


class Answerer:
    """Both answer routes' work, built once by the composition root: its retriever, model and prompt."""

    def __init__(
        self,
        retriever: KnowledgeSearch,
        strategy: ModelStrategy,
        template: Template,
        settings: Settings,
        tracer: Tracer = NO_TRACER,
    ) -> None:
        self.retriever = retriever
        self.strategy = strategy
        self.template = template
        self.settings = settings
        self.tracer = tracer

    async def events(self, request: AnswerQuery) -> AsyncGenerator[AnswerEvent, None]:
        started = time.perf_counter()
        keys = {"query_id": request.query_id, "top_k": request.top_k, "streaming": request.streaming}
        logger.info("answer started", extra={**keys, "threshold": request.threshold})
        trace, answered = AnswerTrace(), False
        try:
            async for event in self._answer(request, started, keys, trace):
                answered = isinstance(event, DoneEvent)
                yield event
        except Exception as exc:
            trace.error_type = type(exc).__name__
            yield ErrorEvent(_failed(exc, keys, started))
        except BaseException:  # closed: by its reader once answered, or as its client left
            trace.error_type = None if answered else "cancelled"
            raise
        finally:
            if self.tracer.enabled:  # exported before a Lambda environment may be frozen
                metadata = self.strategy.metadata
                record_answer(self.tracer, trace, metadata.provider, metadata.model, keys)
                await asyncio.shield(asyncio.to_thread(self.tracer.flush))

    async def _answer(
        self, request: AnswerQuery, started: float, keys: dict, trace: AnswerTrace
    ) -> AsyncGenerator[AnswerEvent, None]:
        searching = time.time_ns()
        try:
            found = await self.retriever.search(
                SearchQuery(
                    request.query, request.top_k, request.threshold, source=request.source, tags=request.tags
                )
            )
        finally:
            trace.searched = (searching, time.time_ns())
        passages = found[: self.settings.rag_topk_max]
        trace.passages = len(passages)
        yield SourcesEvent([Source.of(p) for p in passages])
        if not passages:  # nothing to answer from: no model call
            yield DeltaEvent(NO_CONTEXT_ANSWER)
            yield DoneEvent(_finish(NO_CONTEXT_ANSWER, [], [], Usage(), started, keys))
            return

        prompt = build_prompt(request.query, passages, self.template, self.settings.rag_context_max_chars)
        if log_enabled(logging.DEBUG):
            logger.debug(
                "answer prompt",
                extra={**keys, "document_ids": [p.document_id for p in passages], "prompt": prompt.system},
            )
        allowed = {(p.document_id, p.chunk_index) for p in passages}
        check = CitationFilter(allowed)
        ctx = IterationContext(
            conversation_id=request.query_id,
            iteration=1,
            max_iterations=1,
            streaming_mode=StreamingMode.PROGRESSIVE,  # both modes: the non-streamed caller drops the deltas
            allow_tools=False,
        )
        final: str | None = None
        usage = Usage()
        chunked = False
        calling = time.time_ns()
        try:
            async with aclosing(self.strategy.run_iteration(prompt.messages, [], ctx)) as events:
                async for event in events:
                    if isinstance(event, ContentChunk):
                        chunked = True
                        if text := check.feed(event.content):
                            yield DeltaEvent(text)
                    elif isinstance(event, FinalResponse):
                        final = event.content
                    elif isinstance(
                        event, ToolCallsComplete
                    ):  # offered no tools, it asked anyway: keep its text
                        logger.warning("the model asked for tools in an answer without tools", extra=keys)
                        final = event.assistant_content
                    elif isinstance(event, IterationComplete):
                        usage = trace.usage = event.usage
                        trace.finish_reason, trace.call_ended = event.finish_reason, True
        finally:
            trace.called = (calling, time.time_ns())
        if final is None:
            raise ProviderStreamError("the model's response ended without an answer")
        answer, removed = strip_unknown(final, allowed)
        tail = check.flush() if chunked else answer
        if tail:
            yield DeltaEvent(tail)
        if removed:
            logger.warning(
                "removed citations to passages not in the context",
                extra={**keys, "citations": [f"{doc}#{index}" for doc, index in removed]},
            )
        yield DoneEvent(_finish(answer, drawn_on(answer, passages), passages, usage, started, keys))


def _finish(
    answer: str,
    sources: list[Passage],
    used: list[Passage],
    usage: Usage,
    started: float,
    keys: dict,
) -> AnswerResponse:
    latency_ms = round((time.perf_counter() - started) * 1000)
    logger.info(
        "answer finished",
        extra={
            **keys,
            "contexts_used": len(used),
            "sources": len(sources),
            "latency_ms": latency_ms,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
        },
    )
    metrics.add_metric(name="AnswerLatency", unit="Milliseconds", value=latency_ms)
    if used:
        metrics.add_metric(name="PromptTokens", unit="Count", value=usage.prompt_tokens)
        metrics.add_metric(name="CompletionTokens", unit="Count", value=usage.completion_tokens)
    return AnswerResponse(
        answer=answer,
        sources=[Source.of(p) for p in sources],
        context_used=[
            ContextSnippet(document_id=p.document_id, chunk_index=p.chunk_index, snippet=p.snippet)
            for p in used
        ],
        latency_ms=latency_ms,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
    )


def _failed(exc: Exception, keys: dict, started: float) -> RagError:
    """Log the failure with its detail (ERROR for 5xx) and return what the client may see."""
    latency_ms = round((time.perf_counter() - started) * 1000)
    detail = {**keys, "error_type": type(exc).__name__, "latency_ms": latency_ms}
    if not isinstance(exc, RagError):
        logger.exception("answer failed", extra=detail)
        metrics.add_metric(name="AnswerFailures", unit="Count", value=1)
        return RagError(UNEXPECTED)
    if exc.status_code < 500:
        logger.warning("answer refused", extra={**detail, "detail": exc.message})
        return exc
    logger.error("answer failed", extra={**detail, "detail": exc.message})
    metrics.add_metric(name="AnswerFailures", unit="Count", value=1)
    # The model failed: a generic message; the provider's own text stays in the log.
    if isinstance(exc, ProviderError):
        return ProviderError(MODEL_FAILURE, retryable=exc.retryable, retry_after=exc.retry_after)
    return exc

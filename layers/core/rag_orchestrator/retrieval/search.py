"""The retriever: the one search behind /api/v1/query, the answer endpoint, rag_search and the chat's
initial search (docs/retrieval.md).

RETRIEVAL_MODE picks the rankings of the knowledge base: `hybrid` (the default) ranks it by meaning (the
embedder and Chroma's nearest neighbours) and by words (BM25, `lexical.py`) at once and fuses the two by
reciprocal rank (`fusion.py`); `dense` and `lexical` keep one. Only a turn's searches (the initial one and
rag_search) pass a caller: then that caller's attachment segments (`fragments.py`) are searched by meaning
too and rank with the knowledge base's dense ranking by score. The RERANKER then orders the candidates,
and the best `top_k` are kept. After them, in places of their own, come at most MEMORY_TOP_K of the
caller's turn fragments from other conversations, scoring at least MEMORY_MIN_SCORE (docs/retrieval.md,
conversation memory): memory never displaces a document.

A passage's score is its cosine similarity to the query (dense), the share of the query's words it holds,
weighted by rarity (lexical), or in `hybrid` the higher of the two; passages scoring below the threshold
are dropped before fusion.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rag_orchestrator.config import Settings
from rag_orchestrator.domain.modalities import ModalityFilter
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.errors import BadRequest, EmbedderUnavailable
from rag_orchestrator.observability import logger
from rag_orchestrator.retrieval.embedders import Embedder
from rag_orchestrator.retrieval.fragments import FragmentIndex
from rag_orchestrator.retrieval.fusion import fuse
from rag_orchestrator.retrieval.knowledge_base import KnowledgeBase
from rag_orchestrator.retrieval.lexical import LexicalIndex, LexicalResult
from rag_orchestrator.retrieval.query_vector import MAX_QUERY_CHARS, QueryVector, query_text
from rag_orchestrator.retrieval.rerankers import KeepOrder, Reranker, create_reranker
from rag_orchestrator.retrieval.vector_store import VectorStore, build_where
from rag_orchestrator.sanitize import MAX_SOURCE, sanitize_metadata, sanitize_tags

__all__ = ["MAX_QUERY_CHARS", "Mode", "Recall", "Retriever", "SearchQuery", "create_retriever"]

Mode = Literal["hybrid", "dense", "lexical"]


@dataclass(frozen=True, slots=True)
class Recall:
    """Conversation memory's places after the knowledge base: how many turn fragments, how similar."""

    top_k: int = 0
    min_score: float = 1.0


@dataclass(frozen=True, slots=True)
class SearchQuery:
    text: str
    top_k: int
    threshold: float
    source: str | None = None
    tags: Sequence[str] = ()
    modality: ModalityFilter | None = None
    caller_id: str | None = None  # their conversation memory is searched too
    conversation_id: str | None = None  # the turn's own: its window holds its fragments, so none recalled
    vector: QueryVector | None = None  # the text's embedding when the turn has made it already

    def filters(self) -> dict[str, Any]:
        # Filters go through the same sanitising as the stored metadata, so they compare like with like.
        return {
            "source": sanitize_metadata(self.source, MAX_SOURCE) if self.source else None,
            "tags": sanitize_tags(list(self.tags)),
            "modality": self.modality,
        }


class Retriever:
    def __init__(
        self,
        *,
        embedder: Embedder,
        knowledge: VectorStore,
        memory: FragmentIndex | None = None,
        reranker: Reranker | None = None,
        mode: Mode = "hybrid",
        candidates: int = 20,
        recall: Recall | None = None,
    ) -> None:
        self.embedder = embedder
        self.knowledge = knowledge
        self.lexical = LexicalIndex(knowledge)
        self.memory = memory
        self.reranker = reranker or KeepOrder()
        self.mode = mode
        self.candidates = candidates  # what each ranking offers the fusion and the reranker
        self.recall = recall or Recall()

    async def search(self, query: SearchQuery) -> list[Passage]:
        """The `top_k` passages that answer the query best, best first, none scoring below the threshold."""
        text = query_text(query.text)
        if not text:
            raise BadRequest("query must not be empty")
        started = time.perf_counter()
        fused = self.mode == "hybrid" or not isinstance(self.reranker, KeepOrder)
        depth = max(query.top_k, self.candidates) if fused else query.top_k
        filters = query.filters()
        memory = self.memory if query.caller_id is not None else None
        vector = query.vector if query.vector and query.vector.serves(text, self.embedder) else None
        vector = vector or QueryVector(self.embedder, text)
        by_meaning = self.mode != "lexical" or memory is not None
        dense = self._dense(vector, depth, filters, query, memory) if by_meaning else None
        words = self.lexical.search(text, depth, build_where(**filters)) if self.mode != "dense" else None
        (knowledge, remembered, recalled), lexical = await asyncio.gather(
            _run(dense, ([], [], [])), _run(words, None)
        )
        meaning = _merged(knowledge, remembered, lexical, depth)
        rankings = [[p for p in meaning if p.score >= query.threshold]]
        if lexical is not None:
            rankings.append([p for p in lexical.passages if p.score >= query.threshold])
        candidates = fuse(rankings)[:depth] if len(rankings) > 1 else rankings[0]
        kept = await self.reranker.rerank(text, candidates, query.top_k)
        recalled = [p for p in recalled if p.score >= self.recall.min_score]
        passages = [p.model_copy(update={"query": text}) for p in [*kept, *recalled]]
        from_memory = {p.key for p in remembered}
        logger.info(
            "knowledge base searched",
            extra={
                "mode": self.mode,
                "reranker": self.reranker.name,
                "top_k": query.top_k,
                "threshold": query.threshold,
                "dense": len(meaning),
                "lexical": len(lexical.passages) if lexical else None,
                "kept": len(passages),
                "segments": sum(p.key in from_memory for p in passages),
                "recalled": len(recalled),
                "best_score": round(passages[0].score, 4) if passages else None,
                "ms": round((time.perf_counter() - started) * 1000, 1),
            },
        )
        return passages

    async def _dense(
        self,
        vector: QueryVector,
        depth: int,
        filters: dict[str, Any],
        query: SearchQuery,
        memory: FragmentIndex | None,
    ) -> tuple[list[Passage], list[Passage], list[Passage]]:
        """The knowledge base's nearest chunks (none in lexical mode), the caller's nearest attachment
        segments and their nearest turn fragments from other conversations."""
        try:
            embedding = await vector.get()
        except EmbedderUnavailable as exc:
            if self.mode == "dense":
                raise
            # Words alone still find passages: a hybrid search outlives its embedder, and a lexical one
            # loses only the memory it was embedding for.
            logger.warning("embedder unavailable: searching by words only", extra={"error": exc.message})
            return [], [], []
        nearest: Awaitable[list[Passage]] | None = None
        if self.mode != "lexical":
            nearest = asyncio.to_thread(self.knowledge.query, embedding, depth, **filters)
        segments: Awaitable[list[Passage]] | None = None
        turns: Awaitable[list[Passage]] | None = None
        if memory is not None:
            caller = query.caller_id or ""
            segments = asyncio.to_thread(memory.segments, embedding, caller, depth, filters)
            if self.recall.top_k > 0:
                outside = query.conversation_id
                turns = asyncio.to_thread(
                    memory.recall, embedding, caller, self.recall.top_k, outside=outside, filters=filters
                )
        none: list[Passage] = []
        found, *remembered = await asyncio.gather(
            _run(nearest, none), _run(segments, none), _run(turns, none), return_exceptions=True
        )
        if isinstance(found, BaseException):
            raise found
        attached, recalled = (_or_nothing(part) for part in remembered)
        return found, attached, recalled


def _or_nothing(part: list[Passage] | BaseException) -> list[Passage]:
    """A memory search's passages; memory is extra, so a failed one costs it, not the search."""
    if isinstance(part, Exception):
        logger.warning("conversation memory not searched", extra={"error_type": type(part).__name__})
        return []
    if isinstance(part, BaseException):
        raise part
    return part


async def _run[T](job: Awaitable[T] | None, default: T) -> T:
    return default if job is None else await job


def _merged(
    knowledge: list[Passage], remembered: list[Passage], lexical: LexicalResult | None, depth: int
) -> list[Passage]:
    """The dense ranking: knowledge passages and fragments by cosine, as many as `depth`; in hybrid, a
    knowledge passage then scores its word coverage when that is higher (a fragment keeps its cosine)."""
    merged = sorted([*knowledge, *remembered], key=lambda p: p.score, reverse=True)[:depth]
    if lexical is None:
        return merged
    from_knowledge = {id(p) for p in knowledge}
    return [
        p.model_copy(update={"score": max(p.score, lexical.coverage(p))}) if id(p) in from_knowledge else p
        for p in merged
    ]


def create_retriever(settings: Settings, knowledge: KnowledgeBase, memory: FragmentIndex | None) -> Retriever:
    """The retriever of RETRIEVAL_MODE and RERANKER over the knowledge base and conversation memory."""
    return Retriever(
        embedder=knowledge.embedder,
        knowledge=knowledge.store,
        memory=memory,
        reranker=create_reranker(settings),
        mode=settings.retrieval_mode,
        candidates=settings.retrieval_candidates,
        recall=Recall(settings.memory_top_k, settings.memory_min_score),
    )

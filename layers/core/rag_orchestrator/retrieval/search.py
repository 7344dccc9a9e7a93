"""search(): the retrieval entry point for /query, the rag_search tool and the answer endpoint.

Only a turn's searches (the initial one and rag_search) pass a caller: then that caller's attachment
segments (`fragments.py`) rank together with the knowledge base, and at most MEMORY_TOP_K of the
caller's turn fragments from other conversations, scoring at least MEMORY_MIN_SCORE, follow them
(docs/retrieval.md, conversation memory). Without a caller, only the knowledge base is searched.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from rag_orchestrator.config import Settings
from rag_orchestrator.domain.modalities import ModalityFilter
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.errors import BadRequest
from rag_orchestrator.observability import logger
from rag_orchestrator.retrieval.embedders import get_embedder
from rag_orchestrator.retrieval.fragments import get_fragment_index
from rag_orchestrator.retrieval.query_vector import MAX_QUERY_CHARS, QueryVector, query_text
from rag_orchestrator.retrieval.vector_store import get_vector_store
from rag_orchestrator.sanitize import MAX_SOURCE, sanitize_metadata, sanitize_tags

__all__ = ["MAX_QUERY_CHARS", "search", "search_sync"]


def embed_query(query: str, settings: Settings) -> list[float]:
    query = query_text(query)
    if not query:
        raise BadRequest("query must not be empty")
    return get_embedder(settings).embed(query)


def _filters(
    source: str | None, tags: Sequence[str] | None, modality: ModalityFilter | None
) -> dict[str, Any]:
    # Filters go through the same sanitising as the stored metadata, so they compare like with like.
    return {
        "source": sanitize_metadata(source, MAX_SOURCE) if source else None,
        "tags": sanitize_tags(list(tags or ())),
        "modality": modality,
    }


def _kept(
    found: list[Passage], query: str, top_k: int, threshold: float, started: float, **extra: Any
) -> list[Passage]:
    # What found a passage goes with it: its snippet centres on the query's words.
    passages = [p.model_copy(update={"query": query.strip()}) for p in found if p.score >= threshold]
    logger.info(
        "knowledge base searched",
        extra={
            "top_k": top_k,
            "threshold": threshold,
            "found": len(found),
            "kept": len(passages),
            "best_score": round(found[0].score, 4) if found else None,
            "ms": round((time.perf_counter() - started) * 1000, 1),
            **extra,
        },
    )
    return passages


def search_sync(
    query: str,
    *,
    top_k: int,
    threshold: float,
    source: str | None = None,
    tags: Sequence[str] | None = None,
    modality: ModalityFilter | None = None,
    settings: Settings,
) -> list[Passage]:
    """The `top_k` knowledge-base passages nearest to the query, best first, none scoring below `threshold`."""
    started = time.perf_counter()
    vector = embed_query(query, settings)
    found = get_vector_store(settings).query(vector, top_k, **_filters(source, tags, modality))
    return _kept(found, query, top_k, threshold, started)


async def search(
    query: str,
    *,
    top_k: int,
    threshold: float,
    source: str | None = None,
    tags: Sequence[str] | None = None,
    modality: ModalityFilter | None = None,
    caller_id: str | None = None,
    conversation_id: str | None = None,
    vector: QueryVector | None = None,
    settings: Settings,
) -> list[Passage]:
    """`search_sync` off the event loop (one thread hop); with `caller_id`, that caller's fragments too,
    none of conversation `conversation_id` (the turn's own: its window holds them).

    `vector` is the query's embedding when the turn has it already (retrieval/query_vector.py)."""
    if vector is not None and not vector.serves(query, get_embedder(settings)):
        vector = None
    if caller_id is None and vector is None:
        return await asyncio.to_thread(
            search_sync,
            query,
            top_k=top_k,
            threshold=threshold,
            source=source,
            tags=tags,
            modality=modality,
            settings=settings,
        )
    started = time.perf_counter()
    if vector is not None:
        embedding = await vector.get()
    else:
        embedding = await asyncio.to_thread(embed_query, query, settings)
    filters = _filters(source, tags, modality)

    def knowledge() -> list[Passage]:
        return get_vector_store(settings).query(embedding, top_k, **filters)

    if caller_id is None:
        return _kept(await asyncio.to_thread(knowledge), query, top_k, threshold, started)

    index = get_fragment_index(settings)

    def segments() -> list[Passage]:
        return index.segments(embedding, caller_id, top_k, filters)

    def turns() -> list[Passage]:
        if settings.memory_top_k < 1:
            return []
        return index.recall(
            embedding, caller_id, settings.memory_top_k, outside=conversation_id, filters=filters
        )

    found, *remembered = await asyncio.gather(
        asyncio.to_thread(knowledge),
        asyncio.to_thread(segments),
        asyncio.to_thread(turns),
        return_exceptions=True,
    )
    if isinstance(found, BaseException):
        raise found
    attached, recalled = (_or_nothing(part) for part in remembered)
    merged = sorted([*found, *attached], key=lambda p: p.score, reverse=True)[:top_k]
    theirs = {id(p) for p in attached}
    kept = _kept(merged, query, top_k, threshold, started, segments=sum(id(p) in theirs for p in merged))
    # Memory comes after the knowledge base, in places of its own: it never displaces a document.
    memory = [
        p.model_copy(update={"query": query.strip()})
        for p in recalled
        if p.score >= settings.memory_min_score
    ]
    return kept + memory


def _or_nothing(part: list[Passage] | BaseException) -> list[Passage]:
    """A memory search's passages; memory is extra, so a failed one costs it, not the search."""
    if isinstance(part, Exception):
        logger.warning("conversation memory not searched", extra={"error_type": type(part).__name__})
        return []
    if isinstance(part, BaseException):
        raise part
    return part

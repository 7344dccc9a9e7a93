"""search(): the retrieval entry point for /query, the rag_search tool and the answer endpoint."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from rag_orchestrator.config import Settings
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.errors import BadRequest
from rag_orchestrator.observability import logger
from rag_orchestrator.retrieval.embedders import get_embedder
from rag_orchestrator.retrieval.vector_store import get_vector_store
from rag_orchestrator.sanitize import MAX_SOURCE, sanitize_metadata, sanitize_tags

MAX_QUERY_CHARS = 2000


def search_sync(
    query: str,
    *,
    top_k: int,
    threshold: float,
    source: str | None = None,
    tags: Sequence[str] | None = None,
    modality: str | None = None,
    settings: Settings,
) -> list[Passage]:
    """The `top_k` passages nearest to the query, best first, without those scoring below `threshold`."""
    query = query.strip()
    if not query:
        raise BadRequest("query must not be empty")
    started = time.perf_counter()
    vector = get_embedder(settings).embed(query[:MAX_QUERY_CHARS])
    # Filters go through the same sanitising as the stored metadata, so they compare like with like.
    found = get_vector_store(settings).query(
        vector,
        top_k,
        source=sanitize_metadata(source, MAX_SOURCE) if source else None,
        tags=sanitize_tags(list(tags or ())),
        modality=modality,
    )
    passages = [p.model_copy(update={"query": query}) for p in found if p.score >= threshold]
    logger.info(
        "knowledge base searched",
        extra={
            "top_k": top_k,
            "threshold": threshold,
            "found": len(found),
            "kept": len(passages),
            "best_score": round(found[0].score, 4) if found else None,
            "ms": round((time.perf_counter() - started) * 1000, 1),
        },
    )
    return passages


async def search(
    query: str,
    *,
    top_k: int,
    threshold: float,
    source: str | None = None,
    tags: Sequence[str] | None = None,
    modality: str | None = None,
    settings: Settings,
) -> list[Passage]:
    """`search_sync` off the event loop: one thread hop for embedding and the Chroma query."""
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

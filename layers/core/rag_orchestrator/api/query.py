"""POST /api/v1/query: ranked passages for a question (docs/answers.md; every input error is a 400)."""

from __future__ import annotations

import time
from typing import Any

from pydantic import ConfigDict, Field, StrictInt, field_validator

from rag_orchestrator.api.auth import get_caller
from rag_orchestrator.api.deps import get_retriever, get_settings
from rag_orchestrator.api.routing import Depends, Router
from rag_orchestrator.config import Settings
from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.passages import QueryResult
from rag_orchestrator.domain.text import ClientBody
from rag_orchestrator.errors import BadRequest
from rag_orchestrator.retrieval.search import MAX_QUERY_CHARS, Retriever, SearchQuery
from rag_orchestrator.sanitize import MAX_SOURCE, MAX_TAG, MAX_TAGS

router = Router(tags=["knowledge base"], bad_request=True)


class QueryRequest(ClientBody):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    top_k: StrictInt | None = Field(None, ge=1, description="1..RAG_TOPK_MAX; default RAG_TOPK_DEFAULT")
    similarity_threshold: float | None = Field(
        None, ge=0.0, le=1.0, description="default RAG_SIMILARITY_THRESHOLD"
    )
    source: str | None = Field(None, max_length=MAX_SOURCE)
    tags: list[str] | None = Field(None, max_length=MAX_TAGS)

    @field_validator("similarity_threshold", mode="before")
    @classmethod
    def _a_number(cls, value: Any) -> Any:
        """A number as JSON writes one: `true` or `"0.5"` is another type (a 400, as every input error)."""
        if isinstance(value, (bool, str)):
            raise ValueError("must be a number")
        return value


class QueryResponse(CamelModel):
    query: str
    results: list[QueryResult]
    latency_ms: int


def retrieval_limits(body: QueryRequest, settings: Settings) -> tuple[int, float]:
    """topK and threshold with their defaults applied; 400 for what the model cannot check alone."""
    top_k = body.top_k or settings.rag_topk_default
    if top_k > settings.rag_topk_max:
        raise BadRequest(f"topK must be between 1 and {settings.rag_topk_max}")
    if body.tags and any(len(tag) > MAX_TAG for tag in body.tags):
        raise BadRequest(f"each tag must have at most {MAX_TAG} characters")
    threshold = (
        settings.rag_similarity_threshold if body.similarity_threshold is None else body.similarity_threshold
    )
    return top_k, threshold


@router.post(
    "/api/v1/query", response_model=QueryResponse, summary="Passages of the knowledge base, best first"
)
async def query(
    body: QueryRequest,
    caller: Caller = Depends(get_caller),
    settings: Settings = Depends(get_settings),
    retriever: Retriever = Depends(get_retriever),
) -> QueryResponse:
    started = time.perf_counter()
    top_k, threshold = retrieval_limits(body, settings)
    passages = await retriever.search(
        SearchQuery(body.query, top_k, threshold, source=body.source, tags=body.tags or ())
    )
    return QueryResponse(
        query=body.query,
        results=[QueryResult.from_passage(p) for p in passages],
        latency_ms=round((time.perf_counter() - started) * 1000),
    )

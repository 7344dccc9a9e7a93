"""Rerankers: the retrieved candidates put in a better order before the best `top_n` are kept (RERANKER).

    none   the fused order as it is
    local  offline re-scoring (`local_reranker.py`), the default
    http   POST RERANKER_URL {model, query, documents, top_n} -> {results: [{index, relevance_score}]}:
           the shape Cohere, Jina, vLLM and TEI's Cohere-compatible route share

A reranker never fails a search: an `http` reranker that cannot be reached, refuses, times out or answers
something unreadable is logged and the fused order is kept (failing soft, docs/retrieval.md).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from rag_orchestrator import tls
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.observability import logger, redacted

if TYPE_CHECKING:
    from rag_orchestrator.config import Settings


class Reranker(Protocol):
    name: str

    async def rerank(self, query: str, passages: list[Passage], top_n: int) -> list[Passage]:
        """At most `top_n` of the passages, best first."""
        ...


class KeepOrder:
    name = "none"

    async def rerank(self, query: str, passages: list[Passage], top_n: int) -> list[Passage]:
        return passages[:top_n]


class HttpReranker:
    """A reranking service over HTTP; its API key is read (from SSM in AWS) on the first call."""

    name = "http"

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key: Any = None,  # a callable giving the key, so a secret in SSM is read only when needed
        timeout_seconds: float = 5.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = url
        self.model = model
        self._api_key = api_key
        self._key: str | None = None
        self._headers: dict[str, str] | None = None
        self._timeout_seconds = timeout_seconds  # the whole exchange's, its key's reading included
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_seconds, connect=min(timeout_seconds, 3.0)),
            verify=tls.verify(url),
            transport=transport,
        )

    async def rerank(self, query: str, passages: list[Passage], top_n: int) -> list[Passage]:
        if len(passages) <= 1:
            return passages[:top_n]
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self._timeout_seconds):  # httpx's bounds each read, not the whole
                order = await self._ask(query, [p.text for p in passages], min(top_n, len(passages)))
        except Exception as exc:  # its key, the service or its answer: any failure keeps the fused order
            reason = str(exc) if isinstance(exc, RerankerFailed) else type(exc).__name__
            logger.warning(
                "reranker failed: the fused order is kept", extra={"reason": reason, "url": self.url}
            )
            return passages[:top_n]
        logger.debug("reranked", extra={"ms": round((time.perf_counter() - started) * 1000, 1)})
        # The order it gave first; passages it left out after, in the fused order (an answer naming
        # fewer than asked, or none, still fills the search's top_n).
        named = set(order)
        return [passages[i] for i in [*order, *(i for i in range(len(passages)) if i not in named)]][:top_n]

    async def _ask(self, query: str, documents: list[str], top_n: int) -> list[int]:
        if self._headers is None:
            key = await asyncio.to_thread(self._api_key) if callable(self._api_key) else self._api_key
            self._key = key or None
            self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        body = {"model": self.model, "query": query, "documents": documents, "top_n": top_n}
        try:
            response = await self._http.post(self.url, json=body, headers=self._headers)
        except httpx.HTTPError as exc:
            raise RerankerFailed(type(exc).__name__) from None
        if not response.is_success:
            detail = redacted(response.text[:512], self._key)
            raise RerankerFailed(f"HTTP {response.status_code}: {detail}")
        return read_order(response, len(documents))

    async def aclose(self) -> None:
        await self._http.aclose()


class RerankerFailed(Exception):
    """The reranking service could not give an order (the message is for the log only)."""


def read_order(response: httpx.Response, count: int) -> list[int]:
    """The document indices of `results`, most relevant first; RerankerFailed when unreadable."""
    try:
        results = response.json()["results"]
        scored = [(float(r["relevance_score"]), int(r["index"])) for r in results]
    except (ValueError, KeyError, TypeError, ArithmeticError, RecursionError):  # 1e999, nested too deep
        raise RerankerFailed("unreadable answer") from None
    order = [index for _, index in sorted(scored, key=lambda s: -s[0])]
    if any(not 0 <= i < count for i in order) or len(set(order)) != len(order):
        raise RerankerFailed("answer names documents it was not sent")
    return order


def create_reranker(settings: Settings) -> Reranker:
    """The reranker RERANKER names."""
    if settings.reranker == "http":
        return HttpReranker(
            settings.reranker_url or "",
            settings.reranker_model or "",
            api_key=lambda: settings.secret("reranker_api_key"),
            timeout_seconds=settings.reranker_timeout_seconds,
        )
    if settings.reranker == "local":
        from rag_orchestrator.retrieval.local_reranker import LocalReranker

        return LocalReranker()
    return KeepOrder()

"""Per-turn tool selection: context filter, semantic top-k, core tools merged in.

Stage 1 keeps the tools the caller's roles may use that are offered in the request's contextType
(tools without `contexts` are offered in every context; a request without a contextType skips the
filter). Stage 2 ranks the non-core survivors by cosine similarity between the message and each
tool's embed text and keeps the top k scoring at least the minimum. Stage 3 puts the core tools of
the context first. The tool vectors are computed once per process (or read from a cache).

Tools that come and go (an MCP server's, tools/mcp_toolset.py) join through `more`: refreshed
before each selection, ranked with the catalogue's by the vectors their listing was embedded into;
one of them without a vector is offered unranked.

Degradation tree: no embedder, a failed index build or a failed search offers every tool stage 1
kept. Each kind of failure is logged once per outage, not per request; a failed build is retried
after `retry_seconds`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import operator
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rag_orchestrator.domain.callers import may_use_tools
from rag_orchestrator.observability import logger, metrics
from rag_orchestrator.retrieval.embedders import Embedder
from rag_orchestrator.retrieval.query_vector import QueryVector, query_text


@dataclass(frozen=True, slots=True)
class Offer:
    """What selection needs to know about one tool."""

    name: str
    text: str  # the embed text
    contexts: tuple[str, ...] | None = None
    core: bool = False
    roles: tuple[str, ...] | None = None  # None: every authenticated role

    def usable_by(self, roles: Sequence[str]) -> bool:
        if not may_use_tools(roles):
            return False
        return self.roles is None or not set(self.roles).isdisjoint(roles)

    def offered_in(self, context_type: str | None) -> bool:
        return context_type is None or self.contexts is None or context_type in self.contexts

    def core_in(self, context_type: str | None) -> bool:
        """Core tools are forced into the contexts they name; with no contextType, only context-free ones."""
        return self.core and (self.contexts is None or context_type in self.contexts)


class VectorCache(Protocol):
    def load(self, key: str) -> dict[str, list[float]] | None: ...

    def store(self, key: str, vectors: dict[str, list[float]]) -> None: ...


class MoreOffers(Protocol):
    """Tools beside the catalogue's that change while the process runs, with their vectors."""

    async def refresh(self) -> None: ...

    def offers(self) -> Sequence[Offer]: ...

    def vectors(self) -> Mapping[str, tuple[float, ...]]: ...


def normalized(vector: Sequence[float]) -> tuple[float, ...]:
    """The unit vector; a zero vector (a message of stop words only) stays zero and scores 0 everywhere."""
    norm = math.sqrt(math.sumprod(vector, vector))
    return tuple(v / norm for v in vector) if norm else tuple(vector)


def index_key(offers: Iterable[Offer], embedder_name: str) -> str:
    """Identifies an index: the embed texts of the tools and the embedder's vector space."""
    content = json.dumps([embedder_name, sorted((o.name, o.text) for o in offers)])
    return hashlib.sha256(content.encode()).hexdigest()


class ToolIndex:
    """L2-normalized tool vectors; a search is one dot product per candidate."""

    def __init__(self, vectors: dict[str, tuple[float, ...]]) -> None:
        self.vectors = vectors

    @classmethod
    def build(
        cls, embedder: Embedder, offers: Sequence[Offer], cache: VectorCache | None = None
    ) -> ToolIndex:
        key = index_key(offers, embedder.name)
        cached = _cached(cache, key, offers)
        if cached is not None:
            return cls({name: normalized(vector) for name, vector in cached.items()})
        raw = embedder.embed_batch([offer.text for offer in offers])
        if len(raw) != len(offers):
            raise ValueError(f"embedder returned {len(raw)} vectors for {len(offers)} tools")
        vectors = {offer.name: normalized(vector) for offer, vector in zip(offers, raw, strict=True)}
        if cache is not None:
            try:
                cache.store(key, {name: list(vector) for name, vector in vectors.items()})
            except Exception as exc:
                logger.warning("tool index cache write failed", extra={"error_type": type(exc).__name__})
        return cls(vectors)

    def search(
        self,
        query: Sequence[float],
        names: Iterable[str],
        k: int,
        min_score: float,
        more: Mapping[str, tuple[float, ...]] | None = None,
    ) -> list[tuple[str, float]]:
        """The top `k` of `names` by cosine similarity to `query`, best first, each scoring >= min_score;
        `more` holds vectors of tools outside the index."""
        score = _scorer(normalized(query))
        if more:
            scored = [(name, score(self.vectors.get(name) or more[name])) for name in names]
        else:
            scored = [(name, score(self.vectors[name])) for name in names]
        scored = [item for item in scored if item[1] >= min_score]
        scored.sort(key=lambda item: item[1], reverse=True)
        return scored[:k]


def _scorer(q: tuple[float, ...]) -> Callable[[tuple[float, ...]], float]:
    """The dot product with `q`; over its non-zero components only when it has few (the hashing
    embedder's vectors: a message's words), which halves a selection among 3,000 tools."""
    nonzero = [i for i, value in enumerate(q) if value]
    if not 1 < len(nonzero) < len(q) // 4:
        return lambda vector: math.sumprod(q, vector)
    pick = operator.itemgetter(*nonzero)  # gathers the components in C
    q_nonzero = pick(q)
    return lambda vector: math.sumprod(q_nonzero, pick(vector))


def _cached(cache: VectorCache | None, key: str, offers: Sequence[Offer]) -> dict[str, list[float]] | None:
    if cache is None:
        return None
    try:
        vectors = cache.load(key)
    except Exception as exc:
        logger.warning("tool index cache read failed", extra={"error_type": type(exc).__name__})
        return None
    if vectors is None or set(vectors) != {o.name for o in offers}:
        return None
    return vectors


class ToolSelector:
    def __init__(
        self,
        offers: Sequence[Offer],
        *,
        embedder: Embedder | None,
        top_k: int = 6,
        min_score: float = 0.0,
        cache: VectorCache | None = None,
        retry_seconds: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        more: MoreOffers | None = None,
    ) -> None:
        self.offers = list(offers)
        self.more = more
        # Tools forced into every context are never ranked, so they need no vector.
        self._rankable = [o for o in self.offers if not (o.core and o.contexts is None)]
        self.embedder = embedder
        self.top_k = top_k
        self.min_score = min_score
        self.cache = cache
        self.retry_seconds = retry_seconds
        self._clock = clock
        self._index: ToolIndex | None = None
        self._failed_at: float | None = None
        self._lock = threading.Lock()
        self._outages: set[str] = set()

    def visible(self, roles: Sequence[str]) -> list[Offer]:
        """Every tool the roles may use, in any context (those of `more` as last refreshed)."""
        offers = self.offers if self.more is None else [*self.offers, *self.more.offers()]
        return [offer for offer in offers if offer.usable_by(roles)]

    async def refresh(self) -> None:
        """Bring the tools of `more` up to date (an MCP server's listing, at first use and at its TTL)."""
        if self.more is not None:
            await self.more.refresh()

    def candidates(self, context_type: str | None, roles: Sequence[str]) -> list[Offer]:
        """Stage 1: the tools the roles may use that are offered in the context."""
        return [offer for offer in self.visible(roles) if offer.offered_in(context_type)]

    async def select(
        self,
        message: str,
        context_type: str | None,
        roles: Sequence[str],
        vector: QueryVector | None = None,
    ) -> list[str]:
        """The names of the tools to offer for one message, core tools first; `vector`: its embedding."""
        if self.more is not None and may_use_tools(roles):
            await self.more.refresh()
        candidates = self.candidates(context_type, roles)
        core = [offer.name for offer in candidates if offer.core_in(context_type)]
        ranked = [offer.name for offer in candidates if not offer.core_in(context_type)]
        if not ranked:
            return core
        matches = await self._search(message, ranked, vector)
        if matches is None:
            metrics.add_metric(name="ToolSelectionFallbacks", unit="Count", value=1)
            return core + ranked
        return core + [name for name, _ in matches]

    async def _search(
        self, message: str, names: list[str], vector: QueryVector | None
    ) -> list[tuple[str, float]] | None:
        if self.embedder is None:
            self._degraded("embedder", "no embedder for tool selection; offering every tool of the context")
            return None
        index = await asyncio.to_thread(self._ensure_index, self.embedder)
        if index is None:
            return None
        more, unranked = None, []
        if self.more is not None:  # a tool whose listing could not be embedded has no vector
            more = self.more.vectors()
            unranked = [name for name in names if name not in index.vectors and name not in more]
            names = [name for name in names if name in index.vectors or name in more]
        try:
            query: list[float]
            if vector is not None and vector.serves(message, self.embedder):
                query = await vector.get()
            else:
                query = await asyncio.to_thread(self.embedder.embed, query_text(message))
            matches = index.search(query, names, self.top_k, self.min_score, more)
        except Exception as exc:
            self._degraded("search", "tool search failed; offering every tool of the context", exc)
            return None
        self._recovered("search")
        return matches + [(name, 0.0) for name in unranked]

    def _ensure_index(self, embedder: Embedder) -> ToolIndex | None:
        """Build the index once; after a failure, try again only when `retry_seconds` have passed."""
        with self._lock:
            if self._index is not None:
                return self._index
            if self._failed_at is not None and self._clock() - self._failed_at < self.retry_seconds:
                return None
            started = time.perf_counter()
            try:
                self._index = ToolIndex.build(embedder, self._rankable, self.cache)
            except Exception as exc:
                self._failed_at = self._clock()
                self._degraded("index", "tool index build failed; offering every tool of the context", exc)
                return None
            self._failed_at = None
            self._recovered("index")
            logger.info(
                "tool index built",
                extra={"tools": len(self._rankable), "ms": round((time.perf_counter() - started) * 1000, 1)},
            )
            return self._index

    def _degraded(self, kind: str, message: str, exc: BaseException | None = None) -> None:
        if kind in self._outages:
            return
        self._outages.add(kind)
        extra: dict[str, Any] = {"degradation": kind}
        if exc is not None:
            extra["error_type"] = type(exc).__name__
        logger.warning(message, extra=extra)

    def _recovered(self, kind: str) -> None:
        if kind in self._outages:
            self._outages.discard(kind)
            logger.info("tool selection recovered", extra={"degradation": kind})

"""A turn's message embedded once, for both tool selection and the initial knowledge search.

Each of them asks `serves(text, embedder)` first: the vector is used only for the same text in the
same vector space, so a search for another query, or an embedder of another name, embeds afresh.
"""

from __future__ import annotations

import asyncio
import time

from rag_orchestrator.retrieval.chroma_query import Embedding
from rag_orchestrator.retrieval.embedders import Embedder

MAX_QUERY_CHARS = 2000


def query_text(text: str) -> str:
    """What is embedded for a query: stripped, at most MAX_QUERY_CHARS."""
    return text.strip()[:MAX_QUERY_CHARS]


class QueryVector:
    def __init__(self, embedder: Embedder, text: str) -> None:
        self.embedder = embedder
        self.text = query_text(text)
        self._embedding: asyncio.Future[Embedding] | None = None
        self.timing: tuple[int, int] | None = (
            None  # when the embedding ran (ns since the epoch), for its span
        )

    def serves(self, text: str, embedder: Embedder | None) -> bool:
        return embedder is not None and embedder.name == self.embedder.name and query_text(text) == self.text

    async def get(self) -> Embedding:
        """The vector, embedded (in a worker thread) on the first call; later calls share it, and the
        Chroma requests of a search its JSON text."""
        if self._embedding is None:
            self._embedding = asyncio.ensure_future(asyncio.to_thread(self._embed))
        # One asker cancelled (its turn stopped) must not cancel the embedding for another.
        return await asyncio.shield(self._embedding)

    def _embed(self) -> Embedding:
        started = time.time_ns()
        vector = Embedding(self.embedder.embed(self.text))
        self.timing = (started, time.time_ns())
        return vector

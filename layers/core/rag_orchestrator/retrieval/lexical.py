"""Lexical search: BM25 over a collection's own documents, with Chroma's full-text filter as the term index.

Chroma's own BM25 (a sparse-vector index) and the Search API that ranks by it exist only in distributed and
hosted Chroma: the single-node server `make dev` runs and most deployments use refuses a sparse index
("Sparse vector indexing is not enabled in local") and any search ("Search operation is not implemented
for local executor"), up to Chroma's newest release (docs/retrieval.md, "Hybrid search"). So the index
is the one every Chroma server has: the stored documents and the `$regex` document filter.

A search asks Chroma, once per query term and all at once, for the ids of the chunks holding a word that
starts with the term or a synonym of it (`text/terms.py`: case, accents and "kcal"/"calories" aside):
those are the term's postings, their number its document frequency. The chunks holding the most of the
rarest terms are fetched in one more request and scored with BM25 on their own terms (which a prefix
match cannot fool: "art" is not in "start"). Nothing is stored beside Chroma, and a document is found
lexically as soon as its chunks are upserted.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.retrieval.chroma_http import QueryRow
from rag_orchestrator.retrieval.vector_store import VectorStore, passage_of
from rag_orchestrator.text.terms import search_pattern, terms

K1, B = 1.2, 0.75  # BM25's usual saturation and length normalisation
MAX_TERMS = 10  # a question's first distinct terms; more adds requests, rarely a better match
MIN_TERM_CHARS = 2
POSTINGS_LIMIT = 500  # ids per term: a term in more chunks than this tells little, and its df is a floor
FETCH_MARGIN = 10  # chunks fetched beyond top_k: the shortlist's order is only a guess at BM25's
SIZE_TTL_SECONDS = 60.0  # the collection's size only weighs terms: a minute old is good enough


@dataclass(frozen=True, slots=True)
class QueryTerms:
    """A query's terms with their inverse document frequencies in one collection."""

    idf: dict[str, float]

    def coverage(self, text_terms: Collection[str]) -> float:
        """The share of the query's terms the text holds, each weighted by its idf (0 to 1)."""
        total = sum(self.idf.values())
        return sum(w for t, w in self.idf.items() if t in text_terms) / total if total else 0.0

    def bm25(self, text_terms: Sequence[str], average_length: float) -> float:
        counts = Counter(text_terms)
        norm = K1 * (1 - B + B * len(text_terms) / max(average_length, 1.0))
        return sum(w * counts[t] * (K1 + 1) / (counts[t] + norm) for t, w in self.idf.items() if counts[t])


@dataclass(frozen=True, slots=True)
class LexicalResult:
    passages: list[Passage]  # best first by BM25; each scored by its coverage of the query
    terms: QueryTerms
    read: dict[str, frozenset[str]] = field(default_factory=dict)  # the terms of each chunk fetched, by id

    def coverage(self, passage: Passage) -> float:
        """The passage's coverage of the query, its terms read again only if it was not fetched."""
        key = f"{passage.document_id}#{passage.chunk_index}"
        return self.terms.coverage(self.read.get(key) or frozenset(terms(passage.text)))


def query_terms(query: str) -> list[str]:
    return list(dict.fromkeys(t for t in terms(query, implied=False) if len(t) >= MIN_TERM_CHARS))[:MAX_TERMS]


def idf(size: int, frequency: int) -> float:
    return math.log(1 + (size - frequency + 0.5) / (frequency + 0.5))


class LexicalIndex:
    """BM25 over one collection (a `VectorStore`); blocking Chroma calls run in worker threads."""

    def __init__(self, store: VectorStore) -> None:
        self.store = store
        self._size: tuple[float, int] | None = None  # (when read, entries)

    async def search(self, query: str, top_k: int, where: dict[str, Any] | None = None) -> LexicalResult:
        wanted = query_terms(query)
        if not wanted:
            return LexicalResult([], QueryTerms({}))
        # One gather: a search cancelled half way (a follow-up searched again) leaves no call unawaited.
        counted, postings = await asyncio.gather(
            asyncio.to_thread(self._collection_size),
            asyncio.gather(*(asyncio.to_thread(self._postings, term, where) for term in wanted)),
        )
        size = max(counted, *(len(p) for p in postings))
        weights = QueryTerms({t: idf(size, len(ids)) for t, ids in zip(wanted, postings, strict=True)})
        shortlist: dict[str, float] = {}
        for term, ids in zip(wanted, postings, strict=True):
            for chunk_id in ids:
                shortlist[chunk_id] = shortlist.get(chunk_id, 0.0) + weights.idf[term]
        fetch = sorted(shortlist, key=lambda chunk_id: -shortlist[chunk_id])[: top_k + FETCH_MARGIN]
        rows = await asyncio.to_thread(self._rows, fetch) if fetch else []
        read = {row.id: terms(row.document or "") for row in rows}
        return LexicalResult(
            rank(rows, weights, read)[:top_k], weights, {k: frozenset(v) for k, v in read.items()}
        )

    def _postings(self, term: str, where: dict[str, Any] | None) -> list[str]:
        pattern = {"$regex": search_pattern(term)}
        none: list[QueryRow] = []
        found = self.store.read(
            lambda reader, cid: reader.get(cid, where=where, where_document=pattern, limit=POSTINGS_LIMIT),
            none,
        )
        return [row.id for row in found]

    def _rows(self, ids: list[str]) -> list[QueryRow]:
        include = ["documents", "metadatas"]
        none: list[QueryRow] = []
        return self.store.read(lambda reader, cid: reader.get(cid, ids=ids, include=include), none)

    def _collection_size(self) -> int:
        now = time.monotonic()
        if self._size is None or now - self._size[0] > SIZE_TTL_SECONDS:
            self._size = (now, self.store.read(lambda reader, cid: reader.count(cid), 0))
        return self._size[1]


def rank(
    rows: Sequence[QueryRow], weights: QueryTerms, read: dict[str, list[str]] | None = None
) -> list[Passage]:
    """The rows that hold a query term, best BM25 first, as passages scored by their coverage (`read`: the
    rows' terms when they are known already)."""
    read = read or {}
    found = [(row, read.get(row.id) or terms(row.document or "")) for row in rows]
    average = sum(len(t) for _, t in found) / len(found) if found else 1.0
    scored = [(weights.bm25(t, average), weights.coverage(set(t)), row) for row, t in found]
    scored.sort(key=lambda item: -item[0])
    return [passage_of(row, score=coverage) for bm25, coverage, row in scored if bm25 > 0]

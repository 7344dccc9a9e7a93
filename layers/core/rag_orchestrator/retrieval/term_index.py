"""An inverted index of a collection's chunks in memory: postings per term, each chunk's length, BM25.

Pure and in-process (`lexical.py` fills it from Chroma and keeps it current). A chunk's terms are
`text/terms.py`'s (stems, synonyms as one term, the days a text covers); a term's postings say which
chunks hold it and how often. A search scores only the chunks in the postings of the query's terms, with
the collection's own statistics (its size, each term's document frequency, the average chunk length), so
its ranking is BM25's over the whole collection: what `lexical.rank` gives when handed every chunk.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rag_orchestrator.retrieval.chroma_http import QueryRow
from rag_orchestrator.retrieval.filters import matches
from rag_orchestrator.retrieval.vector_store import WRITTEN_AT


def stamp_of(row: QueryRow) -> object:
    """What tells one write of a chunk from another: its `ingestedAt` and, once stamped, its `writtenAt`
    (a document ingested again with the same `ingestedAt` is still written at another moment)."""
    ingested, written = row.metadata.get("ingestedAt"), row.metadata.get(WRITTEN_AT)
    return (ingested, written) if ingested or written else None


@dataclass(frozen=True, slots=True)
class Indexed:
    row: QueryRow  # its text and metadata, as a search returns them
    stamp: object  # `stamp_of` its row: a chunk written again has another
    length: int  # its number of terms
    terms: frozenset[str]  # which postings hold it


@dataclass(frozen=True, slots=True)
class Hit:
    row: QueryRow
    bm25: float
    held: frozenset[str]  # the query's terms it holds


class HeldTerms(Mapping[str, frozenset[str]]):
    """Chunk id -> the query's terms it holds, for every chunk holding one: read from the query terms'
    postings as they were at the search, when asked (a search needs it for a few dense candidates only)."""

    def __init__(self, postings: dict[str, frozenset[str]]) -> None:
        self._postings = postings  # query term -> the ids of the chunks holding it

    def __getitem__(self, chunk_id: str) -> frozenset[str]:
        held = frozenset(t for t, ids in self._postings.items() if chunk_id in ids)
        if not held:
            raise KeyError(chunk_id)
        return held

    def __iter__(self) -> Iterator[str]:
        return iter(frozenset().union(*self._postings.values()))

    def __len__(self) -> int:
        return len(frozenset().union(*self._postings.values()))


class TermIndex:
    """Postings per term over the chunks added; not thread-safe (`lexical.py` holds a lock around it)."""

    def __init__(self) -> None:
        self.chunks: dict[str, Indexed] = {}
        self.postings: dict[str, dict[str, int]] = {}  # term -> chunk id -> occurrences
        self.total_length = 0
        # Each chunk's BM25 length normalisation for (k1, b), kept until the index changes: it depends on
        # the average length, so computing it per posting made up most of a search.
        self._norms: tuple[float, float, dict[str, float]] | None = None

    def __len__(self) -> int:
        return len(self.chunks)

    def stamp(self, chunk_id: str) -> object:
        found = self.chunks.get(chunk_id)
        return found.stamp if found else None

    def add(self, row: QueryRow, row_terms: Sequence[str]) -> None:
        """Index the chunk (again: its earlier terms are removed first)."""
        self.remove(row.id)
        self._norms = None
        counts = Counter(row_terms)
        for term, count in counts.items():
            self.postings.setdefault(term, {})[row.id] = count
        self.chunks[row.id] = Indexed(row, stamp_of(row), len(row_terms), frozenset(counts))
        self.total_length += len(row_terms)

    def remove(self, chunk_id: str) -> None:
        old = self.chunks.pop(chunk_id, None)
        if old is None:
            return
        self._norms = None
        self.total_length -= old.length
        for term in old.terms:
            postings = self.postings.get(term)
            if postings is not None:
                postings.pop(chunk_id, None)
                if not postings:
                    del self.postings[term]

    def frequency(self, term: str) -> int:
        return len(self.postings.get(term, ()))

    def search(
        self, idf: dict[str, float], top_k: int, where: dict[str, Any] | None, k1: float, b: float
    ) -> tuple[list[Hit], HeldTerms]:
        """The `top_k` chunks matching `where` with the best BM25 for these weighted terms, best first, and
        the query terms each chunk holding one holds (whatever `where` says)."""
        norms = self._normalisation(k1, b)
        scores: dict[str, float] = {}
        for term, weight in idf.items():
            for chunk_id, count in self.postings.get(term, {}).items():
                norm = norms[chunk_id]
                scores[chunk_id] = scores.get(chunk_id, 0.0) + weight * count * (k1 + 1) / (count + norm)
        held = HeldTerms({t: frozenset(self.postings.get(t, ())) for t in idf})
        allowed = (i for i in scores if where is None or matches(self.chunks[i].row.metadata, where))
        best = heapq.nsmallest(top_k, allowed, key=lambda i: (-scores[i], i))
        return [Hit(self.chunks[i].row, scores[i], held[i]) for i in best if scores[i] > 0], held

    def _normalisation(self, k1: float, b: float) -> dict[str, float]:
        if self._norms is None or self._norms[:2] != (k1, b):
            average = max(self.total_length / len(self.chunks) if self.chunks else 1.0, 1.0)
            norms = {i: k1 * (1 - b + b * c.length / average) for i, c in self.chunks.items()}
            self._norms = (k1, b, norms)
        return self._norms[2]

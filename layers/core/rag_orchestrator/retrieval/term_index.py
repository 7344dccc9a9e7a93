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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rag_orchestrator.retrieval.chroma_http import QueryRow
from rag_orchestrator.retrieval.filters import matches


@dataclass(frozen=True, slots=True)
class Indexed:
    row: QueryRow  # its text and metadata, as a search returns them
    stamp: object  # its `ingestedAt`: a chunk written again has another
    length: int  # its number of terms
    terms: frozenset[str]  # which postings hold it


@dataclass(frozen=True, slots=True)
class Hit:
    row: QueryRow
    bm25: float
    held: frozenset[str]  # the query's terms it holds


class TermIndex:
    """Postings per term over the chunks added; not thread-safe (`lexical.py` holds a lock around it)."""

    def __init__(self) -> None:
        self.chunks: dict[str, Indexed] = {}
        self.postings: dict[str, dict[str, int]] = {}  # term -> chunk id -> occurrences
        self.total_length = 0

    def __len__(self) -> int:
        return len(self.chunks)

    def stamp(self, chunk_id: str) -> object:
        found = self.chunks.get(chunk_id)
        return found.stamp if found else None

    def add(self, row: QueryRow, row_terms: Sequence[str]) -> None:
        """Index the chunk (again: its earlier terms are removed first)."""
        self.remove(row.id)
        counts = Counter(row_terms)
        for term, count in counts.items():
            self.postings.setdefault(term, {})[row.id] = count
        self.chunks[row.id] = Indexed(row, row.metadata.get("ingestedAt"), len(row_terms), frozenset(counts))
        self.total_length += len(row_terms)

    def remove(self, chunk_id: str) -> None:
        old = self.chunks.pop(chunk_id, None)
        if old is None:
            return
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
    ) -> tuple[list[Hit], dict[str, frozenset[str]]]:
        """The `top_k` chunks matching `where` with the best BM25 for these weighted terms, best first, and
        the query terms each chunk holding one holds (whatever `where` says)."""
        average = self.total_length / len(self.chunks) if self.chunks else 1.0
        scores: dict[str, float] = {}
        held: dict[str, list[str]] = {}
        for term, weight in idf.items():
            for chunk_id, count in self.postings.get(term, {}).items():
                norm = k1 * (1 - b + b * self.chunks[chunk_id].length / max(average, 1.0))
                scores[chunk_id] = scores.get(chunk_id, 0.0) + weight * count * (k1 + 1) / (count + norm)
                held.setdefault(chunk_id, []).append(term)
        allowed = (i for i in scores if where is None or matches(self.chunks[i].row.metadata, where))
        best = heapq.nsmallest(top_k, allowed, key=lambda i: (-scores[i], i))
        hits = [Hit(self.chunks[i].row, scores[i], frozenset(held[i])) for i in best if scores[i] > 0]
        return hits, {i: frozenset(t) for i, t in held.items()}

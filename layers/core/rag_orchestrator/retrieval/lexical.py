"""Lexical search: BM25 over a collection's own chunks, from an inverted index held in memory.

Chroma's own BM25 (a sparse-vector index) and the Search API that ranks by it exist only in distributed and
hosted Chroma: the single-node server `make dev` runs and most deployments use refuses a sparse index
("Sparse vector indexing is not enabled in local") and any search ("Search operation is not implemented
for local executor"), up to Chroma's newest release (docs/retrieval.md, "Hybrid search"). So each process
keeps a term index of the collection's chunks (`term_index.py`: postings per term, chunk lengths), read
from Chroma, the one store: nothing is written anywhere else.

The index is built by a thread beside the first search, which meanwhile scans Chroma as before: it asks,
once per query term and all at once, for the ids of the chunks holding a word that starts with the term or
a synonym of it (Chroma's `$regex` document filter), fetches the chunks holding the most of the rarest
terms and scores them with BM25 on their own terms. Once built, the index follows the collection: this
process's own writes are read before its next search, other processes' by a sync beside a search at most
REFRESH_SECONDS after the last one. A sync asks for the chunks written since the last one began (less
WRITE_MARGIN: by their `writtenAt`, vector_store.py) and counts the collection; only when the count
disagrees (a chunk deleted, or written without a `writtenAt`), and every LIST_SECONDS all the same, does
it list every chunk's stamps, as the first build does, and read those written since.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.observability import logger
from rag_orchestrator.retrieval.chroma_http import ChromaClient, QueryRow
from rag_orchestrator.retrieval.filters import supported
from rag_orchestrator.retrieval.term_index import TermIndex, stamp_of
from rag_orchestrator.retrieval.vector_store import WRITTEN_AT, VectorStore, epoch_ms, passage_of
from rag_orchestrator.text.terms import search_pattern, terms

K1, B = 1.2, 0.75  # BM25's usual saturation and length normalisation
MAX_TERMS = 10  # a question's first distinct terms; more adds requests, rarely a better match
MIN_TERM_CHARS = 2
POSTINGS_LIMIT = 500  # ids per term: a term in more chunks than this tells little, and its df is a floor
FETCH_MARGIN = 10  # chunks fetched beyond top_k: the shortlist's order is only a guess at BM25's
SIZE_TTL_SECONDS = 60.0  # the collection's size only weighs terms: a minute old is good enough
REFRESH_SECONDS = 10.0  # another process's writes are found by words this late at most, after a search
PAGE = 1000  # chunks a sync reads a request
# How late a chunk may show up after its `writtenAt`: an upsert's own time (WRITE_TIMEOUT, 30 s) and the
# writers' clocks' disagreement. A later one is still found by the next sync that has to list every chunk.
WRITE_MARGIN_MS = 60_000
# Every chunk's stamps are listed at least this often all the same: what a count cannot see (a chunk
# deleted while an older process, writing no `writtenAt`, added another) is found this late at most.
LIST_SECONDS = 600.0
INCLUDE = ["documents", "metadatas"]
NONE: list[QueryRow] = []


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
    read: Mapping[str, frozenset[str]] = field(default_factory=dict)  # the terms of chunks read, by id
    complete: bool = False  # `read` holds every chunk holding a query term (the term index's)

    def coverage(self, passage: Passage) -> float:
        """The passage's coverage of the query, its terms read again only if they are not known."""
        key = f"{passage.document_id}#{passage.chunk_index}"
        known = self.read.get(key)
        if known is None:
            known = frozenset() if self.complete else frozenset(terms(passage.text))
        return self.terms.coverage(known)


def query_terms(query: str) -> list[str]:
    return list(dict.fromkeys(t for t in terms(query, implied=False) if len(t) >= MIN_TERM_CHARS))[:MAX_TERMS]


def idf(size: int, frequency: int) -> float:
    return math.log(1 + (size - frequency + 0.5) / (frequency + 0.5))


class LexicalIndex:
    """BM25 over one collection (a `VectorStore`): from the term index in memory once it is built, by
    scanning Chroma's documents until then; blocking Chroma calls run in worker threads."""

    def __init__(self, store: VectorStore, refresh_seconds: float = REFRESH_SECONDS) -> None:
        self.store = store
        self.refresh_seconds = refresh_seconds
        self._index = TermIndex()
        self._lock = threading.Lock()  # around the index: a sync writes it while searches read it
        self._sync_lock = threading.Lock()  # one sync at a time
        self._synced: tuple[float, int] | None = None  # (when, the store's generation then)
        self._since_ms: int | None = None  # the last sync's start, epoch ms: later writes are to be read
        self._listed = 0.0  # when the last sync that listed every chunk began (monotonic)
        self._size: tuple[float, int] | None = None  # (when read, entries): the scan's collection size
        self.syncing: threading.Thread | None = None  # the last sync started beside a search

    async def search(self, query: str, top_k: int, where: dict[str, Any] | None = None) -> LexicalResult:
        wanted = query_terms(query)
        if not wanted:
            return LexicalResult([], QueryTerms({}))
        synced = self._synced
        if synced is None or not supported(where):
            self._sync_aside()  # the first build runs beside the searches, which scan meanwhile
            return await self.scan(wanted, top_k, where)
        if synced[1] != self.store.generation:
            await asyncio.to_thread(self.sync)  # this process wrote: its own writes are read at once
        elif time.monotonic() - synced[0] > self.refresh_seconds:
            self._sync_aside()  # other processes' writes: read by a sync beside, this search goes on
        return self._from_index(wanted, top_k, where)

    def sync(self) -> None:
        """Bring the term index up to Chroma's collection: chunks written since read and indexed, chunks
        deleted dropped (a chunk's stamps, `term_index.stamp_of`, say whether it was written again)."""
        with self._sync_lock:
            started, generation = time.monotonic(), self.store.generation
            since_ms, now_ms = self._since_ms, epoch_ms()
            recent = started - self._listed < LIST_SECONDS
            if since_ms is not None and recent and self._caught_up(since_ms - WRITE_MARGIN_MS):
                self._synced, self._since_ms = (started, generation), now_ms
                return
            listed = {row.id: row for row in self._pages(["metadatas"] if self._synced else INCLUDE)}
            with self._lock:
                gone = [i for i in self._index.chunks if i not in listed]
                changed = [
                    i
                    for i, row in listed.items()
                    if self._index.stamp(i) != stamp_of(row) or not stamp_of(row)
                ]
            rows = [listed[i] for i in changed] if not self._synced else self._fetch(changed)
            self._apply(rows, gone)
            self._synced, self._since_ms, self._listed = (started, generation), now_ms, started
            logger.debug(
                "lexical index synced",
                extra={
                    "chunks": len(listed),
                    "read": len(rows),
                    "dropped": len(gone),
                    "ms": round((time.monotonic() - started) * 1000, 1),
                },
            )

    def _caught_up(self, since_ms: int) -> bool:
        """Index the chunks written since `since_ms`; False, having changed nothing, when the collection's
        count then disagrees with the index (something was deleted or written unstamped): list it all."""
        written = self._pages(["metadatas"], {WRITTEN_AT: {"$gte": since_ms}})
        count = self.store.read(lambda reader, cid: reader.count(cid), 0)
        with self._lock:
            fresh = [row.id for row in written if self._index.stamp(row.id) != stamp_of(row)]
            added = sum(chunk_id not in self._index.chunks for chunk_id in fresh)
            if count != len(self._index) + added:
                return False
        self._apply(self._fetch(fresh))
        return True

    def _apply(self, rows: list[QueryRow], gone: Sequence[str] = ()) -> None:
        """Index the rows read (their terms worked out outside the lock) and drop the chunks gone."""
        read = [(row, terms(row.document or "")) for row in rows]
        with self._lock:
            for chunk_id in gone:
                self._index.remove(chunk_id)
            for row, row_terms in read:
                self._index.add(row, row_terms)

    def _sync_aside(self) -> None:
        if not self._sync_lock.locked():
            self.syncing = threading.Thread(target=self._sync_quietly, name="lexical-index-sync", daemon=True)
            self.syncing.start()

    def _sync_quietly(self) -> None:
        try:
            self.sync()
        except Exception as exc:  # a sync beside a search fails alone: the next search tries again
            logger.warning("lexical index not synced", extra={"error_type": type(exc).__name__})

    def _pages(self, include: list[str], where: dict[str, Any] | None = None) -> list[QueryRow]:
        rows: list[QueryRow] = []
        while True:

            def page_at(reader: ChromaClient, cid: str, at: int = len(rows)) -> list[QueryRow]:
                return reader.get(cid, where=where, include=include, limit=PAGE, offset=at)

            page = self.store.read(page_at, NONE)
            rows += page
            if len(page) < PAGE:
                return rows

    def _fetch(self, ids: list[str]) -> list[QueryRow]:
        return [row for first in range(0, len(ids), PAGE) for row in self._rows(ids[first : first + PAGE])]

    def _from_index(self, wanted: list[str], top_k: int, where: dict[str, Any] | None) -> LexicalResult:
        with self._lock:
            size = len(self._index)
            weights = QueryTerms({t: idf(size, self._index.frequency(t)) for t in wanted})
            hits, held = self._index.search(weights.idf, top_k, where, K1, B)
        passages = [passage_of(hit.row, score=weights.coverage(hit.held)) for hit in hits]
        return LexicalResult(passages, weights, held, complete=True)

    async def scan(self, wanted: list[str], top_k: int, where: dict[str, Any] | None) -> LexicalResult:
        """BM25 from Chroma's `$regex` document filter: the term index's stand-in until it is built."""
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
        found = self.store.read(
            lambda reader, cid: reader.get(cid, where=where, where_document=pattern, limit=POSTINGS_LIMIT),
            NONE,
        )
        return [row.id for row in found]

    def _rows(self, ids: list[str]) -> list[QueryRow]:
        return self.store.read(lambda reader, cid: reader.get(cid, ids=ids, include=INCLUDE), NONE)

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

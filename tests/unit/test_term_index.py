"""The in-memory term index ranks as BM25 over the whole collection does (`lexical.rank` handed every chunk),
follows additions and removals, and evaluates Chroma's `where` filters as Chroma does."""

from __future__ import annotations

import pytest

from eval.questions import corpus_documents, question_sets
from rag_orchestrator.retrieval.chroma_http import QueryRow
from rag_orchestrator.retrieval.chunking import chunk_document
from rag_orchestrator.retrieval.filters import UnsupportedFilter, matches, supported
from rag_orchestrator.retrieval.lexical import K1, B, QueryTerms, idf, query_terms, rank
from rag_orchestrator.retrieval.term_index import TermIndex
from rag_orchestrator.retrieval.vector_store import build_where
from rag_orchestrator.text.terms import terms


@pytest.fixture(scope="module")
def corpus() -> list[QueryRow]:
    rows = []
    for document in corpus_documents():
        for chunk in chunk_document(
            document["documentId"], document["title"], document["text"], size=800, overlap=120
        ):
            rows.append(QueryRow(chunk.id, chunk.text, dict(chunk.metadata), 0.0))
    return sorted(rows, key=lambda row: row.id)


def indexed(rows: list[QueryRow]) -> TermIndex:
    index = TermIndex()
    for row in rows:
        index.add(row, terms(row.document or ""))
    return index


def weights(index: TermIndex, question: str) -> QueryTerms:
    return QueryTerms({t: idf(len(index), index.frequency(t)) for t in query_terms(question)})


def test_the_index_ranks_every_question_as_bm25_over_every_chunk(corpus):
    index = indexed(corpus)
    read = {row.id: terms(row.document or "") for row in corpus}
    asked = [q.question for s in question_sets() for q in s.singles][::3]  # every third: kinds mix well
    assert len(asked) > 50 and len(corpus) > 50
    for question in asked:
        weighted = weights(index, question)
        hits, _ = index.search(weighted.idf, 10, None, K1, B)
        expected = rank(corpus, weighted, read)[:10]
        assert expected or not weighted.idf, question
        assert [h.row.id for h in hits] == [f"{p.document_id}#{p.chunk_index}" for p in expected], question
        assert [weighted.coverage(h.held) for h in hits] == [p.score for p in expected]


def test_a_chunk_removed_or_written_again_leaves_no_trace(corpus):
    index = indexed(corpus)
    question = "How much is a sourdough loaf?"
    before = index.search(weights(index, question).idf, 5, None, K1, B)[0]
    extra = QueryRow("extra#0", "Sourdough loaf, sourdough loaf: €9.", {"documentId": "extra"}, 0.0)
    index.add(extra, terms(extra.document or ""))
    index.add(extra, terms(extra.document or ""))  # twice: indexed once
    assert index.search(weights(index, question).idf, 1, None, K1, B)[0][0].row.id == "extra#0"
    index.remove("extra#0")
    assert index.search(weights(index, question).idf, 5, None, K1, B)[0] == before
    assert index.postings == indexed(corpus).postings and index.total_length == indexed(corpus).total_length


def test_filters_narrow_the_hits_but_not_the_statistics(corpus):
    index = indexed(corpus)
    weighted = weights(index, "opening hours on Saturday")
    where = build_where(source=None, tags=None, modality="text")
    assert index.search(weighted.idf, 5, where, K1, B)[0] == index.search(weighted.idf, 5, None, K1, B)[0]
    only = {"documentId": corpus[0].metadata["documentId"]}
    hits, held = index.search(weighted.idf, 50, only, K1, B)
    assert all(h.row.metadata["documentId"] == only["documentId"] for h in hits)
    assert len(held) >= len(hits)  # the terms of every chunk holding one, filtered or not


def test_where_filters_mean_what_they_mean_to_chroma():
    meta = {"source": "town", "tags": ["food", "cafe"], "modality": "text", "chunkIndex": 2}
    assert matches(meta, build_where(source="town", tags=["x", "cafe"], modality=["text", "image"]))
    assert not matches(meta, build_where(source="ops"))
    assert not matches(meta, build_where(tags=["x"]))
    assert matches(meta, {"chunkIndex": {"$gte": 2}}) and not matches(meta, {"chunkIndex": {"$gt": 2}})
    assert matches(meta, {"source": {"$nin": ["ops"]}}) and matches(meta, {"source": {"$ne": "ops"}})
    assert matches(meta, None) and supported(None)
    assert not supported({"$not": {}}) and not supported({"source": {"$like": "t%"}})
    with pytest.raises(UnsupportedFilter):
        matches(meta, {"source": {"$regex": "t"}})


def test_a_search_after_the_index_changed_ranks_with_the_new_lengths(corpus):
    index = indexed(corpus[: len(corpus) // 2])
    asked = [q.question for s in question_sets() for q in s.singles][::3]
    for question in asked:  # each keeps its lengths' normalisation, until the index changes
        index.search(weights(index, question).idf, 10, None, K1, B)
    for row in corpus[len(corpus) // 2 :]:  # the average length moves: what was kept is stale
        index.add(row, terms(row.document or ""))
    index.remove(corpus[0].id)
    rows = corpus[1:]
    fresh = indexed(rows)
    read = {row.id: terms(row.document or "") for row in rows}
    for question in asked:
        weighted = weights(index, question)
        hits, held = index.search(weighted.idf, 10, None, K1, B)
        assert hits == fresh.search(weighted.idf, 10, None, K1, B)[0], question
        holding = {row.id: frozenset(t for t in weighted.idf if t in read[row.id]) for row in rows}
        assert dict(held) == {i: t for i, t in holding.items() if t}
        assert held.get(corpus[0].id) is None

"""Hybrid search on a real Chroma server: BM25 over the collection's chunks (a term index in memory, read
from Chroma; Chroma's `$regex` document filter until it is built) fused with the nearest neighbours, the three RETRIEVAL_MODEs, the rerankers (an
HTTP rerank API on loopback), and a follow-up searched with its conversation."""

from __future__ import annotations

import logging
import uuid

import pytest

from rag_orchestrator.config import load_settings
from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.errors import EmbedderUnavailable
from rag_orchestrator.retrieval.fragments import FragmentIndex
from rag_orchestrator.retrieval.ingestion import ingest_documents
from rag_orchestrator.retrieval.knowledge_base import KnowledgeBase
from rag_orchestrator.retrieval.lexical import LexicalIndex, query_terms
from rag_orchestrator.retrieval.rerankers import HttpReranker, Reranker
from rag_orchestrator.retrieval.search import Mode, Retriever, SearchQuery
from rag_orchestrator.retrieval.vector_store import VectorStore
from rag_orchestrator.text.hashing import HashingEmbedder
from rag_orchestrator.tools.rag_search import RagSearchTool
from tests.fakes.fake_reranker import FakeReranker
from tests.integration.knowledge import ingest, knowledge

pytestmark = pytest.mark.integration

DOCS = [
    {
        "documentId": "cafe",
        "title": "Harbour Café",
        "text": "| Dish | Price | Energy |\n|---|---|---|\n| Veggie burger | €11.40 | 910 kcal |\n\n"
        "On Saturdays the café opens at 08:30, and Saturday brunch is served until noon.",
        "source": "town",
    },
    {
        "documentId": "pool",
        "title": "Riverside Pool",
        "text": "The Riverside Pool opens at 06:30 on weekdays and at 08:00 on Saturdays. An adult swim is €5.50.",
        "source": "town",
    },
    {
        "documentId": "server",
        "title": "Operations",
        "text": "Restart the server after an upgrade. The server listens on port 8000.",
        "source": "ops",
    },
]


@pytest.fixture
def settings(chroma_url: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CHROMA_COLLECTION", f"hybrid-{uuid.uuid4().hex[:12]}")
    settings = load_settings()
    ingest(DOCS, settings)
    return settings


class Unavailable(HashingEmbedder):
    """The collection's embedder (same vector space), down."""

    def embed(self, text):
        raise EmbedderUnavailable("Embedding service unreachable")


class Forbidden(HashingEmbedder):
    def embed(self, text):
        raise AssertionError("a lexical search must not embed")


def retriever(settings, mode: Mode = "hybrid", embedder=None, reranker: Reranker | None = None) -> Retriever:
    embedder = embedder or HashingEmbedder(settings.embedding_dimensions)
    store = VectorStore(settings, embedder.name)
    return Retriever(embedder=embedder, knowledge=store, reranker=reranker, mode=mode)


async def found(
    retriever: Retriever, text: str, top_k: int = 3, threshold: float = 0.1, **filters
) -> list[str]:
    return [p.document_id for p in await retriever.search(SearchQuery(text, top_k, threshold, **filters))]


async def test_words_are_found_whatever_their_case_accents_or_synonym(settings):
    lexical = retriever(settings, "lexical")
    assert (await found(lexical, "HARBOUR CAFE"))[0] == "cafe"
    assert await found(lexical, "How many calories are in it?") == ["cafe"]  # "kcal", "Energy"
    assert await found(lexical, "When does the riverside pool open?") == ["pool", "cafe"]


async def test_a_word_that_only_starts_another_is_not_a_match(settings):
    assert await found(retriever(settings, "lexical"), "art") == []  # "Restart" holds it, not as a word


async def test_the_filters_narrow_the_lexical_ranking_too(settings):
    lexical = retriever(settings, "lexical")
    assert await found(lexical, "server port", source="town") == []
    assert await found(lexical, "server port", source="ops") == ["server"]


async def test_hybrid_finds_what_only_the_words_find(settings):
    question = "How many calories?"
    assert "cafe" not in await found(retriever(settings, "dense"), question)
    assert (await found(retriever(settings, "hybrid"), question))[0] == "cafe"


async def test_a_lexical_search_never_embeds(settings):
    assert (
        await found(retriever(settings, "lexical", embedder=Forbidden(settings.embedding_dimensions)), "kcal")
    )[0] == "cafe"


async def test_a_hybrid_search_outlives_its_embedder_and_a_dense_one_does_not(settings, caplog):
    down = Unavailable(settings.embedding_dimensions)
    with caplog.at_level(logging.WARNING):
        assert (await found(retriever(settings, "hybrid", embedder=down), "veggie burger kcal"))[0] == "cafe"
    assert "embedder unavailable: searching by words only" in caplog.text
    with pytest.raises(EmbedderUnavailable):
        await found(retriever(settings, "dense", embedder=down), "veggie burger kcal")


async def test_a_lexical_search_with_memory_outlives_its_embedder_too(settings, caplog):
    """A chat turn's searches pass the caller (memory on): only memory needs the embedder, so only
    memory is lost when it is down."""
    down = Unavailable(settings.embedding_dimensions)
    memory = FragmentIndex(
        VectorStore(settings, down.name, collection=settings.chroma_memory_collection), down
    )
    lexical = Retriever(
        embedder=down, knowledge=VectorStore(settings, down.name), memory=memory, mode="lexical"
    )
    with caplog.at_level(logging.WARNING):
        passages = await lexical.search(SearchQuery("veggie burger kcal", 3, 0.1, caller_id="alice"))
    assert passages[0].document_id == "cafe"
    assert "embedder unavailable: searching by words only" in caplog.text


async def test_a_deleted_document_leaves_the_lexical_ranking(settings):
    knowledge(settings).store.delete_document("cafe")
    assert await found(retriever(settings, "lexical"), "veggie burger kcal") == []


async def test_the_term_index_ranks_as_the_scan_of_chroma_did(settings):
    index = LexicalIndex(VectorStore(settings, None))
    index.sync()
    questions = ["HARBOUR CAFE", "How many calories are in it?", "server port", "Saturday opening", "art"]
    for question in questions:
        for where in (None, {"source": "town"}):
            indexed = await index.search(question, 3, where)
            scanned = await index.scan(query_terms(question), 3, where)
            assert indexed.passages == scanned.passages, (question, where)
    assert (await index.search("art", 3)).passages == []


async def test_the_term_index_reads_this_process_writes_before_its_next_search(settings):
    searching = retriever(settings, "lexical")
    searching.lexical.sync()
    base = KnowledgeBase(searching.embedder, searching.knowledge, knowledge(settings).registry, 800, 120)
    doc = {"documentId": "bakery", "title": "Hilltop Bakery", "text": "A sourdough loaf costs €4.90."}
    ingest_documents([doc], base)
    assert await found(searching, "sourdough loaf") == ["bakery"]
    searching.knowledge.delete_document("cafe")
    assert await found(searching, "veggie burger kcal") == []


async def test_the_term_index_reads_other_processes_writes_within_its_refresh(settings):
    index = LexicalIndex(VectorStore(settings, None), refresh_seconds=3600.0)
    index.sync()
    bakery = {"documentId": "bakery", "title": "Hilltop Bakery", "text": "A sourdough loaf costs €4.90."}
    ingest([bakery], settings)  # another process's store: this index learns of it only by syncing
    knowledge(settings).store.delete_document("cafe")

    async def ids() -> list[str]:
        return [p.document_id for p in (await index.search("sourdough loaf burger", 3)).passages]

    assert await ids() == ["cafe"] and index.syncing is None  # fresh enough: no sync
    index.refresh_seconds = 0.0
    assert await ids() == ["cafe"]  # a stale index answers, and a sync starts beside the search
    assert index.syncing is not None
    index.syncing.join(timeout=30)
    assert await ids() == ["bakery"]


async def test_a_follow_up_is_searched_with_the_question_before_it(settings):
    tool = RagSearchTool(settings, retriever(settings, "hybrid"))
    history = [
        Message(role=Role.USER, content="When does the Riverside Pool open on weekdays?"),
        Message(role=Role.ASSISTANT, content="At 06:30."),
        Message(role=Role.USER, content="And on Saturdays?"),
    ]
    alone = await tool.search("And on Saturdays?", max_results=1)
    followed = await tool.search("And on Saturdays?", max_results=1, history=history)
    assert [p.document_id for p in alone] == ["cafe"]  # "On Saturdays the café opens…"
    assert [p.document_id for p in followed] == ["pool"]


# ---------------------------------------------------------------------------- rerankers
async def test_an_http_reranker_orders_the_candidates(settings):
    with FakeReranker() as api:
        reranker = HttpReranker(api.url, "rerank-v1", api_key=lambda: "sk-rerank")
        order = await found(retriever(settings, reranker=reranker), "server port 8000 restart", 2, 0.0)
        await reranker.aclose()
    assert order[0] == "server" and len(order) == 2
    headers, body = api.requests[0]
    assert headers["Authorization"] == "Bearer sk-rerank"
    assert body["model"] == "rerank-v1" and body["query"] == "server port 8000 restart" and body["top_n"] == 2
    assert len(body["documents"]) == 3 and all(isinstance(d, str) for d in body["documents"])


@pytest.mark.parametrize(
    "failure",
    [
        (500, {"error": "overloaded"}),
        (200, {"results": [{"index": 9, "relevance_score": 1.0}]}),
        (200, b"<html>"),
        0.5,
        (200, b'{"results": [{"index": 1e999, "relevance_score": 0.9}]}'),  # an index past any int
        (200, b'{"results": [{"index": 0, "relevance_score": 1' + b"0" * 400 + b"}]}"),  # past any float
        (200, b'{"results": ' + b"[" * 20000 + b"]" * 20000 + b"}"),  # nested past the parser
    ],
    ids=["500", "index-out-of-range", "not-json", "stalled", "index-1e999", "score-huge", "nested"],
)
async def test_a_failing_http_reranker_keeps_the_fused_order(settings, failure, caplog):
    fused = await found(retriever(settings), "server port 8000 restart", 3, 0.0)
    with FakeReranker() as api, caplog.at_level(logging.WARNING):
        api.script = [failure]
        reranker = HttpReranker(api.url, "rerank-v1", timeout_seconds=0.2)
        assert (
            await found(retriever(settings, reranker=reranker), "server port 8000 restart", 3, 0.0) == fused
        )
        await reranker.aclose()
    assert "reranker failed: the fused order is kept" in caplog.text


async def test_a_reranker_whose_key_cannot_be_read_or_that_trickles_past_its_timeout_keeps_the_fused_order(
    settings, caplog
):
    fused = await found(retriever(settings), "server port 8000 restart", 3, 0.0)

    def unreadable() -> str:
        raise RuntimeError("ParameterNotFound")  # what SSM raises for a missing or throttled read

    reversed_order = {"results": [{"index": i, "relevance_score": 1.0 - i / 10} for i in (2, 1, 0)]}
    with FakeReranker() as api, caplog.at_level(logging.WARNING):
        keyless = HttpReranker(api.url, "rerank-v1", api_key=unreadable)
        assert await found(retriever(settings, reranker=keyless), "server port 8000 restart", 3, 0.0) == fused
        # Each byte within the read timeout, the whole answer (8 x 0.3 s) past RERANKER_TIMEOUT_SECONDS:
        # cut at the timeout, so the order it would have given is not used.
        api.trickle, api.script = 0.3, [(200, reversed_order)]
        slow = HttpReranker(api.url, "rerank-v1", timeout_seconds=1.0)
        assert await found(retriever(settings, reranker=slow), "server port 8000 restart", 3, 0.0) == fused
        await keyless.aclose()
        await slow.aclose()
    assert caplog.text.count("reranker failed: the fused order is kept") == 2


@pytest.mark.parametrize("named", [[], [2]], ids=["none", "fewer"])
async def test_a_reranker_naming_fewer_documents_than_asked_is_followed_by_the_fused_order(settings, named):
    fused = await found(retriever(settings), "server port 8000 restart", 3, 0.0)
    with FakeReranker() as api:
        api.script = [(200, {"results": [{"index": i, "relevance_score": 0.9} for i in named]})]
        reranker = HttpReranker(api.url, "rerank-v1")
        order = await found(retriever(settings, reranker=reranker), "server port 8000 restart", 3, 0.0)
        await reranker.aclose()
    assert order == [fused[i] for i in named] + [d for d in fused if d not in [fused[i] for i in named]]


async def test_the_local_reranker_puts_the_passage_that_states_the_price_first(settings):
    from rag_orchestrator.retrieval.local_reranker import LocalReranker

    question = "How much is an adult swim at the Riverside Pool?"
    order = await found(retriever(settings, reranker=LocalReranker()), question, top_k=2)
    assert order[0] == "pool"

"""The term index keeping up with other processes' writes on a real Chroma server: by the chunks written
since its last sync (their `writtenAt`) and a count, listing the whole collection only when the count
disagrees."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from rag_orchestrator.config import load_settings
from rag_orchestrator.retrieval import vector_store
from rag_orchestrator.retrieval.chroma_http import ChromaClient
from rag_orchestrator.retrieval.chunking import chunk_document
from rag_orchestrator.retrieval.ingestion import ingest_documents
from rag_orchestrator.retrieval.knowledge_base import KnowledgeBase
from rag_orchestrator.retrieval.lexical import LexicalIndex
from rag_orchestrator.retrieval.vector_store import WRITTEN_AT, VectorStore
from tests.integration.knowledge import ingest, knowledge

pytestmark = pytest.mark.integration

CAFE = {
    "documentId": "cafe",
    "title": "Harbour Café",
    "text": "A veggie burger costs €11.40.",
    "source": "town",
}
POOL = {"documentId": "pool", "title": "Riverside Pool", "text": "An adult swim is €5.50.", "source": "town"}
BAKERY = {"documentId": "bakery", "title": "Hilltop Bakery", "text": "A sourdough loaf costs €4.90."}


@pytest.fixture
def settings(chroma_url: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CHROMA_COLLECTION", f"sync-{uuid.uuid4().hex[:12]}")
    settings = load_settings()
    ingest([CAFE, POOL], settings)
    return settings


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every `get` a reader sends, by its filter: a listing of the whole collection has none."""
    sent: list[dict[str, Any]] = []
    real = ChromaClient.get

    def get(self: ChromaClient, collection_id: str, **body: Any) -> Any:
        sent.append(body)
        return real(self, collection_id, **body)

    monkeypatch.setattr(ChromaClient, "get", get)
    return sent


def whole(sent: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [body for body in sent if not body.get("where") and not body.get("ids")]


async def ids(index: LexicalIndex, question: str) -> list[str]:
    return [p.document_id for p in (await index.search(question, 3)).passages]


def synced(settings) -> LexicalIndex:
    index = LexicalIndex(VectorStore(settings, None), refresh_seconds=3600.0)
    index.sync()
    return index


async def test_other_processes_new_and_rewritten_chunks_are_read_without_listing_the_collection(
    settings, listings
):
    index = synced(settings)
    listings.clear()
    ingest([BAKERY, {**POOL, "text": "An adult swim is now €6.20, sourdough toast included."}], settings)
    index.sync()
    assert whole(listings) == []  # only the chunks written since, by their writtenAt
    assert sorted(await ids(index, "sourdough")) == ["bakery", "pool"]
    assert await ids(index, "swim 6.20") == ["pool"]


async def test_a_chunk_written_again_with_the_same_ingested_at_is_read_again(settings):
    base, moment = knowledge(settings), datetime(2026, 1, 1, tzinfo=UTC)

    def write(text: str) -> None:  # a document ingested again from a source that dates it
        chunks = chunk_document("menu", "Menu", text, size=800, overlap=120, ingested_at=moment)
        base.store.upsert(chunks, base.embedder.embed_batch([chunk.text for chunk in chunks]))

    write("A veggie burger costs €11.40 at the harbour.")
    index = synced(settings)
    write("A bean chilli costs €9.80 at the harbour.")
    index.sync()
    assert await ids(index, "chilli") == ["menu"] and "menu" not in await ids(index, "burger")


async def test_a_deletion_elsewhere_is_found_by_the_count_and_a_listing(settings, listings):
    index = synced(settings)
    listings.clear()
    knowledge(settings).store.delete_document("cafe")
    index.sync()
    assert len(whole(listings)) == 1  # the count disagreed: every chunk's stamps listed once
    assert await ids(index, "burger") == []
    listings.clear()
    index.sync()
    assert whole(listings) == []  # and then it agrees again


async def test_a_chunk_written_without_a_written_at_is_found_by_the_count(settings, listings):
    index = synced(settings)
    old = knowledge(settings)
    unstamped = VectorStore(settings, old.embedder.name)  # a writer that predates writtenAt
    ingest_documents([BAKERY], KnowledgeBase(old.embedder, unstamped, old.registry, 800, 120))
    entry = unstamped.entries({"documentId": "bakery"})
    assert entry and WRITTEN_AT not in entry[0].metadata
    listings.clear()
    index.sync()
    assert len(whole(listings)) == 1
    assert await ids(index, "sourdough") == ["bakery"]


async def test_a_write_that_shows_up_late_is_still_read_within_the_margin(settings, monkeypatch, listings):
    index = synced(settings)
    late = vector_store.epoch_ms() - 30_000  # stamped 30 s before the sync that reads it began
    monkeypatch.setattr(vector_store, "epoch_ms", lambda: late)
    ingest([{**POOL, "text": "The pool now has a sauna."}], settings)
    monkeypatch.undo()
    listings.clear()
    index.sync()
    assert whole(listings) == []
    assert await ids(index, "sauna") == ["pool"]


async def test_what_a_count_cannot_see_is_found_by_the_listing_every_few_minutes(settings, monkeypatch):
    from rag_orchestrator.retrieval import lexical

    index = synced(settings)
    old = knowledge(settings)
    unstamped = VectorStore(settings, old.embedder.name)  # an older process adds one chunk unstamped…
    ingest_documents([BAKERY], KnowledgeBase(old.embedder, unstamped, old.registry, 800, 120))
    old.store.delete_document("cafe")  # …while another deletes one: the count stays the same
    index.sync()
    assert await ids(index, "burger") == ["cafe"]  # not seen yet
    monkeypatch.setattr(lexical, "LIST_SECONDS", 0.0)  # the time for a full listing has come
    index.sync()
    assert await ids(index, "burger") == [] and await ids(index, "sourdough") == ["bakery"]

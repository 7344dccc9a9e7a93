"""The knowledge base's parts: CHROMA_COLLECTION, the embedder that fills and searches it, and the document
registry that lists it. Ingestion writes through them (`ingestion.py`), the retriever reads the collection
(`search.py`), the documents routes list and delete through them."""

from __future__ import annotations

from dataclasses import dataclass

from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import Settings
from rag_orchestrator.retrieval.embedders import Embedder, create_embedder
from rag_orchestrator.retrieval.registry import DocumentRegistry, create_registry
from rag_orchestrator.retrieval.vector_store import VectorStore


@dataclass(frozen=True, slots=True)
class KnowledgeBase:
    embedder: Embedder
    store: VectorStore
    registry: DocumentRegistry
    chunk_size: int
    chunk_overlap: int


def create_knowledge_base(
    settings: Settings, aws: AwsClients | None = None, embedder: Embedder | None = None
) -> KnowledgeBase:
    """The parts of these settings, with the caller's AWS clients; the embedder is made here unless the
    caller shares one."""
    embedder = embedder or create_embedder(settings, aws)
    return KnowledgeBase(
        embedder=embedder,
        store=VectorStore(settings, embedder.name, stamp_writes=True),  # the lexical index syncs by it
        registry=create_registry(settings, aws),
        chunk_size=settings.chunk_size,
        chunk_overlap=settings.chunk_overlap,
    )

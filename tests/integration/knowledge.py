"""The knowledge base as the integration tests use it: its parts built from settings by the same factories
as the composition root, documents ingested and searched through them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from rag_orchestrator.api.deps import process_aws
from rag_orchestrator.attachments.factory import create_function_attachments
from rag_orchestrator.attachments.service import Attachments
from rag_orchestrator.config import Settings, load_settings
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.retrieval.embedders import create_embedder
from rag_orchestrator.retrieval.fragments import FragmentIndex, create_fragment_index
from rag_orchestrator.retrieval.ingestion import ingest_documents
from rag_orchestrator.retrieval.knowledge_base import KnowledgeBase, create_knowledge_base
from rag_orchestrator.retrieval.search import Retriever, SearchQuery, create_retriever
from rag_orchestrator.retrieval.vector_store import VectorStore
from rag_orchestrator.tools.rag_search import RagSearchTool


def knowledge(settings: Settings | None = None) -> KnowledgeBase:
    return create_knowledge_base(settings or load_settings(), process_aws())


def ingest(documents: Iterable[Mapping[str, Any]], settings: Settings | None = None) -> list[dict[str, Any]]:
    return ingest_documents(list(documents), knowledge(settings))


def retriever(settings: Settings | None = None) -> Retriever:
    settings = settings or load_settings()
    return create_retriever(settings, knowledge(settings), None)


def search(
    query: str, *, top_k: int, threshold: float, settings: Settings | None = None, **filters: Any
) -> list[Passage]:
    """The knowledge base's passages for the query (from a test that is not async)."""
    return asyncio.run(retriever(settings).search(SearchQuery(query, top_k, threshold, **filters)))


async def asearch(
    query: str, *, top_k: int, threshold: float, settings: Settings | None = None, **filters: Any
) -> list[Passage]:
    return await retriever(settings).search(SearchQuery(query, top_k, threshold, **filters))


def memory(settings: Settings | None = None) -> FragmentIndex:
    """The conversation memory collection, whatever MEMORY_ENABLED says (a test looks into it)."""
    settings = settings or load_settings()
    embedder = create_embedder(settings, process_aws())
    return FragmentIndex(
        VectorStore(settings, embedder.name, collection=settings.chroma_memory_collection), embedder
    )


def rag_search(settings: Settings | None = None) -> RagSearchTool:
    """rag_search over the knowledge base and conversation memory, as the composition root wires it."""
    settings = settings or load_settings()
    embedder = create_embedder(settings, process_aws())
    memory = create_fragment_index(settings, embedder) if settings.memory_enabled else None
    return RagSearchTool(settings, create_retriever(settings, knowledge(settings), memory))


def attachments(settings: Settings | None = None) -> Attachments:
    """AttachmentFunction's service, built as the function builds it."""
    return create_function_attachments(settings or load_settings(), process_aws())

"""Ingestion: validate, chunk, embed in batches, upsert, register; a documentId ingested again replaces
all its chunks. The registry entry (retrieval/registry.py) is written once the chunks are in: a
failure before it leaves the document searchable but unlisted until it is ingested again, which
both callers do (a 503 to the API's client, Lambda's retry for the IngestFunction)."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from rag_orchestrator.errors import BadRequest
from rag_orchestrator.observability import logger
from rag_orchestrator.retrieval.chunking import chunk_document
from rag_orchestrator.retrieval.knowledge_base import KnowledgeBase
from rag_orchestrator.retrieval.models import Document
from rag_orchestrator.retrieval.registry import DocumentInfo

MAX_DOCUMENTS = 100


def stable_document_id(title: str, text: str) -> str:
    """`doc-` and the first 20 hex digits of SHA-256(title, text): the same content always gets the same id."""
    digest = hashlib.sha256(f"{title}\x1f{text}".encode()).hexdigest()
    return f"doc-{digest[:20]}"


def embedding_text(title: str, chunk_text: str) -> str:
    # The title goes into every chunk's vector: a question naming the document's subject finds all its parts.
    return f"{title}\n{chunk_text}"


def validate_documents(documents: Iterable[Document | Mapping[str, Any]]) -> list[Document]:
    """Documents as models, each with a documentId; BadRequest naming the first problem."""
    items = list(documents)
    if len(items) > MAX_DOCUMENTS:
        raise BadRequest(f"At most {MAX_DOCUMENTS} documents per request")
    valid: list[Document] = []
    for i, item in enumerate(items):
        try:
            document = item if isinstance(item, Document) else Document.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise BadRequest(f"documents[{i}].{where}: {first['msg']}") from None
        if document.document_id is None:
            document = document.model_copy(
                update={"document_id": stable_document_id(document.title, document.text)}
            )
        valid.append(document)
    ids = [d.document_id for d in valid]
    if duplicate := next((i for i in ids if ids.count(i) > 1), None):
        raise BadRequest(f"documentId {duplicate!r} appears more than once")
    return valid


def ingest_documents(
    documents: Iterable[Document | Mapping[str, Any]], knowledge: KnowledgeBase
) -> list[dict[str, Any]]:
    """Ingest and return `[{"documentId", "chunks"}]` in input order. A missing documentId: `stable_document_id`."""
    valid = validate_documents(documents)
    embedder, store, registry = knowledge.embedder, knowledge.store, knowledge.registry
    results = []
    for document in valid:
        started = time.perf_counter()
        document_id = document.document_id or ""
        chunks = chunk_document(
            document_id,
            document.title,
            document.text,
            size=knowledge.chunk_size,
            overlap=knowledge.chunk_overlap,
            source=document.source,
            tags=document.tags,
        )
        first = chunks[0].metadata if chunks else {}
        title = str(first.get("title") or document.title)
        embeddings = embedder.embed_batch([embedding_text(title, chunk.text) for chunk in chunks])
        # Upsert first, then drop the old tail: the document is never absent from search while it changes.
        store.upsert(chunks, embeddings)
        store.delete_document(document_id, keep_first=len(chunks))
        tags = first.get("tags")
        registry.record(
            DocumentInfo(
                document_id=document_id,
                title=title,
                source=str(first["source"]) if first.get("source") else None,
                tags=[str(t) for t in tags] if isinstance(tags, list) else [],
                chunks=len(chunks),
            )
        )
        logger.info(
            "document ingested",
            extra={
                "document_id": document_id,
                "chunks": len(chunks),
                "ms": round((time.perf_counter() - started) * 1000, 1),
            },
        )
        results.append({"documentId": document_id, "chunks": len(chunks)})
    return results


async def aingest_documents(
    documents: Iterable[Document | Mapping[str, Any]], knowledge: KnowledgeBase
) -> list[dict[str, Any]]:
    """`ingest_documents` off the event loop (embedding and Chroma calls are blocking)."""
    return await asyncio.to_thread(ingest_documents, list(documents), knowledge)

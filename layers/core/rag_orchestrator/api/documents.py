"""The knowledge base's documents (docs/documents.md): GET /api/v1/documents, DELETE …/{documentId}.

Both, like POST /api/v1/ingest, need a role in KB_WRITER_ROLES (403 otherwise). The listing reads
the document registry (retrieval/registry.py), by documentId, with signed cursors.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Path, Query, Response

from rag_orchestrator.api.auth import kb_writer
from rag_orchestrator.api.deps import get_knowledge_base, get_settings
from rag_orchestrator.config import Settings
from rag_orchestrator.conversations.cursors import MAX_CURSOR_CHARS, CursorCodec, cursor_key
from rag_orchestrator.conversations.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import Page
from rag_orchestrator.errors import BadRequest, NotFound
from rag_orchestrator.retrieval.knowledge_base import KnowledgeBase
from rag_orchestrator.retrieval.registry import DocumentInfo
from rag_orchestrator.sanitize import MAX_DOCUMENT_ID

router = APIRouter(tags=["knowledge base"])
SCOPE = "documents"


@router.get("/api/v1/documents", response_model=Page[DocumentInfo], summary="Documents in the knowledge base")
async def list_documents(
    limit: int = Query(DEFAULT_PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE),
    cursor: str | None = Query(None, min_length=1, max_length=MAX_CURSOR_CHARS),
    caller: Caller = Depends(kb_writer),
    settings: Settings = Depends(get_settings),
    knowledge: KnowledgeBase = Depends(get_knowledge_base),
) -> Page[DocumentInfo]:
    """By documentId; `nextCursor` until the last page."""
    codec = CursorCodec(cursor_key(settings))
    after = codec.decode(cursor, SCOPE).get("after") if cursor else None
    if cursor and not isinstance(after, str):
        raise BadRequest("Invalid cursor")
    found, more = await asyncio.to_thread(knowledge.registry.page, after, limit)
    following = codec.encode({"after": found[-1].document_id}, SCOPE) if more else None
    return Page(items=found, next_cursor=following)


@router.delete(
    "/api/v1/documents/{document_id:path}",
    status_code=204,
    response_class=Response,
    summary="Remove a document",
)
async def delete_document(
    document_id: str = Path(..., min_length=1, max_length=MAX_DOCUMENT_ID),
    caller: Caller = Depends(kb_writer),
    knowledge: KnowledgeBase = Depends(get_knowledge_base),
) -> Response:
    """Its chunks leave the knowledge base, then its registry entry (so a retry finishes the job)."""
    registry, chunks = knowledge.registry, knowledge.store
    known = await asyncio.to_thread(registry.get, document_id)
    # A document ingested before the registry existed has chunks but no entry.
    if known is None and not await asyncio.to_thread(chunks.count, document_id):
        raise NotFound(f"Document not found: {document_id}")
    await asyncio.to_thread(chunks.delete_document, document_id)
    await asyncio.to_thread(registry.remove, document_id)
    return Response(status_code=204)

"""POST /api/v1/ingest: documents in, chunks in the knowledge base out; a documentId again replaces it."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from pydantic import ConfigDict, Field

from rag_orchestrator.api.auth import Caller, get_caller
from rag_orchestrator.config import Settings, get_settings
from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.domain.text import ClientBody
from rag_orchestrator.errors import Forbidden
from rag_orchestrator.retrieval.ingestion import MAX_DOCUMENTS, aingest_documents
from rag_orchestrator.retrieval.models import Document

router = APIRouter(tags=["knowledge base"])


class IngestRequest(ClientBody):
    model_config = ConfigDict(extra="forbid")

    documents: list[Document] = Field(min_length=1, max_length=MAX_DOCUMENTS)


class IngestedDocument(CamelModel):
    document_id: str
    chunks: int


class IngestResponse(CamelModel):
    documents: list[IngestedDocument]
    total_chunks: int


@router.post("/api/v1/ingest", response_model=IngestResponse, summary="Chunk, embed and index documents")
async def ingest(
    body: IngestRequest, caller: Caller = Depends(get_caller), settings: Settings = Depends(get_settings)
) -> IngestResponse:
    if caller.anonymous:
        raise Forbidden("Anonymous callers may not change the knowledge base")
    results = await aingest_documents(body.documents, settings)
    return IngestResponse(
        documents=[IngestedDocument.model_validate(r) for r in results],
        total_chunks=sum(r["chunks"] for r in results),
    )

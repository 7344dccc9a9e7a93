"""POST /api/v1/ingest: documents in, chunks in the knowledge base out; a documentId again replaces it."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from pydantic import ConfigDict, Field, model_validator

from rag_orchestrator.api.auth import kb_writer
from rag_orchestrator.api.deps import get_knowledge_base
from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.text import ClientBody
from rag_orchestrator.retrieval.ingestion import MAX_DOCUMENTS, aingest_documents, stable_document_id
from rag_orchestrator.retrieval.knowledge_base import KnowledgeBase
from rag_orchestrator.retrieval.models import Document

router = APIRouter(tags=["knowledge base"])


class IngestRequest(ClientBody):
    model_config = ConfigDict(extra="forbid")

    documents: list[Document] = Field(min_length=1, max_length=MAX_DOCUMENTS)

    @model_validator(mode="after")
    def _distinct_ids(self) -> IngestRequest:
        """Two documents with one documentId (given, or derived from title and text) are a 422."""
        ids = [d.document_id or stable_document_id(d.title, d.text) for d in self.documents]
        if duplicate := next((i for i in ids if ids.count(i) > 1), None):
            raise ValueError(f"documentId {duplicate!r} appears more than once")
        return self


class IngestedDocument(CamelModel):
    document_id: str
    chunks: int


class IngestResponse(CamelModel):
    documents: list[IngestedDocument]
    total_chunks: int


@router.post("/api/v1/ingest", response_model=IngestResponse, summary="Chunk, embed and index documents")
async def ingest(
    body: IngestRequest,
    caller: Caller = Depends(kb_writer),
    knowledge: KnowledgeBase = Depends(get_knowledge_base),
) -> IngestResponse:
    """For the roles in KB_WRITER_ROLES (default `admin`); 403 for everyone else."""
    results = await aingest_documents(body.documents, knowledge)
    return IngestResponse(
        documents=[IngestedDocument.model_validate(r) for r in results],
        total_chunks=sum(r["chunks"] for r in results),
    )

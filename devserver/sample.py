"""The sample knowledge base: the project's own README and docs/, ingested by `make dev`."""

from __future__ import annotations

from devserver.stack import ROOT
from rag_orchestrator.api.deps import process_aws
from rag_orchestrator.config import Settings
from rag_orchestrator.errors import ConfigError
from rag_orchestrator.retrieval.ingestion import ingest_documents
from rag_orchestrator.retrieval.knowledge_base import create_knowledge_base


def sample_documents() -> list[dict]:
    paths = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [
        {
            "documentId": str(p.relative_to(ROOT)),  # README.md, docs/README.md, …
            "title": p.stem.replace("-", " ").title(),
            "text": p.read_text(),
            "source": "project-docs",
            "tags": ["docs"],
        }
        for p in paths
        if p.exists() and p.read_text().strip()
    ]


def ingest_sample_knowledge_base(settings: Settings) -> str:
    documents = sample_documents()
    try:
        result = ingest_documents(documents, create_knowledge_base(settings, process_aws()))
    except ConfigError as exc:  # a local store filled by an earlier embedder (hashing-v1, say)
        raise ConfigError(f"{exc} (the local store is .local/chroma: `make clean` empties it)") from None
    return f"{len(documents)} documents, {sum(r['chunks'] for r in result)} chunks"

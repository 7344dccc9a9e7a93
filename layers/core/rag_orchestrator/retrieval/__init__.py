"""Retrieval: embedders, the Chroma vector store, chunking, ingestion and search.

This package imports nothing. chromadb stays off start-up and off searches: `vector_store` imports it only
for writes (ingestion, conversation memory's upserts and deletes); searches speak Chroma's REST API
themselves (`chroma_http`).

Public surface (import from the modules):
`search.search` / `search.search_sync`, `ingestion.ingest_documents` / `ingestion.aingest_documents`,
`embedders.get_embedder`, `vector_store.get_vector_store`, `fragments.get_fragment_index` (conversation
memory), `models.Passage`, `models.Document`,
`s3_ingest.ingest_s3_event` (sanitising lives in `rag_orchestrator.sanitize`, below every package).
"""

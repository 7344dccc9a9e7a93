"""Retrieval: embedders, the Chroma vector store, chunking, ingestion and search.

Public surface (import from the modules; this package imports nothing, so chromadb stays off start-up):
`search.search` / `search.search_sync`, `ingestion.ingest_documents` / `ingestion.aingest_documents`,
`embedders.get_embedder`, `vector_store.get_vector_store`, `models.Passage`, `models.Document`,
`sanitize.sanitize_metadata` / `sanitize.sanitize_for_prompt`, `s3_ingest.ingest_s3_event`.
"""

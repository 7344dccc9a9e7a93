"""Retrieval: embedders, the Chroma vector store, chunking, ingestion, hybrid search and reranking.

This package imports nothing. chromadb stays off start-up and off searches: `vector_store` imports it only
for writes (ingestion, conversation memory's upserts and deletes); searches speak Chroma's REST API
themselves (`chroma_http`).

Its parts are built once by a composition root (api/deps.py for the apps, each function's app.py for
the others) through the factories: `embedders.create_embedder`, `knowledge_base.create_knowledge_base`,
`fragments.create_fragment_index` (conversation memory), `search.create_retriever` (with
`rerankers.create_reranker`). Then: `search.Retriever.search`, `ingestion.ingest_documents`,
`answers.Answerer`, `followup.FollowUps`, `s3_ingest.ingest_s3_event` (sanitising lives in
`rag_orchestrator.sanitize`, below every package).
"""

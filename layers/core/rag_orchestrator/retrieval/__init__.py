"""Retrieval: embedders, the Chroma vector store, chunking, ingestion, hybrid search and reranking.

This package imports nothing. No chromadb anywhere: searches and writes speak Chroma's REST API themselves
(`chroma_http`, `chroma_writes`; chromadb costs 0.7 s of CPU to import).

Its parts are built once by a composition root (api/deps.py for the apps, each function's app.py for
the others) through the factories: `embedders.create_embedder`, `knowledge_base.create_knowledge_base`,
`fragments.create_fragment_index` (conversation memory), `search.create_retriever` (with
`rerankers.create_reranker`). Then: `search.Retriever.search`, `ingestion.ingest_documents`,
`answers.Answerer`, `followup.FollowUps`, `s3_ingest.ingest_s3_event` (sanitising lives in
`rag_orchestrator.sanitize`, below every package).
"""

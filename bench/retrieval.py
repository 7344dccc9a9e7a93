"""Retrieval: what hybrid search and the local reranker add to a search, on a 2,000-chunk collection.

A Chroma server of its own (data under .local/bench/retrieval), one collection of 2,000 chunks of 800
characters: the chunks of eval/corpus/, of README.md and docs/, and of CPython's language reference topics
(`pydoc_data.topics`), then the first of them again under other ids up to 2,000; the hashing embedder.
Every question of eval/ is searched (topK 5) warm, in turn by meaning alone (`dense`, no reranker), by
both (`hybrid`, no reranker) and by both reranked (`hybrid`, `local`), in alternation question by
question; the added latencies are the paired differences. Then the local reranker alone on the twenty
fused candidates of each question.
"""

from __future__ import annotations

import asyncio
import shutil
import time

from bench.chroma_client import add_costs
from bench.report import ROOT, Section

CHUNKS = 2000
GOAL_MS = 15.0


def chunk_documents() -> list[dict]:
    from pydoc_data.topics import topics

    from devserver.sample import sample_documents
    from eval.questions import corpus_documents
    from rag_orchestrator.retrieval.chunking import split_text

    texts = [(d["title"], d["text"]) for d in [*corpus_documents(), *sample_documents()]]
    texts += [(name, text) for name, text in sorted(topics.items())]
    chunks = [(title, piece) for title, text in texts for piece in split_text(text, 800, 120)]
    chunks = (chunks * (CHUNKS // len(chunks) + 1))[:CHUNKS]
    return [
        {"documentId": f"chunk-{i}", "title": title, "text": text} for i, (title, text) in enumerate(chunks)
    ]


def questions() -> list[str]:
    from eval.questions import question_sets

    asked = []
    for questions in question_sets():
        asked += [q.question for q in questions.singles]
        asked += [q.question for conversation in questions.conversations for q in conversation]
    return asked


def run(quick: bool = False) -> Section:
    from devserver.stack import free_port, start_chroma
    from rag_orchestrator.config import load_settings
    from rag_orchestrator.retrieval.ingestion import ingest_documents
    from rag_orchestrator.retrieval.knowledge_base import create_knowledge_base
    from rag_orchestrator.retrieval.local_reranker import rerank
    from rag_orchestrator.retrieval.search import SearchQuery, create_retriever

    section = Section("retrieval", packages=["chromadb", "httpx"])
    local = ROOT / ".local" / "bench" / "retrieval"
    shutil.rmtree(local, ignore_errors=True)
    chroma = start_chroma(f"http://127.0.0.1:{free_port()}", local / "chroma", local / "chroma.log")
    try:
        settings = load_settings(
            chroma_url=chroma.url, chroma_collection="bench-retrieval", conversation_storage="memory"
        )
        knowledge = create_knowledge_base(settings, None)
        started = time.perf_counter()
        documents = chunk_documents()
        for first in range(0, len(documents), 100):  # ingestion takes at most 100 documents a call
            ingest_documents(documents[first : first + 100], knowledge)
        section.details["collection"] = (
            f"{knowledge.store.count()} chunks, ingested in {time.perf_counter() - started:.0f} s"
        )
        configs = {
            "dense": ("dense", "none"),
            "hybrid": ("hybrid", "none"),
            "hybrid + local": ("hybrid", "local"),
        }
        retrievers = {
            name: create_retriever(
                settings.model_copy(update={"retrieval_mode": mode, "reranker": reranker}), knowledge, None
            )
            for name, (mode, reranker) in configs.items()
        }
        asked = questions()[: 30 if quick else None]
        times: dict[str, list[float]] = {name: [] for name in configs}

        built: list[float] = []

        async def measure() -> None:
            for retriever in retrievers.values():  # warm: the term index, connections, imports
                begun = time.perf_counter()
                await asyncio.to_thread(retriever.lexical.sync)  # what a first search starts beside it
                built.append((time.perf_counter() - begun) * 1000)
                await retriever.search(SearchQuery(asked[0], 5, 0.1))
            for _ in range(1 if quick else 3):
                for question in asked:
                    for name, retriever in retrievers.items():
                        begun = time.perf_counter()
                        await retriever.search(SearchQuery(question, 5, 0.1))
                        times[name].append((time.perf_counter() - begun) * 1000)

        asyncio.run(measure())
        section.add("term index built from Chroma (2,000 chunks, once a process)", "ms", built)
        for name, samples in times.items():
            section.add(f"search, {name} (2,000 chunks, warm)", "ms", samples)
        added = section.add(
            "added by hybrid over dense, per query (paired)",
            "ms",
            [h - d for h, d in zip(times["hybrid"], times["dense"], strict=True)],
        )
        added.goal, added.met = f"<= {GOAL_MS:g} ms median", added.median <= GOAL_MS
        reranked = section.add(
            "added by the local reranker, per query (paired)",
            "ms",
            [r - h for r, h in zip(times["hybrid + local"], times["hybrid"], strict=True)],
        )
        reranked.goal, reranked.met = f"<= {GOAL_MS:g} ms median", reranked.median <= GOAL_MS
        fused = asyncio.run(_candidates(retrievers["hybrid"], asked))
        alone = []
        for question, candidates in fused:
            begun = time.perf_counter()
            rerank(question, candidates)
            alone.append((time.perf_counter() - begun) * 1000)
        section.add("local reranker alone, 20 candidates, in process", "ms", alone)
        add_costs(section, settings, knowledge, asked)
    finally:
        chroma.stop()
    return section


async def _candidates(retriever, asked: list[str]) -> list[tuple[str, list]]:
    from rag_orchestrator.retrieval.search import SearchQuery

    return [(q, await retriever.search(SearchQuery(q, 20, 0.1))) for q in asked]

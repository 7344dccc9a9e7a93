"""What a Chroma request costs the client, in the `retrieval` section: a knowledge-base query's CPU on
the pooled http.client connections (http_pool.py) and through httpx, alternating on the same
server, collection and questions; and a query vector's JSON text as float32 (retrieval/chroma_query.py)
and as Python's floats."""

from __future__ import annotations

import json
import random
from typing import Any

from bench.alternation import in_process
from bench.report import Section


def add_costs(section: Section, settings: Any, knowledge: Any, asked: list[str]) -> None:
    import httpx

    from rag_orchestrator.retrieval.chroma_http import ChromaClient
    from rag_orchestrator.retrieval.chroma_query import Embedding, float32_text

    clients = {
        "pooled http.client": ChromaClient(
            settings.chroma_url, tenant=settings.chroma_tenant, database=settings.chroma_database, token=None
        ),
        "httpx (as before)": ChromaClient(
            settings.chroma_url,
            tenant=settings.chroma_tenant,
            database=settings.chroma_database,
            token=None,
            transport=httpx.HTTPTransport(),
        ),
    }
    collection = clients["pooled http.client"].get_collection(settings.chroma_collection)
    vectors = [Embedding(knowledge.embedder.embed(question)) for question in asked]
    for vector in vectors:
        vector.json_text()  # encoded once a search: not what these rows measure
    ours, before = (
        lambda n, client=client: client.query(collection.id, vectors[n % len(vectors)], 20, None)
        for client in clients.values()
    )
    in_process(
        section,
        (
            "Chroma query's client CPU (20 rows), pooled http.client",
            "Chroma query's client CPU, the same through httpx (as before)",
        ),
        (ours, before),
        runs=len(vectors),
        warmup=3,  # connections open, code warm
    )
    for client in clients.values():
        client.close()

    rng = random.Random(5)
    shapes = {
        "the hashing embedder's": list(vectors[0]),  # mostly zeros
        "a model embedder's (dense)": [rng.gauss(0.0, 0.03) for _ in vectors[0]],
    }
    for shape, values in shapes.items():
        zeros = sum(v == 0 for v in values) / len(values)
        label = f"query vector's text, {shape} {len(values)} values ({zeros:.0%} zero)"
        in_process(
            section,
            (f"{label}, as float32 (9 digits)", f"{label}, as Python's floats (as before)"),
            (lambda _, values=values: float32_text(values), lambda _, values=values: json.dumps(values)),
            runs=200,
            warmup=0,
        )

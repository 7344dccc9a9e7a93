"""What a Chroma request costs the client, in the `retrieval` section: a knowledge-base query's CPU on
the pooled http.client connections (http_pool.py) and through httpx, alternating on the same
server, collection and questions; and a query vector's JSON text as float32 (retrieval/chroma_query.py)
and as Python's floats."""

from __future__ import annotations

import json
import random
import time
from typing import Any

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
    cpu: dict[str, list[float]] = {name: [] for name in clients}
    for vector in vectors[:3]:  # connections open, code warm
        for client in clients.values():
            client.query(collection.id, vector, 20, None)
    for vector in vectors:
        for name, client in clients.items():
            begun = time.thread_time()
            client.query(collection.id, vector, 20, None)
            cpu[name].append((time.thread_time() - begun) * 1000)
    for client in clients.values():
        client.close()
    ours = section.add(
        "Chroma query's client CPU (20 rows), pooled http.client", "ms", cpu["pooled http.client"]
    )
    before = section.add(
        "Chroma query's client CPU, the same through httpx (as before)", "ms", cpu["httpx (as before)"]
    )
    before.note = f"{before.median / ours.median:.1f}x ours" if ours.median else ""

    rng = random.Random(5)
    shapes = {
        "the hashing embedder's": list(vectors[0]),  # mostly zeros
        "a model embedder's (dense)": [rng.gauss(0.0, 0.03) for _ in vectors[0]],
    }
    for shape, values in shapes.items():
        texts: dict[str, list[float]] = {"float32": [], "json": []}
        for _ in range(200):
            begun = time.thread_time()
            float32_text(values)
            texts["float32"].append((time.thread_time() - begun) * 1000)
            begun = time.thread_time()
            json.dumps(values)
            texts["json"].append((time.thread_time() - begun) * 1000)
        zeros = sum(v == 0 for v in values) / len(values)
        label = f"query vector's text, {shape} {len(values)} values ({zeros:.0%} zero)"
        section.add(f"{label}, as float32 (9 digits)", "ms", texts["float32"])
        section.add(f"{label}, as Python's floats (as before)", "ms", texts["json"])

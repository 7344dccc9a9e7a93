"""A query's body with the vector's JSON encoded once: the same bytes and headers httpx sends for `json=`."""

from __future__ import annotations

import math
import random

import httpx
import pytest

from rag_orchestrator.retrieval import chroma_query
from rag_orchestrator.retrieval.chroma_query import INCLUDE, Embedding, query_content

URL = "http://chroma.test/api/v2/tenants/t/databases/d/collections/c-1/query"


def query_body(embedding: list[float], n_results: int, where: dict | None) -> dict:
    """The query body as chromadb-client 1.5.9 builds it."""
    return {
        "ids": None,
        "query_embeddings": [[float(v) for v in embedding]],
        "n_results": n_results,
        "where": where,
        "where_document": None,
        "include": INCLUDE,
    }


WHERES = [
    None,
    {"callerId": "u-1"},
    {"$and": [{"callerId": 'ü-ß/"quoted"\\'}, {"kind": {"$in": ["said", "answered"]}}]},
    {"$and": [{"source": {"$in": ["image", "audio"]}}, {"conversationId": {"$ne": "c-😀"}}]},
    {"tags": {"$contains": "ops\u2028line"}},
]


def vectors() -> list[list[float]]:
    rng = random.Random(7)
    return [
        [0.5, 0.5, 0.5, 0.5],
        [1, 0, -2, 3],  # ints, as a hand-made vector may hold
        [rng.gauss(0, 1) for _ in range(1024)],
        [rng.uniform(-1e-300, 1e-300) for _ in range(64)] + [1e308, -0.0, 5e-324],
        [],
    ]


@pytest.mark.parametrize("where", WHERES)
@pytest.mark.parametrize("vector", vectors(), ids=lambda v: f"{len(v)} values")
def test_the_body_is_the_bytes_httpx_writes_for_the_same_json(vector, where):
    expected = httpx.Request("POST", URL, json=query_body(vector, 7, where))
    for embedding in (vector, Embedding(vector)):
        content = query_content(embedding, 7, where)
        sent = httpx.Request("POST", URL, content=content, headers={"Content-Type": "application/json"})
        assert content == expected.content
        assert sent.headers["Content-Length"] == expected.headers["Content-Length"]
        assert sent.headers["Content-Type"] == expected.headers["Content-Type"]


def test_an_embedding_encodes_its_values_once_for_every_request(monkeypatch):
    embedding = Embedding([0.25, -1.5, 3.0])
    first = query_content(embedding, 2, {"callerId": "a"})
    encoded: list[object] = []

    class Counting:
        def encode(self, value: object) -> str:
            encoded.append(value)
            return real.encode(value)

    real = chroma_query.JSON
    monkeypatch.setattr(chroma_query, "JSON", Counting())
    second = query_content(embedding, 5, {"callerId": "b"})
    assert [type(o) for o in encoded] == [dict]  # the rest of the body only, not the vector again
    assert first.split(b'"n_results"')[0] == second.split(b'"n_results"')[0]
    assert embedding == [0.25, -1.5, 3.0] and isinstance(embedding, list)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_value_json_cannot_hold_is_refused_as_httpx_refuses_it(bad):
    with pytest.raises(ValueError):
        httpx.Request("POST", URL, json=query_body([0.1, bad], 1, None))
    with pytest.raises(ValueError):
        query_content(Embedding([0.1, bad]), 1, None)

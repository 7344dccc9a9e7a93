"""A query's body with the vector's JSON encoded once: the bytes and headers httpx sends for `json=`, but
for the vector, written as the float32 values Chroma reads it as."""

from __future__ import annotations

import json
import math
import random
import struct
from array import array

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
        [rng.uniform(-1e-300, 1e-300) for _ in range(64)] + [3.4e38, -3.4e38, -0.0, 5e-324, 1e-40],
        [],
    ]


def float32(vector: list[float]) -> list[float]:
    """Each value as Chroma reads it: the nearest float32 (round half to even, as struct packs it)."""
    return [struct.unpack("<f", struct.pack("<f", v))[0] for v in vector]


@pytest.mark.parametrize("where", WHERES)
@pytest.mark.parametrize("vector", vectors(), ids=lambda v: f"{len(v)} values")
def test_the_body_is_httpxs_for_the_same_json_with_each_value_as_float32(vector, where):
    rounded = float32(vector)
    expected = httpx.Request("POST", URL, json=query_body(rounded, 7, where))
    for embedding in (vector, Embedding(vector)):
        content = query_content(embedding, 7, where)
        sent = httpx.Request("POST", URL, content=content, headers={"Content-Type": "application/json"})
        body, reference = json.loads(content), json.loads(expected.content)
        vector_read, reference_read = body.pop("query_embeddings")[0], reference.pop("query_embeddings")[0]
        assert array("f", vector_read) == array("f", reference_read)  # every value the same float32
        assert body == reference and list(body) == list(reference)
        head, _, rest = content.partition(b"]]")
        assert head.startswith(b'{"ids":null,"query_embeddings":[[')
        assert rest == expected.content.partition(b"]]")[2]  # the rest byte for byte
        assert sent.headers["Content-Type"] == expected.headers["Content-Type"]
        assert int(sent.headers["Content-Length"]) <= int(expected.headers["Content-Length"])


def test_a_vectors_text_is_shorter_than_pythons_floats():
    vector = vectors()[2]
    assert len(Embedding(vector).json_text()) < 0.7 * len(json.dumps(vector))


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


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 1e39, -1e300])
def test_a_value_json_or_float32_cannot_hold_is_refused(bad):
    if not math.isfinite(bad):
        with pytest.raises(ValueError):
            httpx.Request("POST", URL, json=query_body([0.1, bad], 1, None))
    with pytest.raises(ValueError):
        query_content(Embedding([0.1, bad]), 1, None)

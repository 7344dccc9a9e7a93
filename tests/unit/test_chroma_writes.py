"""The write requests' bodies, as chromadb-client 1.5.9 sends them (its own packing is the reference)."""

from __future__ import annotations

import base64
import struct

import pytest

from rag_orchestrator.retrieval.chroma_writes import create_body, delete_body, pack, upsert_body


def test_create_body_gets_or_creates_in_the_cosine_space_with_the_embedders_name():
    assert create_body("memory", {"embedder": "hashing-v2/256"}) == {
        "name": "memory",
        "metadata": {"embedder": "hashing-v2/256"},
        "configuration": {
            "hnsw": {"space": "cosine"},
            "spann": None,
            "embedding_function": {"type": "legacy"},
        },
        "schema": None,
        "get_or_create": True,
    }
    assert create_body("kb", None)["metadata"] is None
    assert create_body("kb", {})["metadata"] is None


def test_an_embedding_is_little_endian_float32_in_base64():
    # What chromadb-client sent for these vectors (captured against chroma 1.5.9).
    assert pack([0.1, 0.2, 0.3]) == "zczMPc3MTD6amZk+"
    assert pack([0.4, -0.5, 0.0]) == "zczMPgAAAL8AAAAA"
    values = [1.0, -2.5, 3.25e-3, 0.0]
    assert struct.unpack("<4f", base64.b64decode(pack(values))) == pytest.approx(values)


def test_an_embedding_beyond_float32_is_refused_before_sending():
    with pytest.raises(ValueError, match="float32"):
        pack([1e39, 0.0])


def test_upsert_body_keeps_the_columns_in_order():
    body = upsert_body(
        ["a#0", "b#0"], [[0.1, 0.2, 0.3], [0.4, -0.5, 0.0]], ["x", "y"], [{"k": 1, "tags": ["t"]}, {}]
    )
    assert body == {
        "ids": ["a#0", "b#0"],
        "embeddings": ["zczMPc3MTD6amZk+", "zczMPgAAAL8AAAAA"],
        "metadatas": [{"k": 1, "tags": ["t"]}, {}],
        "documents": ["x", "y"],
        "uris": None,
    }


def test_upsert_body_refuses_columns_of_different_lengths():
    with pytest.raises(ValueError, match="differ in length"):
        upsert_body(["a"], [[0.1], [0.2]], ["x"], [{}])


def test_delete_body_by_ids_or_by_filter():
    assert delete_body(ids=("a", "b")) == {"ids": ["a", "b"], "where": None, "where_document": None}
    assert delete_body(where={"documentId": "d"}) == {
        "ids": None,
        "where": {"documentId": "d"},
        "where_document": None,
    }

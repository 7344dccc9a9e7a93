"""The bodies of Chroma's v2 write requests, byte for byte as chromadb-client 1.5.9 sends them.

Embeddings travel as chromadb-client packs them once the server's pre-flight check allows it (Chroma 1.x
servers do): each vector little-endian float32, base64-encoded.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Mapping, Sequence
from typing import Any

# chromadb-client's configuration for `configuration={"hnsw": {"space": "cosine"}}` and no embedding function.
COSINE = {"hnsw": {"space": "cosine"}, "spann": None, "embedding_function": {"type": "legacy"}}


def create_body(name: str, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """`POST .../collections`: get the collection by name, or create it in the cosine space with `metadata`."""
    return {
        "name": name,
        "metadata": dict(metadata) if metadata else None,
        "configuration": COSINE,
        "schema": None,
        "get_or_create": True,
    }


def pack(embedding: Sequence[float]) -> str:
    """One embedding as chromadb-client sends it: little-endian float32, base64."""
    try:
        packed = struct.pack(f"<{len(embedding)}f", *embedding)
    except (OverflowError, struct.error) as exc:
        raise ValueError(f"an embedding does not fit float32: {exc}") from None
    return base64.b64encode(packed).decode("ascii")


def upsert_body(
    ids: Sequence[str],
    embeddings: Sequence[Sequence[float]],
    documents: Sequence[str],
    metadatas: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """`POST .../collections/{id}/upsert`: one entry per id, the columns in the same order."""
    if not len(ids) == len(embeddings) == len(documents) == len(metadatas):
        raise ValueError("ids, embeddings, documents and metadatas differ in length")
    return {
        "ids": list(ids),
        "embeddings": [pack(e) for e in embeddings],
        "metadatas": [dict(m) for m in metadatas],
        "documents": list(documents),
        "uris": None,
    }


def delete_body(ids: Sequence[str] | None = None, where: dict[str, Any] | None = None) -> dict[str, Any]:
    """`POST .../collections/{id}/delete`: these ids, or what matches `where` (both: ids that match)."""
    return {"ids": list(ids) if ids is not None else None, "where": where, "where_document": None}

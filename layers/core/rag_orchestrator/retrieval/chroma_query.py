"""The body of Chroma's v2 query request, with the query vector's JSON encoded once per search.

A search sends one vector up to three times (the knowledge base, the caller's attachment segments, its
turns from other conversations), and encoding 1,024 floats as JSON is most of a request's client CPU
(~1 ms on a slow core). An `Embedding` is a query vector that keeps its JSON text: each request splices
it into its body, which is byte for byte what httpx writes for the same body given as `json=`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

INCLUDE = ["documents", "metadatas", "distances"]

# httpx's own encoding of a `json=` body (httpx/_content.py, encode_json), made once.
JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class Embedding(list[float]):
    """A query vector (a list of floats) whose JSON text is kept once first asked for. Never changed
    after it is made: it is shared by every request of a search."""

    __slots__ = ("_json",)

    def __init__(self, values: Iterable[float] = ()) -> None:
        super().__init__(float(v) for v in values)
        self._json: str | None = None

    def json_text(self) -> str:
        if self._json is None:
            self._json = JSON.encode(self)  # a list to the encoder: no copy
        return self._json


def query_content(embedding: Sequence[float], n_results: int, where: dict[str, Any] | None) -> bytes:
    """The body of `POST .../collections/{id}/query` for one embedding, as chromadb-client builds it
    (`ids`, `query_embeddings`, `n_results`, `where`, `where_document`, `include`), as the bytes httpx
    sends for it, reusing an `Embedding`'s JSON text."""
    vector = embedding.json_text() if isinstance(embedding, Embedding) else Embedding(embedding).json_text()
    rest = JSON.encode({"n_results": n_results, "where": where, "where_document": None, "include": INCLUDE})
    return f'{{"ids":null,"query_embeddings":[{vector}],{rest[1:]}'.encode()

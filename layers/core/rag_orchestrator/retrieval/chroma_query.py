"""The body of Chroma's v2 query request, with the query vector's JSON encoded once per search.

A search sends one vector up to three times (the knowledge base, the caller's attachment segments, its
turns from other conversations). An `Embedding` is a query vector that keeps its JSON text: each
request splices it into its body, otherwise the bytes httpx writes for the same body given as `json=`.

Chroma reads a query vector as float32, as it stores vectors. So each value is written as the float32
Chroma would make of it, in 9 significant digits (enough to read back that float32 exactly): Chroma
computes the same distances, finds the same rows, and the text is ~40 % shorter; for a model embedder's
dense vector it is made in a third of the CPU of Python's 17-digit float text (1,024 values: ~0.33 ms
against ~1.0 ms on a slow core; the hashing embedder's, mostly zeros, costs about the same either way).
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable, Sequence
from functools import lru_cache
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
            self._json = float32_text(self)
        return self._json


def float32_text(values: Sequence[float]) -> str:
    """`values` as a JSON array of the float32 numbers Chroma reads them as. ValueError for NaN, an
    infinity or a value beyond float32's range, as httpx refuses what JSON cannot hold."""
    text = _formats(len(values)) % tuple(array("f", values))
    if "n" in text:  # "nan" or "inf": nothing else written has an "n"
        raise ValueError("Out of range float values are not JSON compliant (or beyond float32)")
    return text


@lru_cache(maxsize=8)
def _formats(count: int) -> str:
    return "[" + ",".join(["%.9g"] * count) + "]"


def query_content(embedding: Sequence[float], n_results: int, where: dict[str, Any] | None) -> bytes:
    """The body of `POST .../collections/{id}/query` for one embedding, as chromadb-client builds it
    (`ids`, `query_embeddings`, `n_results`, `where`, `where_document`, `include`), as the bytes httpx
    sends for it but for the vector's float32 text, an `Embedding`'s kept one."""
    vector = embedding.json_text() if isinstance(embedding, Embedding) else float32_text(embedding)
    rest = JSON.encode({"n_results": n_results, "where": where, "where_document": None, "include": INCLUDE})
    return f'{{"ids":null,"query_embeddings":[{vector}],{rest[1:]}'.encode()

"""Reciprocal rank fusion: several rankings of passages made into one, by rank alone.

Each ranking gives a passage 1 / (k + rank); a passage's fused value is the sum over the rankings that
hold it. Ranks, not scores, are added, so a cosine similarity and a BM25 score never need a common
scale; k = 60 is the constant of Cormack, Clarke and Büttcher (SIGIR 2009), which damps the weight of
the very first ranks.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag_orchestrator.domain.passages import Key, Passage

K = 60


def fuse(rankings: Sequence[Sequence[Passage]], k: int = K) -> list[Passage]:
    """The passages of all rankings, best fused first; a passage in several keeps its highest score."""
    value: dict[Key, float] = {}
    best: dict[Key, Passage] = {}
    for ranking in rankings:
        for rank, passage in enumerate(ranking, start=1):
            value[passage.key] = value.get(passage.key, 0.0) + 1.0 / (k + rank)
            if passage.key not in best or passage.score > best[passage.key].score:
                best[passage.key] = passage
    return sorted(best.values(), key=lambda p: (-value[p.key], -p.score))

"""Retrieval quality of the hashing embedder on a corpus the tests carry, through a real Chroma server.

30 short passages on distinct topics, each with one question written for it that paraphrases rather
than copies. The right passage must be in the top 3 for at least 80% of the questions.
"""

from __future__ import annotations

import json
import statistics
import uuid
from pathlib import Path

import pytest

from rag_orchestrator.config import load_settings
from tests.integration.knowledge import ingest, search

pytestmark = pytest.mark.integration

CORPUS = Path(__file__).resolve().parent.parent / "data" / "retrieval_corpus.json"


def test_hashing_embedder_finds_the_right_passage_in_the_top_3(chroma_url, monkeypatch):
    monkeypatch.setenv("CHROMA_COLLECTION", f"quality-{uuid.uuid4().hex[:12]}")
    monkeypatch.setenv("EMBEDDING_PROVIDER", "hashing")
    settings = load_settings()
    passages = json.loads(CORPUS.read_text())["passages"]
    assert len(passages) == 30
    documents = [{"documentId": p["id"], "title": p["title"], "text": p["text"]} for p in passages]
    assert sum(r["chunks"] for r in ingest(documents, settings)) == 30

    ranks, right_scores, best_wrong_scores = [], [], []
    for passage in passages:
        found = search(passage["question"], top_k=30, threshold=-1.0, settings=settings)
        order = [p.document_id for p in found]
        ranks.append(order.index(passage["id"]))
        right_scores.append(found[ranks[-1]].score)
        best_wrong_scores.append(max(p.score for p in found if p.document_id != passage["id"]))

    top1 = sum(r == 0 for r in ranks) / len(ranks)
    top3 = sum(r < 3 for r in ranks) / len(ranks)
    print(
        f"\nhashing embedder, {len(ranks)} questions: top-1 {top1:.0%}, top-3 {top3:.0%}; "
        f"score of the right passage min {min(right_scores):.3f} median {statistics.median(right_scores):.3f} "
        f"max {max(right_scores):.3f}; best wrong passage median {statistics.median(best_wrong_scores):.3f} "
        f"max {max(best_wrong_scores):.3f}"
    )
    assert top3 >= 0.8

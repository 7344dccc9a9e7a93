"""The offline reranker (RERANKER=local, the default): each candidate passage scored by the sentence in it
that answers the question best, as the extractive answerer scores sentences (`providers/sentence_scoring.py`:
the question's words and their synonyms, the kind of fact it asks for), together with its fused rank.

A passage holding "€4.90" beside "sourdough loaf" rises above one that only repeats the question's words.
On `make eval` it puts the passage holding the fact first for 47 of 48 everyday questions where the fused
order did for 42 (docs/retrieval.md); sentence embeddings added nothing there, so it uses words alone: no
model, no network. A passage's sentences are read once (`ReadPassages`) and kept for the next question that
retrieves it: only the scoring is done per question (bench/README.md has the figures).
"""

from __future__ import annotations

from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.providers.passage_reading import ReadPassages
from rag_orchestrator.providers.sentence_picker import Passage as Quotable
from rag_orchestrator.providers.sentence_picker import passage_candidates
from rag_orchestrator.providers.sentence_rules import wants_steps
from rag_orchestrator.providers.sentence_scoring import EmbedBatch, read_question, score

DEPTH = 2  # it reads the first 2 x top_n fused candidates: below them the fact rarely is, and reading costs
FUSED_WEIGHT = 0.2  # the fused order still counts: a passage first there gets 0.2, the second 0.1…


class LocalReranker:
    name = "local"

    def __init__(self, embed: EmbedBatch | None = None, read: ReadPassages | None = None) -> None:
        self.embed = embed  # sentence embeddings as well as words (None: words, kinds and rank alone)
        self.read = read or ReadPassages()

    async def rerank(self, query: str, passages: list[Passage], top_n: int) -> list[Passage]:
        return rerank(query, passages[: DEPTH * top_n], self.embed, self.read)[:top_n]


def rerank(
    query: str, passages: list[Passage], embed: EmbedBatch | None = None, read: ReadPassages | None = None
) -> list[Passage]:
    """The passages by their best sentence's score for the query, best first (their sentences from `read`
    when given, else read now)."""
    if len(passages) <= 1:
        return list(passages)
    question = read_question(query, steps=wants_steps(query))
    quoted: set[str] = set()
    pools = [
        passage_candidates(
            Quotable(p.document_id, p.chunk_index, p.text, title=p.title),
            0,
            query,
            quoted,
            read.of(p.text, p.title) if read else None,
        )
        for p in passages
    ]
    flat = [c for pool in pools for c in pool]
    values = iter(s.value for s in score(question, flat, embed))
    best = [max((next(values) for _ in pool), default=0.0) for pool in pools]
    order = sorted(range(len(passages)), key=lambda i: -(best[i] + FUSED_WEIGHT / (1 + i)))
    return [passages[i] for i in order]

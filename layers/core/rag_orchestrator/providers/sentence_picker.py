"""The sentences of retrieved passages that answer a question, merged into a short answer with citations.

Pure and deterministic. Every sentence of every passage is a candidate unless a rule of `sentence_rules`
skips it (headings, table rows, code, lines of links, lead-ins ending with a colon, sentences that only
repeat the question, sentences the chunking cut). Candidates are scored by the question's words they
share, each weighted by how rare it is among the candidates, together with the cosine similarity of
their embeddings when an embedding function is given, a little for the rank of their passage, and a
little for holding a number when the question asks for one, or a command when it asks how to do
something. The best sentence is quoted with the
sentences beside it in its paragraph that score well too or that it refers back to; a second passage
is quoted when it scores nearly as well.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from rag_orchestrator.providers.sentence_rules import (
    context_of,
    example_after,
    is_cut_off,
    refers_back,
    skip_reason,
    wants_number,
    wants_steps,
)
from rag_orchestrator.text.sentences import Segment, segments
from rag_orchestrator.text.words import content_words, normalize

EmbedBatch = Callable[[list[str]], Sequence[Sequence[float]]]

NOTHING_FOUND = "I could not find anything about that in the knowledge base."
MAX_SENTENCE_CHARS = 400
MAX_QUOTE_CHARS = 500
MAX_QUOTES = 2
MIN_SCORE = 0.2  # below it no sentence answers: the answer says so
NEIGHBOUR_RATIO = 0.8  # a neighbour joins the quote when it scores this share of the best sentence
FOLLOWER_RATIO = 0.3  # a next sentence that refers back ("This means…") joins from this share
SECOND_QUOTE_RATIO = 0.85
LEXICAL_WEIGHT, EMBEDDING_WEIGHT, RANK_WEIGHT, ANSWER_TYPE_BONUS = 0.5, 0.5, 0.1, 0.1


@dataclass(frozen=True, slots=True)
class Passage:
    document_id: str
    chunk_index: int
    text: str
    whole: bool = (
        False  # a whole text (an attachment's segment: a transcript has no punctuation), not a chunk
    )
    label: str = ""  # what introduces a quote of it ("You said on 2026-11-20: ")

    @property
    def citation(self) -> str:
        return f"[source:{self.document_id}#{self.chunk_index}]"


@dataclass(frozen=True, slots=True)
class Candidate:
    passage: Passage
    rank: int  # of its passage among the retrieved ones
    position: int  # among its passage's segments
    segment: Segment
    body: str  # the sentence, and the command it introduces if any
    context: str | None  # what it is read with: its list's lead-in, or the name its paragraph describes
    words: frozenset[str]

    @property
    def text(self) -> str:
        return f"{self.context} {self.body}" if self.context else self.body


def candidates(question: str, passages: Iterable[Passage]) -> list[Candidate]:
    """The sentences that may answer, passage by passage in rank order (a passage seen twice counts once)."""
    found = []
    seen: set[tuple[str, int]] = set()
    quoted: set[str] = set()  # overlapping chunks repeat sentences: the better-ranked passage keeps them
    for rank, passage in enumerate(passages):
        if (passage.document_id, passage.chunk_index) in seen:
            continue
        seen.add((passage.document_id, passage.chunk_index))
        parts = segments(passage.text)
        for position, segment in enumerate(parts):
            key = " ".join(normalize(segment.text).split())
            example = example_after(segment, parts[position + 1] if position + 1 < len(parts) else None)
            cut = not passage.whole and is_cut_off(
                segment, passage.text, position == 0, position == len(parts) - 1
            )
            if key in quoted or cut or skip_reason(segment, question, example):
                continue
            quoted.add(key)
            body = f"{segment.text} {example}" if example else segment.text
            context = context_of(parts, position)
            words = frozenset(content_words(f"{context or ''} {body}"))
            found.append(Candidate(passage, rank, position, segment, body, context, words))
    return found


def lexical_scores(question: str, pool: list[Candidate]) -> list[float]:
    """The share of the question's words (weighted by rarity among the candidates) each candidate has."""
    asked = set(content_words(question))
    if not asked or not pool:
        return [0.0] * len(pool)
    frequency = Counter(word for c in pool for word in c.words & asked)
    # A word no candidate has counts for less than a rare one that some have: it tells nothing apart.
    weight = {
        word: math.log((len(pool) + 1) / (frequency[word] + 0.5)) if frequency[word] else 1.0
        for word in asked
    }
    total = sum(weight.values())
    return [sum(weight[w] for w in c.words & asked) / total if total > 0 else 0.0 for c in pool]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def score(question: str, pool: list[Candidate], embed: EmbedBatch | None = None) -> list[float]:
    """Lexical and embedding similarity together, plus a little for the passage's rank."""
    lexical = lexical_scores(question, pool)
    similar = [0.0] * len(pool)
    if embed is not None and pool:
        vectors = embed([question, *(c.text for c in pool)])
        similar = [max(cosine(vectors[0], v), 0.0) for v in vectors[1:]]
    numeric, steps = wants_number(question), wants_steps(question)
    scores = []
    for c, lex, sim in zip(pool, lexical, similar, strict=True):
        value = LEXICAL_WEIGHT * lex + EMBEDDING_WEIGHT * sim + RANK_WEIGHT / (1 + c.rank)
        holds_command = c.segment.kind == "command" or c.body != c.segment.text  # or introduces one
        if (numeric and any(ch.isdigit() for ch in c.segment.text)) or (steps and holds_command):
            value += ANSWER_TYPE_BONUS
        if len(c.words) < 3:
            value *= 0.8  # fragments ("Ctrl-C.") rarely answer alone
        if c.text.rstrip("*_ ").endswith(":"):
            value *= 0.85  # it introduces an example more often than it answers
        scores.append(value if lex > 0 or sim > 0.3 else 0.0)
    return scores


def _clip(text: str) -> str:
    return text if len(text) <= MAX_SENTENCE_CHARS else text[: MAX_SENTENCE_CHARS - 1].rstrip() + "…"


def quote(best: Candidate, pool: list[Candidate], scores: dict[int, float]) -> list[Candidate]:
    """The best sentence with its neighbours of the same paragraph that score well too, or that it
    refers back to ("This means…"), or that refer back to it; in their order."""
    same = {
        c.position: c for c in pool if c.passage is best.passage and c.segment.block == best.segment.block
    }
    chosen = [best]

    def joins(neighbour: Candidate, linked: bool) -> bool:
        return (linked or scores[id(neighbour)] >= NEIGHBOUR_RATIO * scores[id(best)]) and sum(
            len(c.text) for c in chosen
        ) + len(neighbour.text) <= MAX_QUOTE_CHARS

    before, after = same.get(best.position - 1), same.get(best.position + 1)
    if before is not None and joins(before, refers_back(best.segment)):
        chosen.insert(0, before)
    if after is not None and joins(
        after, refers_back(after.segment) and scores[id(after)] >= FOLLOWER_RATIO * scores[id(best)]
    ):
        chosen.append(after)
    return chosen


def join(chosen: list[Candidate]) -> str:
    """The quoted sentences in order, a context they share said once."""
    parts = [
        _clip(c.text if i == 0 or c.context != chosen[i - 1].context else c.body)
        for i, c in enumerate(chosen)
    ]
    return " ".join(parts)


def pick(
    question: str, passages: Iterable[Passage], embed: EmbedBatch | None = None
) -> list[tuple[Passage, str]]:
    """The quotes that answer, best first: (passage, its sentences joined); none when nothing answers."""
    pool = candidates(question, passages)
    scores = {id(c): v for c, v in zip(pool, score(question, pool, embed), strict=True)}
    ranked = sorted(pool, key=lambda c: (-scores[id(c)], c.rank, c.position))
    if not ranked or scores[id(ranked[0])] < MIN_SCORE:
        return []
    top = scores[id(ranked[0])]
    quotes: list[tuple[Passage, str]] = []
    said: list[frozenset[str]] = []  # overlapping chunks repeat a sentence, sometimes with a word more
    for best in ranked:
        if len(quotes) == MAX_QUOTES or scores[id(best)] < SECOND_QUOTE_RATIO * top:
            break
        if any(p is best.passage for p, _ in quotes) or any(best.words <= w or w <= best.words for w in said):
            continue
        chosen = quote(best, pool, scores)
        said.extend(c.words for c in chosen)
        quotes.append((best.passage, join(chosen)))
    return quotes


def compose_answer(question: str, passages: Iterable[Passage], embed: EmbedBatch | None = None) -> str:
    """The quotes that answer, each followed by its `[source:documentId#chunkIndex]`; else NOTHING_FOUND."""
    quotes = pick(question, passages, embed)
    if not quotes:
        return NOTHING_FOUND
    return "\n\n".join(f"{passage.label}{text} {passage.citation}" for passage, text in quotes)

"""The sentences of retrieved passages that answer a question, quoted with their citations.

Pure and deterministic. Every sentence of every passage is a candidate unless a rule of `sentence_rules`
skips it (headings, code, lines of links, lead-ins ending with a colon, sentences that only repeat the
question, sentences the chunking cut); a table's rows are candidates too, each written out with its
header (`text/tables.py`). Candidates are scored by `sentence_scoring`. The best one leads the answer,
followed by the next sentence of its paragraph when that scores well too or refers back to it; a second
passage is quoted when it answers nearly as well. When no candidate is about what was asked (coverage
below MIN_COVERAGE), or the question asks for a kind of fact no candidate holds, the answer says that
nothing was found. Quotes show a Markdown link as its text and address, never as `[text](url)`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rag_orchestrator.providers.passage_reading import Sentence, read_passage
from rag_orchestrator.providers.sentence_rules import (
    action_in,
    quotes_question,
    refers_back,
    repeats_question,
    wants_steps,
)
from rag_orchestrator.providers.sentence_scoring import (
    FOCUS_COVERAGE,
    MIN_COVERAGE,
    EmbedBatch,
    Question,
    Score,
    read_question,
    score,
)
from rag_orchestrator.text.answer_kinds import CHECKABLE, Kind, holds
from rag_orchestrator.text.sentences import Segment
from rag_orchestrator.text.terms import terms

NOTHING_FOUND = "I could not find anything about that in the knowledge base."
MAX_SENTENCE_CHARS = 400
MAX_QUOTE_CHARS = 500
MAX_QUOTES = 2
MIN_SCORE = 0.2
NEIGHBOUR_RATIO = 0.8  # the next sentence joins the quote when it scores this share of the best
FOLLOWER_RATIO = 0.3  # a next sentence that refers back ("This means…") joins from this share
SECOND_QUOTE_RATIO = 0.9
# What a sentence holding the person or place asked, not the words asking it, must cover: between the tune
# set's unanswerables (0.31 at most) and its answers given in other words (0.40 and up).
OTHER_WORDS_COVERAGE = 0.35

_LINK = re.compile(r"!\[[^\]]*\]\([^)]*\)|\[([^\]]+)\]\(([^)\s]+)[^)]*\)|`([^`<]+?)\s*<([^>]+)>`__?")


@dataclass(frozen=True, slots=True)
class Passage:
    document_id: str
    chunk_index: int
    text: str
    title: str = ""
    whole: bool = (
        False  # a whole text (an attachment's segment: a transcript has no punctuation), not a chunk
    )
    label: str = ""  # what introduces a quote of it ("You said on 2026-11-20: ")

    @property
    def citation(self) -> str:
        return f"[source:{self.document_id}#{self.chunk_index}]"


@dataclass(frozen=True, slots=True)
class Candidate:
    """A sentence of a retrieved passage (`passage_reading.Sentence`) where it was found."""

    passage: Passage
    rank: int  # of its passage among the retrieved ones
    sentence: Sentence

    @property
    def position(self) -> int:
        return self.sentence.position

    @property
    def segment(self) -> Segment:
        return self.sentence.segment

    @property
    def body(self) -> str:
        return self.sentence.body

    @property
    def context(self) -> str | None:
        return self.sentence.context

    @property
    def words(self) -> frozenset[str]:
        return self.sentence.words

    @property
    def around(self) -> frozenset[str]:
        return self.sentence.around

    @property
    def heading(self) -> frozenset[str]:
        return self.sentence.heading

    @property
    def text(self) -> str:
        return f"{self.context} {self.body}" if self.context else self.body

    @property
    def action(self) -> str | None:
        """The command it is or introduces, or the action it names."""
        if self.segment.kind == "command" or (
            self.segment.kind != "table" and self.body != self.segment.text
        ):
            return self.body
        return self._known("action", lambda: action_in(self.text))

    @property
    def action_terms(self) -> frozenset[str]:
        return self._known("action terms", lambda: frozenset(terms(self.action or "")))

    @property
    def text_terms(self) -> frozenset[str]:
        return self._known("text terms", lambda: frozenset(terms(self.text)))

    def holds(self, kind: Kind) -> bool:
        """Whether it states a fact of this kind (`answer_kinds.holds`)."""
        return self._known(kind, lambda: holds(kind, self.text))

    def _known(self, what: str, work: Callable[[], Any]) -> Any:
        known = self.sentence.known
        if what not in known:
            known[what] = work()
        return known[what]


def passage_candidates(
    passage: Passage, rank: int, question: str, quoted: set[str], read: Iterable[Sentence] | None = None
) -> list[Candidate]:
    """The candidates of one passage (its sentences `read` already, if given); `quoted` (sentences met in
    better-ranked passages) grows."""
    found = []
    for s in read_passage(passage.text, passage.title, passage.whole) if read is None else read:
        if s.key is not None:
            if s.key in quoted or repeats_question(s.segment, question):
                continue
            if s.example and quotes_question(s.example, question):
                continue  # "Try it: curl -d '{"message": "<the question>"}'" shows how to ask, not the answer
            quoted.add(s.key)
        found.append(Candidate(passage, rank, s))
    return found


def candidates(question: str, passages: Iterable[Passage]) -> list[Candidate]:
    """The candidates of all passages in rank order (a passage seen twice counts once)."""
    found: list[Candidate] = []
    seen: set[tuple[str, int]] = set()
    quoted: set[str] = set()  # overlapping chunks repeat sentences: the better-ranked passage keeps them
    for rank, passage in enumerate(passages):
        if (passage.document_id, passage.chunk_index) not in seen:
            seen.add((passage.document_id, passage.chunk_index))
            found += passage_candidates(passage, rank, question, quoted)
    return found


def readable(text: str) -> str:
    """Markdown and reStructuredText links as their text and address; images dropped."""

    def link(match: re.Match[str]) -> str:
        label, target = (
            (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        )
        if not label:
            return ""
        return (
            f"{label} ({target})" if target.startswith(("http://", "https://")) and target != label else label
        )

    return " ".join(_LINK.sub(link, text).split())


def _clip(text: str) -> str:
    text = readable(text)
    return text if len(text) <= MAX_SENTENCE_CHARS else text[: MAX_SENTENCE_CHARS - 1].rstrip() + "…"


def quote(best: Candidate, pool: list[Candidate], scores: dict[int, Score]) -> list[Candidate]:
    """The best sentence, after the one before it when it refers back to it ("This means…") without
    holding the fact asked for itself, and with the next one when that scores well too or refers back."""
    same = {
        c.position: c for c in pool if c.passage is best.passage and c.segment.block == best.segment.block
    }
    chosen = [best]
    top = scores[id(best)].value

    def fits(neighbour: Candidate) -> bool:
        return sum(len(c.text) for c in chosen) + len(neighbour.text) <= MAX_QUOTE_CHARS

    before, after = same.get(best.position - 1), same.get(best.position + 1)
    # "It is run by Marta Okafor." answers "Who runs the café?" alone: the fact leads, the antecedent is
    # the question's own subject. A sentence that does not hold the fact asked for needs what it refers to.
    needs_antecedent = refers_back(best.segment) and not scores[id(best)].answers
    if before is not None and needs_antecedent and fits(before):
        chosen.insert(0, before)
    if after is not None and fits(after):
        ratio = FOLLOWER_RATIO if refers_back(after.segment) else NEIGHBOUR_RATIO
        if scores[id(after)].value >= ratio * top:
            chosen.append(after)
    return chosen


def join(chosen: list[Candidate]) -> str:
    """The quoted sentences in order, a context they share said once."""
    return " ".join(
        _clip(c.text if i == 0 or c.context != chosen[i - 1].context else c.body)
        for i, c in enumerate(chosen)
    )


def pick(
    question: str | Question, passages: Iterable[Passage], embed: EmbedBatch | None = None
) -> list[tuple[Passage, str]]:
    """The quotes that answer, best first: (passage, its sentences joined); none when nothing answers."""
    asked = (
        question if isinstance(question, Question) else read_question(question, steps=wants_steps(question))
    )
    pool = candidates(asked.asked, passages)
    scored = score(asked, pool, embed)
    scores = {id(c): s for c, s in zip(pool, scored, strict=True)}
    ranked = sorted(pool, key=lambda c: (-scores[id(c)].value, c.rank, c.position))
    # A question about the message's own files is about them, whatever it calls them ("the meeting").
    own_files = any(p.whole for p in passages)
    unknown = not own_files and asked.unknown_focus(f"{p.title}\n{p.text}" for p in passages)
    if not ranked or _nothing_answers(asked, [scores[id(c)] for c in ranked], unknown):
        return []
    top = scores[id(ranked[0])].value
    quotes: list[tuple[Passage, str]] = []
    said: list[frozenset[str]] = []  # overlapping chunks repeat a sentence, sometimes with a word more
    for best in ranked:
        mine = scores[id(best)]
        if len(quotes) == MAX_QUOTES or mine.value < SECOND_QUOTE_RATIO * top:
            break
        if quotes and (mine.answers is False or mine.coverage < MIN_COVERAGE or mine.elsewhere):
            continue  # a second quote must answer too, and be about what was asked
        if any(p is best.passage for p, _ in quotes) or any(best.words <= w or w <= best.words for w in said):
            continue
        chosen = quote(best, pool, scores)
        said.extend(c.words for c in chosen)
        quotes.append((best.passage, join(chosen)))
    return quotes


def _nothing_answers(question: Question, ranked: list[Score], unknown_focus: bool) -> bool:
    best = ranked[0]
    if best.value < MIN_SCORE or best.coverage < (FOCUS_COVERAGE if unknown_focus else MIN_COVERAGE):
        return True
    # A sentence sharing the question's names but not what it asks of them ("the pool's sauna") does not
    # answer, unless it holds the person or place asked for and matches the rest of the question well: the
    # fact said in other words ("in charge" -> "the centre manager"). A price, a time or a number is no such
    # sign: nearly every passage about a place holds some ("€5.50" is not the price of its parking).
    checkable = bool(question.kinds) and question.kinds[0] in CHECKABLE
    other_words = best.answers and not checkable and best.coverage >= OTHER_WORDS_COVERAGE
    if not best.on_topic and not other_words:
        return True
    if unknown_focus and question.yes_no:
        return True  # "Does it have a gift shop?": what no passage mentions cannot be confirmed
    # A kind of fact no sentence holds, or none beside what the question is about, is not in these passages:
    # "the phone number" where none is given, "the calories of a croissant" where only a bun's are.
    checkable = bool(question.kinds) and question.kinds[0] in CHECKABLE
    return checkable and not any(s.answers and s.focused for s in ranked if s.coverage >= MIN_COVERAGE)


def compose_answer(
    question: str | Question, passages: Iterable[Passage], embed: EmbedBatch | None = None
) -> str:
    """The quotes that answer, each followed by its `[source:documentId#chunkIndex]`; else NOTHING_FOUND."""
    quotes = pick(question, passages, embed)
    if not quotes:
        return NOTHING_FOUND
    return "\n\n".join(f"{passage.label}{text} {passage.citation}" for passage, text in quotes)

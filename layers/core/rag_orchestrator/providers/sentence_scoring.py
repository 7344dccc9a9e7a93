"""How well a sentence answers a question; the sentence picker quotes by it, the local reranker orders
passages by their best sentence.

A sentence scores by

- the question's terms it holds (stems and synonyms, `text/terms.py`), each weighted by how rare it is among
  the candidates; a term met only in what the sentence is read with (its document's title, its heading, its
  paragraph's first sentence) counts half, and so does a word a follow-up borrowed from the question before;
- the cosine similarity of its embedding with the question's;
- whether it holds the kind of fact the question asks for (`text/answer_kinds.py`): a price for "how much",
  a time for "until when", a name for "who"; a sentence without one is worth about half;
- a little for the rank of its passage, and for a heading above it that says what the question asks.

Its coverage (the first measure alone, 0 to 1) says whether it is about what was asked at all: below
MIN_COVERAGE nothing answers, and the answer says so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from rag_orchestrator.text.answer_kinds import (
    KIND_WORDS,
    Kind,
    asked_kinds,
    asks_yes_or_no,
    counted,
    kind_stated,
)
from rag_orchestrator.text.follow_ups import standalone
from rag_orchestrator.text.terms import slots, terms
from rag_orchestrator.text.words import normalize

EmbedBatch = Callable[[list[str]], Sequence[Sequence[float]]]

LEXICAL_WEIGHT, EMBEDDING_WEIGHT, RANK_WEIGHT = 0.6, 0.3, 0.05
KIND_BONUS, KIND_MISS = 0.15, 0.55
STEPS_BONUS, NO_ACTION, ACTION_COVERAGE = 0.3, 0.7, 0.5
SLOT_MISS = 0.7  # it names another day (colour, month…) than the one asked, and not that one
NAME_MISS = 0.7  # neither it nor what it is read with names what the question names ("HTTPX")
AROUND_WEIGHT = 0.5
HEADING_WEIGHT = 0.1  # a section headed with the question's words ("Opening hours") is where it is answered
CARRIED_WEIGHT = 0.5
MIN_COVERAGE = 0.3
FOCUS_COVERAGE = 0.6  # a question naming something no passage knows needs this much to be answered

# Words that describe rather than name: "the local dev server" is about a server.
_ADJECTIVES = (
    "whole|same|other|new|old|full|half|first|last|next|previous|own|single|best|main|usual|default|total|entire|"
    "one|local|big|small|large|little|long|short|current|latest|recent|early|late|public|private|free|open|"
    "indoor|outdoor|annual|daily|weekly|monthly|yearly|general|special|extra|usual|normal|regular|standard"
)
# What a question is about: the word after "the", "a", "my"… (past "whole", "local", a number), and names
# inside it ("on Cloud Run"). A passage that never says it is about something else.
_DETERMINED = re.compile(
    r"\b(?:the|a|an|my|your|our|their|his|her|its|this|that|these|those)\s+"
    rf"(?:(?:{_ADJECTIVES}|\d[\w.,:]*)\s+)*([^\W\d_][\w'’-]*)",
    re.IGNORECASE,
)
# "that day", "the same place": a follow-up's words that point back say nothing of their own.
_POINTING = re.compile(r"\b(?:that|this|these|those|same)\s+([^\W\d_]+)", re.IGNORECASE)
# A name inside the question: capitalised words together ("Oakfield Primary School", "Cloud Run").
_NAME = re.compile(r"(?<=[\w,;:'’] )[A-Z][\w'’-]*(?: (?:of |& )?[A-Z][\w'’-]*)*")


@dataclass(frozen=True, slots=True)
class Name:
    said: str  # as the question writes it, normalized: "cloud run"
    terms: frozenset[str]


@dataclass(frozen=True, slots=True)
class Question:
    asked: str  # the message as the user wrote it
    text: str  # what is compared: the message, and a follow-up's borrowed words
    weights: dict[str, float]  # term -> 1, or CARRIED_WEIGHT for a borrowed word
    kinds: tuple[Kind, ...]
    steps: bool  # "how do I…": a command answers best
    focus: frozenset[str] = frozenset()  # what it is about (terms), kind words aside: each must be known
    names: tuple[Name, ...] = ()  # the names in it: a text must say one (of several words: as written)
    yes_no: bool = False  # "Does the museum have a gift shop?"

    def unknown_focus(self, texts: Iterable[str]) -> bool:
        """Whether the texts miss what the question is about: a focus term, or a name ("Cloud Run" is not
        said by a text that has "Chroma Cloud" and "runs")."""
        read = [" ".join(normalize(text).split()) for text in texts]
        known: set[str] = set()
        for text in read:
            known.update(terms(text))
        unsaid = [
            name
            for name in self.names
            if not (name.terms <= known if " " not in name.said else any(name.said in text for text in read))
        ]
        return bool(self.focus - known) or bool(unsaid)

    def asked_terms(self) -> frozenset[str]:
        """The message's own terms that say what it asks about something ("the sauna", "a taxi"): not the
        names it gives, not the words of the kind of fact it asks for ("how much", "open")."""
        named = frozenset().union(*(name.terms for name in self.names))
        kind_words = frozenset().union(*KIND_WORDS.values())
        return frozenset(t for t, w in self.weights.items() if w == 1.0) - named - kind_words


def read_question(message: str, earlier: str | None = None, *, steps: bool = False) -> Question:
    """The question a message asks; a follow-up reads the earlier question's words and kind of fact too."""
    text = standalone(message, earlier)
    pointing = set(terms(" ".join(_POINTING.findall(message)), implied=False)) if text != message else set()
    own = dict.fromkeys((t for t in terms(message, implied=False) if t not in pointing), 1.0)
    borrowed = dict.fromkeys((t for t in terms(text, implied=False) if t not in own), CARRIED_WEIGHT)
    kinds = asked_kinds(message) or (asked_kinds(earlier) if earlier and text != message else ())
    kind_words = {w for words in KIND_WORDS.values() for w in words}
    # A follow-up names what the earlier question named ("Riverside Pool"); days and months are no names.
    names = tuple(
        Name(" ".join(normalize(found).split()), named)
        for found in _NAME.findall(text)
        if (named := frozenset(terms(found, implied=False)) - kind_words) and not slots(named)
    )
    focus = frozenset(terms(" ".join(_DETERMINED.findall(message)), implied=False)) - kind_words
    return Question(message, text, own | borrowed, kinds, steps, focus, names, asks_yes_or_no(message))


class Scorable(Protocol):
    @property
    def words(self) -> frozenset[str]: ...  # the terms of what would be quoted

    @property
    def around(self) -> frozenset[str]: ...  # the terms of what it is read with

    @property
    def heading(self) -> frozenset[str]: ...  # the terms of its section's heading

    @property
    def text(self) -> str: ...

    @property
    def rank(self) -> int: ...

    @property
    def action(self) -> str | None: ...  # what it says to do: a command, an HTTP call

    @property
    def action_terms(self) -> frozenset[str]: ...  # the terms of its action

    @property
    def text_terms(self) -> frozenset[str]: ...  # the terms of its text

    def holds(self, kind: Kind) -> bool: ...  # whether it states a fact of this kind


@dataclass(frozen=True, slots=True)
class Score:
    value: float
    coverage: float
    answers: bool | None  # holds the kind of fact asked for (None: no kind asked)
    elsewhere: bool = False  # about another day, or another name, than the question's
    focused: bool = True  # it (or what it is read with) says what the question is about
    on_topic: bool = True  # it (or what it is read with) says something the question asks, beyond names


def term_weights(question: Question, pool: Sequence[Scorable]) -> dict[str, float]:
    """Each question term's weight: how rare it is among the candidates, smoothed so that a word every
    candidate has still counts a little and a word none has counts like the rarest."""
    n = len(pool)
    weights = {}
    for term, base in question.weights.items():
        found = sum(term in c.words or term in c.around for c in pool)
        weights[term] = base * math.log(1 + (n + 1) / (found + 1))
    return weights


def coverage(weights: dict[str, float], words: frozenset[str], around: frozenset[str] = frozenset()) -> float:
    """The weighted share of the question's terms the words hold (those only `around` them count half)."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    said = sum(w for t, w in weights.items() if t in words)
    around_only = sum(w for t, w in weights.items() if t not in words and t in around)
    return min((said + AROUND_WEIGHT * around_only) / total, 1.0)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def score(question: Question, pool: Sequence[Scorable], embed: EmbedBatch | None = None) -> list[Score]:
    weights = term_weights(question, pool)
    asked_slots = slots(question.weights)
    # "How do I…": an action about what was asked (its own words cover the question) answers best, and
    # when one is there, sentences without an action are worth less.
    acts = {id(c): coverage(weights, c.action_terms) for c in pool if question.steps and c.action}
    acting = any(value >= ACTION_COVERAGE for value in acts.values())
    focus = question.focus & frozenset().union(*(c.words | c.around for c in pool))  # those said somewhere
    asked = question.asked_terms()
    unit = counted(question.asked) if "number" in question.kinds[:2] else frozenset()
    similar = [0.0] * len(pool)
    if embed is not None and pool:
        vectors = embed([question.text, *(c.text for c in pool)])
        similar = [max(cosine(vectors[0], v), 0.0) for v in vectors[1:]]
    scores = []
    for c, sim in zip(pool, similar, strict=True):
        held = answered_kind(question, c, unit) if question.kinds else None
        answers = (held is not None) if question.kinds else None
        covered = coverage(weights, c.words | (KIND_WORDS[held] if held else frozenset()), c.around)
        value = LEXICAL_WEIGHT * covered + EMBEDDING_WEIGHT * sim + RANK_WEIGHT / (1 + c.rank)
        value += HEADING_WEIGHT * coverage(weights, c.heading)
        if answers:
            value += KIND_BONUS
        elif answers is False:
            value *= KIND_MISS
        elif id(c) in acts:
            value += STEPS_BONUS * acts[id(c)]
        elif acting:
            value *= NO_ACTION
        other_day = any(
            named and not named & asked_slots.get(i, named) for i, named in slots(c.words).items()
        )
        other_name = any(not name.terms & (c.words | c.around) for name in question.names)
        value *= (SLOT_MISS if other_day else 1.0) * (NAME_MISS if other_name else 1.0)
        if len(c.words) < 3:
            value *= 0.8  # fragments ("Ctrl-C.") rarely answer alone
        scores.append(
            Score(
                value if covered > 0 or sim > 0.3 else 0.0,
                covered,
                answers,
                elsewhere=other_day or other_name,
                focused=focus <= c.words | c.around,
                on_topic=not asked or bool(asked & (c.words | c.around)),
            )
        )
    return scores


def answered_kind(question: Question, candidate: Scorable, unit: frozenset[str]) -> Kind | None:
    """`answer_kinds.kind_stated` for a read question and a candidate (`unit`: what a number must count)."""
    return kind_stated(question.kinds, unit, candidate)

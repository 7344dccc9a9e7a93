"""The measures of `make eval`: retrieval (hit@1, hit@3, MRR) and answers (accuracy, leads with the fact,
follow-ups, honest "not found", per question type, length)."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field

from eval.questions import Question

NOT_FOUND_PREFIX = "I could not find"
_CITATION = re.compile(r"\s*\[source:[^\]]*\]")
# A sentence ends at . ! ? before a space and a capital or digit; "Dr. Osei" and "e.g. this" do not end one.
_SENTENCE_END = re.compile(
    r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMrs\.)(?<!\bMs\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<=[.!?])\s+(?=[A-Z0-9\"'(`])|\n"
)


def squash(text: str) -> str:
    return " ".join(text.lower().split())


def contains_fact(answer: str, facts: tuple[str, ...]) -> bool:
    """Whether the answer holds any of the facts, case and whitespace aside."""
    said = squash(answer)
    return any(squash(fact) in said for fact in facts)


def first_sentence(answer: str) -> str:
    text = _CITATION.sub("", answer).strip()
    return _SENTENCE_END.split(text, maxsplit=1)[0]


def ranked_documents(document_ids: list[str]) -> list[str]:
    """Document ids in rank order, each once (several chunks of one document count as one hit)."""
    return list(dict.fromkeys(document_ids))


@dataclass(slots=True)
class Tally:
    """The measures of one run over one set of questions."""

    retrieved: int = 0  # answerable questions whose retrieval was measured
    hits_at_1: int = 0
    hits_at_3: int = 0
    reciprocal_ranks: float = 0.0
    answerable: int = 0
    correct: int = 0
    leads: int = 0
    follow_ups: int = 0
    follow_ups_correct: int = 0
    unanswerable: int = 0
    honest: int = 0
    lengths: list[int] = field(default_factory=list)
    by_type: Counter[str] = field(default_factory=Counter)
    right_by_type: Counter[str] = field(default_factory=Counter)
    misses: list[str] = field(default_factory=list)

    def add_retrieval(self, question: Question, ranked: list[str]) -> None:
        self.retrieved += 1
        rank = next((i for i, doc in enumerate(ranked, 1) if doc in question.documents), None)
        self.hits_at_1 += rank == 1
        self.hits_at_3 += rank is not None and rank <= 3
        self.reciprocal_ranks += 1 / rank if rank else 0.0

    def add_answer(self, question: Question, answer: str) -> None:
        said_nothing = answer.startswith(NOT_FOUND_PREFIX)
        if not question.answerable:
            self.unanswerable += 1
            self.honest += said_nothing
            if not said_nothing:
                self.misses.append(f"{question.question} (nothing answers it)\n      got: {answer}")
            return
        right = contains_fact(answer, question.facts)
        self.lengths.append(len(answer))
        if question.follows:
            self.follow_ups += 1
            self.follow_ups_correct += right
        else:
            self.answerable += 1
            self.correct += right
            self.leads += right and contains_fact(first_sentence(answer), question.facts)
            self.by_type[question.type] += 1
            self.right_by_type[question.type] += right
        if not right:
            kind = "follow-up" if question.follows else question.type
            self.misses.append(
                f"{question.question} ({kind})\n      expected {' | '.join(question.facts)}; got: {answer}"
            )

    def merge(self, other: Tally) -> Tally:
        """The measures of both runs together."""
        merged = Tally()
        for name in self.__slots__:  # type: ignore[attr-defined]
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(merged, name, mine + theirs)
        return merged

    def row(self) -> dict[str, str]:
        def share(n: float, of: int) -> str:
            return f"{n / of:.2f}" if of else "-"

        return {
            "hit@1": share(self.hits_at_1, self.retrieved),
            "hit@3": share(self.hits_at_3, self.retrieved),
            "MRR": share(self.reciprocal_ranks, self.retrieved),
            "accuracy": share(self.correct, self.answerable),
            "leads": share(self.leads, self.answerable),
            "follow-ups": f"{self.follow_ups_correct}/{self.follow_ups}" if self.follow_ups else "-",
            "honest": f"{self.honest}/{self.unanswerable}" if self.unanswerable else "-",
            "median chars": str(round(statistics.median(self.lengths))) if self.lengths else "-",
            "n": str(self.answerable),
        }

    def type_row(self) -> dict[str, str]:
        return {kind: f"{self.right_by_type[kind]}/{self.by_type[kind]}" for kind in sorted(self.by_type)}


def table(rows: list[dict[str, str]]) -> str:
    """A plain text table of rows; a column missing from a row shows as blank."""
    if not rows:
        return ""
    columns = list(dict.fromkeys(c for r in rows for c in r))
    widths = [max(len(c), *(len(r.get(c, "")) for r in rows)) for c in columns]

    def line(values: list[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    return "\n".join(
        [
            line(columns),
            line(["-" * w for w in widths]),
            *(line([r.get(c, "") for c in columns]) for r in rows),
        ]
    )

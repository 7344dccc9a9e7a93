"""The question set and its measures: retrieval hit@1/hit@3, answer accuracy (the answer holds an expected fact)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

EVAL_DIR = Path(__file__).resolve().parent
CORPUS = EVAL_DIR / "corpus"
QUESTIONS = EVAL_DIR / "questions.yaml"
CORPUS_SUFFIXES = (".md", ".rst", ".txt")
NOT_CORPUS = "SOURCES.md"  # where the documents come from, beside them


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    document: str | None  # None: nothing in the corpus answers it, and the answer should say so
    facts: tuple[str, ...]


@dataclass(slots=True)
class Tally:
    """The measures of one run: one embedder, one strategy."""

    hits_at_1: int = 0
    hits_at_3: int = 0
    fact_retrieved: int = 0
    correct: int = 0
    nothing_found: int = 0
    answer_chars: int = 0
    count: int = 0
    off_topic: int = 0
    declined: int = 0
    misses: list[str] = field(default_factory=list)

    def add(
        self, question: Question, ranked_documents: list[str], passages: list[str], answer: str, nothing: bool
    ) -> None:
        if question.document is None:
            self.off_topic += 1
            self.declined += nothing
            if not nothing:
                self.misses.append(
                    f"{question.question} (off-topic)\n      expected no answer; got: {answer}"
                )
            return
        self.count += 1
        self.hits_at_1 += question.document in ranked_documents[:1]
        self.hits_at_3 += question.document in ranked_documents[:3]
        self.fact_retrieved += any(contains_fact(text, question.facts) for text in passages)
        right = contains_fact(answer, question.facts)
        self.correct += right
        self.nothing_found += nothing
        self.answer_chars += len(answer)
        if not right:
            rank = (
                ranked_documents.index(question.document) + 1
                if question.document in ranked_documents
                else "-"
            )
            self.misses.append(
                f"{question.question} (document ranked {rank})\n"
                f"      expected {' | '.join(question.facts)}; got: {answer}"
            )

    def row(self) -> dict[str, str]:
        share = lambda n: f"{n / self.count:.2f}" if self.count else "-"  # noqa: E731
        return {
            "hit@1": share(self.hits_at_1),
            "hit@3": share(self.hits_at_3),
            "fact in passages": share(self.fact_retrieved),
            "answer accuracy": share(self.correct),
            "nothing found": str(self.nothing_found),
            "mean answer chars": str(round(self.answer_chars / self.count)) if self.count else "-",
            "off-topic declined": f"{self.declined}/{self.off_topic}",
        }


def load_questions(path: Path = QUESTIONS) -> list[Question]:
    items = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [Question(i["question"], i.get("document"), tuple(i.get("facts", ()))) for i in items]


def corpus_documents(directory: Path = CORPUS) -> list[dict]:
    """Every corpus file as a document to ingest; its name without the extension is its documentId."""
    return [
        {"documentId": path.stem, "title": path.stem.replace("-", " "), "text": path.read_text("utf-8")}
        for path in sorted(directory.iterdir())
        if path.suffix in CORPUS_SUFFIXES and path.name != NOT_CORPUS
    ]


def squash(text: str) -> str:
    return " ".join(text.lower().split())


def contains_fact(answer: str, facts: tuple[str, ...]) -> bool:
    """Whether the answer holds any of the facts, case and whitespace aside."""
    said = squash(answer)
    return any(squash(fact) in said for fact in facts)


def ranked_documents(document_ids: list[str]) -> list[str]:
    """Document ids in rank order, each once (several chunks of one document count as one hit)."""
    return list(dict.fromkeys(document_ids))


def table(rows: list[dict[str, str]]) -> str:
    """A plain text table of rows sharing their keys."""
    if not rows:
        return ""
    columns = list(rows[0])
    widths = [max(len(c), *(len(r[c]) for r in rows)) for c in columns]
    line = lambda values: "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True))  # noqa: E731
    return "\n".join(
        [line(columns), line(["-" * w for w in widths]), *(line([r[c] for c in columns]) for r in rows)]
    )

"""The question sets of `make eval` and the corpus they are asked of.

Three sets: `questions.yaml` (package documentation, eval/corpus/SOURCES.md), `everyday.yaml` (everyday
documents written for this evaluation, with distractors, follow-ups and questions nothing answers) and
`project_docs.yaml` (what a new user asks of this project's README and docs/, the sample knowledge base).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

EVAL_DIR = Path(__file__).resolve().parent
CORPUS = EVAL_DIR / "corpus"
CORPUS_SUFFIXES = (".md", ".rst", ".txt")
NOT_CORPUS = "SOURCES.md"  # where the documents come from, beside them
TUNE, HELD_OUT = "tune", "held-out"


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    documents: tuple[str, ...]  # the documentIds that answer it, the first the main one; () when none does
    facts: tuple[str, ...]
    type: str = "other"
    split: str = TUNE
    follows: bool = False  # asked after the question before it, in one conversation

    @property
    def answerable(self) -> bool:
        return bool(self.documents)


@dataclass(frozen=True, slots=True)
class QuestionSet:
    name: str
    singles: list[Question]  # asked on their own
    conversations: list[list[Question]]  # asked in turn, each list in one chat conversation
    sample_knowledge_base: bool = False  # asked of README.md and docs/, not of eval/corpus/

    def split(self, split: str) -> QuestionSet:
        return QuestionSet(
            f"{self.name} ({split})",
            [q for q in self.singles if q.split == split],
            [c for c in self.conversations if c[0].split == split],
            self.sample_knowledge_base,
        )


def _question(item: dict, split: str, follows: bool = False) -> Question:
    documents = [item["document"], *item.get("also", ())] if item.get("document") else []
    return Question(
        question=item["question"],
        documents=tuple(documents),
        facts=tuple(item.get("facts", ())),
        type=item.get("type", "other"),
        split=item.get("split", split),
        follows=follows,
    )


def load_set(name: str, path: Path, *, sample_knowledge_base: bool = False) -> QuestionSet:
    singles: list[Question] = []
    conversations: list[list[Question]] = []
    for item in yaml.safe_load(path.read_text(encoding="utf-8")):
        split = item.get("split", TUNE)
        if "conversation" in item:
            turns = item["conversation"]
            conversations.append([_question(turn, split, follows=i > 0) for i, turn in enumerate(turns)])
        else:
            singles.append(_question(item, split))
    return QuestionSet(name, singles, conversations, sample_knowledge_base)


def question_sets() -> list[QuestionSet]:
    return [
        load_set("package docs", EVAL_DIR / "questions.yaml"),
        load_set("everyday", EVAL_DIR / "everyday.yaml"),
        load_set("project docs", EVAL_DIR / "project_docs.yaml", sample_knowledge_base=True),
    ]


def corpus_documents(directory: Path = CORPUS) -> list[dict]:
    """Every corpus file as a document to ingest; its name without the extension is its documentId, and
    its title what the documents bucket would give it: a Markdown file's first heading, else its name."""
    from rag_orchestrator.retrieval.s3_ingest import title_from

    return [
        {"documentId": path.stem, "title": title_from(path.name, text), "text": text}
        for path in sorted(directory.iterdir())
        if path.suffix in CORPUS_SUFFIXES and path.name != NOT_CORPUS
        for text in [path.read_text("utf-8")]
    ]

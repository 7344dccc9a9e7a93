"""The retrieval layer's data: documents to ingest and the passages a search returns."""

from __future__ import annotations

from pydantic import ConfigDict, Field, computed_field, field_validator

from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.retrieval.sanitize import (
    MAX_DOCUMENT_ID,
    MAX_SOURCE,
    MAX_TAG,
    MAX_TAGS,
    MAX_TITLE,
)
from rag_orchestrator.text.snippets import Snippet, centre_snippet

SNIPPET_CHARS = 300
MAX_DOCUMENT_CHARS = 500_000


class Document(CamelModel):
    """A document to ingest. A missing documentId is derived from title and text (see `stable_document_id`)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    document_id: str | None = Field(
        None, min_length=1, max_length=MAX_DOCUMENT_ID, pattern=r"^[^\x00-\x1f\x7f]+$"
    )
    title: str = Field(min_length=1, max_length=MAX_TITLE * 5)
    text: str = Field(min_length=1, max_length=MAX_DOCUMENT_CHARS)
    source: str | None = Field(None, max_length=MAX_SOURCE * 5)
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS)

    @field_validator("tags")
    @classmethod
    def _tags_short(cls, tags: list[str]) -> list[str]:
        if any(len(tag) > MAX_TAG for tag in tags):
            raise ValueError(f"each tag must have at most {MAX_TAG} characters")
        return tags


class Passage(CamelModel):
    """A retrieved chunk: where it comes from, how well it matched (cosine similarity), and its text."""

    document_id: str
    title: str
    chunk_index: int
    score: float
    source: str | None = None
    tags: list[str] = Field(default_factory=list)
    text: str
    query: str = Field("", exclude=True, repr=False)  # what found it: the snippet centres on its words

    @computed_field  # type: ignore[prop-decorator]
    @property
    def snippet(self) -> str:
        return self.excerpt.text

    @property
    def excerpt(self) -> Snippet:
        """At most SNIPPET_CHARS of the text around the sentences that share the query's words."""
        return centre_snippet(self.text, self.query, SNIPPET_CHARS)


class Source(CamelModel):
    """A passage as a client sees it among an answer's sources (seed 003's Citation)."""

    document_id: str
    title: str
    chunk_index: int
    score: float
    source: str | None = None
    tags: list[str]

    @classmethod
    def of(cls, passage: Passage) -> Source:
        return cls(
            document_id=passage.document_id,
            title=passage.title,
            chunk_index=passage.chunk_index,
            score=round(passage.score, 4),
            source=passage.source,
            tags=passage.tags,
        )

"""Documents to ingest (the passages a search returns are `domain.passages.Passage`)."""

from __future__ import annotations

import unicodedata

from pydantic import ConfigDict, Field, field_validator

from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.domain.text import plain_label, plain_labels
from rag_orchestrator.sanitize import (
    MAX_DOCUMENT_ID,
    MAX_SOURCE,
    MAX_TAG,
    MAX_TAGS,
    MAX_TITLE,
)

MAX_DOCUMENT_CHARS = 500_000
MAX_DOCUMENT_ID_BYTES = 1000  # DOC#<documentId> within DynamoDB's 1024-byte sort key


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
        return plain_labels(tags)

    @field_validator("document_id", "title", "source")
    @classmethod
    def _plain(cls, value: str | None) -> str | None:
        return None if value is None else plain_label(value)

    @field_validator("document_id")
    @classmethod
    def _fits_a_key(cls, value: str | None) -> str | None:
        """The registry keys a document by DOC#<documentId>: DynamoDB bounds a key in bytes."""
        if value is not None and len(value.encode()) > MAX_DOCUMENT_ID_BYTES:
            raise ValueError(f"must be at most {MAX_DOCUMENT_ID_BYTES} bytes in UTF-8")
        return value

    @field_validator("text")
    @classmethod
    def _visible(cls, value: str) -> str:
        """Blank is blank however written: zero-width spaces and other format characters alone are
        nothing to search (and would replace a document with none of its chunks)."""
        if all(char.isspace() or unicodedata.category(char) == "Cf" for char in value):
            raise ValueError("must not be blank")
        return value

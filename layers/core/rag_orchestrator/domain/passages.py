"""Passages of the knowledge base, as retrieval finds them and as clients see them, and their citations.

One typed passage travels from a search through the tools, the loop and the finalizers to the
`Sources` event and both answer routes. A citation is `[source:documentId#chunkIndex]`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import Field, computed_field

from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.text.snippets import Snippet, centre_snippet

SNIPPET_CHARS = 300
# A documentId may hold spaces (an S3 key such as "Support Guide.pdf" is one), not a line break or
# `]`; spaces after the colon are the model's, not the id's.
CITATION = re.compile(r"\[source:[ \t]*([^\]#\s](?:[^\]#\n]*[^\]#\s])?)#(\d+)\]")
CITATION_FORMAT = "[source:documentId#chunkIndex]"

Key = tuple[str, int]


class Source(CamelModel):
    """A passage as a client sees it among an answer's sources (docs/answers.md)."""

    document_id: str
    title: str
    chunk_index: int
    score: float  # cosine similarity
    source: str | None = None
    tags: list[str] = Field(default_factory=list)

    @property
    def key(self) -> Key:
        return self.document_id, self.chunk_index

    @classmethod
    def of(cls, passage: Passage) -> Source:
        return cls(
            document_id=passage.document_id,
            title=passage.title,
            chunk_index=passage.chunk_index,
            score=round(passage.score, 4),
            source=passage.source,
            tags=list(passage.tags),
        )


class Passage(Source):
    """A retrieved chunk: where it comes from, how well it matched, and its text."""

    text: str
    query: str = Field("", exclude=True, repr=False)  # what found it: the snippet centres on its words
    kind: str | None = Field(None, exclude=True)  # conversation memory's `said` or `answered`; else None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def snippet(self) -> str:
        return self.excerpt.text

    @property
    def excerpt(self) -> Snippet:
        """At most SNIPPET_CHARS of the text around the sentences that share the query's words."""
        return centre_snippet(self.text, self.query, SNIPPET_CHARS)


class SourceWithSnippet(Source):
    """A source with the text an app can show: `/api/v1/query` results and the chat `Sources` event."""

    snippet: str

    @classmethod
    def of(cls, passage: Passage) -> SourceWithSnippet:
        return cls(**Source.of(passage).model_dump(), snippet=passage.snippet)


class QueryResult(Source):
    """A passage as `/api/v1/query` and the MCP `search_knowledge_base` tool return it: the whole chunk
    and where in it the snippet lies."""

    text: str = Field(description="the whole chunk")
    snippet: str = Field(description="text[snippetStart:snippetEnd]: the sentences matching the query")
    snippet_start: int
    snippet_end: int

    @classmethod
    def from_passage(cls, passage: Passage) -> QueryResult:
        excerpt = passage.excerpt
        return cls(
            **Source.of(passage).model_dump(),
            text=passage.text,
            snippet=excerpt.text,
            snippet_start=excerpt.start,
            snippet_end=excerpt.end,
        )


def citation_key(document_id: str, chunk_index: int) -> str:
    return f"[source:{document_id}#{chunk_index}]"


def cited_keys(text: str) -> set[Key]:
    return {(doc, int(index)) for doc, index in CITATION.findall(text)}


def drawn_on(answer: str, passages: Sequence[Passage]) -> list[Passage]:
    """The passages an answer cites, or every passage when it cites none of them."""
    cited = cited_keys(answer)
    return [p for p in passages if p.key in cited] or list(passages)

"""Finalizer strategies (LOOP_FINALIZER, docs/configuration.md): what is added to the model's final answer before it is stored.

A finalizer only appends, so a streamed answer and the stored answer never disagree: the
epilogue is streamed as the last chunk.
"""

from __future__ import annotations

from typing import Protocol

from rag_orchestrator.domain.passages import Passage, citation_key, cited_keys


class Finalizer(Protocol):
    def epilogue(self, content: str, sources: list[Passage]) -> str: ...


class DirectFinalizer:
    """The answer as the model wrote it."""

    def epilogue(self, content: str, sources: list[Passage]) -> str:
        return ""


class StructuredFinalizer:
    """Appends a markdown list of the sources the answer cites."""

    def epilogue(self, content: str, sources: list[Passage]) -> str:
        cited = cited_keys(content)
        lines = [
            f"- {s.title or s.document_id} {citation_key(s.document_id, s.chunk_index)}"
            for s in sources
            if s.key in cited
        ]
        return "\n\n**Sources**\n" + "\n".join(lines) if lines else ""


FINALIZERS: dict[str, type[Finalizer]] = {"direct": DirectFinalizer, "structured": StructuredFinalizer}

"""Finalizer strategies (LOOP_FINALIZER, docs/configuration.md): what frames the model's final answer.

A finalizer adds a prologue before the answer and an epilogue after it, never changing the model's
text, so a streamed answer and the stored answer never disagree: the prologue is streamed before the
turn's first text (or, when none was streamed, with the epilogue), the epilogue as the last chunk. Text
streamed before a tool call is stored with that call's message, not in the answer (docs/conversations.md).
"""

from __future__ import annotations

from typing import Protocol

from rag_orchestrator.domain.passages import Passage, citation_key, cited_keys


class Finalizer(Protocol):
    @property
    def prologue(self) -> str: ...

    def epilogue(self, content: str, sources: list[Passage]) -> str: ...


class DirectFinalizer:
    """The answer as the model wrote it."""

    prologue = ""

    def epilogue(self, content: str, sources: list[Passage]) -> str:
        return ""


class StructuredFinalizer:
    """A Markdown answer: it starts with a `## Response` heading and ends with a list of the sources
    it cites."""

    prologue = "## Response\n\n"

    def epilogue(self, content: str, sources: list[Passage]) -> str:
        cited = cited_keys(content)
        lines = [
            f"- {s.title or s.document_id} {citation_key(s.document_id, s.chunk_index)}"
            for s in sources
            if s.key in cited
        ]
        return "\n\n**Sources**\n" + "\n".join(lines) if lines else ""


FINALIZERS: dict[str, type[Finalizer]] = {"direct": DirectFinalizer, "structured": StructuredFinalizer}

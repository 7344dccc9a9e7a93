"""Finalizer strategies (seed 000): what is added to the model's final answer before it is stored.

A finalizer only appends, so a streamed answer and the stored answer never disagree: the
epilogue is streamed as the last chunk.
"""

from __future__ import annotations

from typing import Any, Protocol

from rag_orchestrator.loop.citations import cited_keys


class Finalizer(Protocol):
    def epilogue(self, content: str, sources: list[dict[str, Any]]) -> str: ...


class DirectFinalizer:
    """The answer as the model wrote it."""

    def epilogue(self, content: str, sources: list[dict[str, Any]]) -> str:
        return ""


class StructuredFinalizer:
    """Appends a markdown list of the sources the answer cites."""

    def epilogue(self, content: str, sources: list[dict[str, Any]]) -> str:
        cited = cited_keys(content)
        lines = [
            f"- {s.get('title') or s['documentId']} [source:{s['documentId']}#{s['chunkIndex']}]"
            for s in sources
            if (s["documentId"], s["chunkIndex"]) in cited
        ]
        return "\n\n**Sources**\n" + "\n".join(lines) if lines else ""


FINALIZERS: dict[str, type] = {"direct": DirectFinalizer, "structured": StructuredFinalizer}

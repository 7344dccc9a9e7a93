"""rag_search: the knowledge-base search tool (seed 000's RAGTool) over the vector store."""

from __future__ import annotations

from typing import Any

from rag_orchestrator.config import Settings
from rag_orchestrator.domain.messages import ToolResult
from rag_orchestrator.domain.passage_formats import format_passages
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.tools.base import ToolContext

NAME = "rag_search"


class RagSearchTool:
    name = NAME
    description = (
        "Search the knowledge base for passages relevant to a question. "
        "Cite results as [source:documentId#chunkIndex]."
    )

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 2000,
                    "description": "The search query",
                },
                "max_results": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": settings.rag_topk_max,
                    "description": f"Maximum number of passages (default {settings.rag_topk_default})",
                },
                "source": {"type": "string", "description": "Only passages from this source"},
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Only passages with these tags",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        }

    async def search(
        self,
        query: str,
        *,
        max_results: int | None = None,
        source: str | None = None,
        tags: list[str] | None = None,
    ) -> list[Passage]:
        from rag_orchestrator.retrieval.search import search

        return await search(
            query,
            top_k=max_results or self.settings.rag_topk_default,
            threshold=self.settings.rag_similarity_threshold,
            source=source,
            tags=tags,
            settings=self.settings,
        )

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        passages = await self.search(
            arguments["query"],
            max_results=arguments.get("max_results"),
            source=arguments.get("source"),
            tags=arguments.get("tags"),
        )
        return ToolResult(
            tool_call_id="",
            tool_name=self.name,
            result=format_passages(passages),
            passages=passages,
        )

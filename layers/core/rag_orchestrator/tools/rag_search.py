"""rag_search: the knowledge-base search tool over the retriever (`retrieval/search.py`).

With MEMORY_ENABLED, the caller's own fragments (earlier turns, attachments' segments) rank together
with the knowledge base; `modality` narrows both to the modalities named. The chat's initial search calls
it too, and on a turn after the first passes the conversation, so that a follow-up question is searched
as the question it means (`retrieval/followup.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_orchestrator.config import Settings
from rag_orchestrator.domain.messages import ToolResult
from rag_orchestrator.domain.modalities import MODALITIES, ModalityFilter
from rag_orchestrator.domain.passage_formats import format_passages
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.providers.short_calls import ShortCall
from rag_orchestrator.retrieval.followup import FollowUps, Said
from rag_orchestrator.retrieval.query_vector import QueryVector
from rag_orchestrator.retrieval.search import Retriever, SearchQuery
from rag_orchestrator.tools.base import ToolContext

NAME = "rag_search"
CITE = "Cite results as [source:documentId#chunkIndex]."
KNOWLEDGE_ONLY = f"Search the knowledge base for passages relevant to a question. {CITE}"
WITH_MEMORY = (
    "Search the knowledge base, and this user's attachments and earlier conversations, for passages "
    f"relevant to a question. {CITE} Results from earlier conversations are labelled with their date "
    "and kind: what the user said, or an earlier answer that may be outdated."
)


class RagSearchTool:
    name = NAME

    def __init__(self, settings: Settings, retriever: Retriever, follow_ups: FollowUps | None = None) -> None:
        self.settings = settings
        self.retriever = retriever
        self.follow_ups = follow_ups or FollowUps()
        self.description = WITH_MEMORY if settings.memory_enabled else KNOWLEDGE_ONLY
        modality = {"type": "string", "enum": list(MODALITIES)}
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
                "modality": {
                    "anyOf": [
                        modality,
                        {"type": "array", "items": modality, "minItems": 1, "uniqueItems": True},
                    ],
                    "description": "Only passages of this modality, or of these: text (the knowledge base "
                    "and conversations), or an attachment's document, image-ocr, image-caption, audio",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        }

    async def search(
        self,
        query: str,
        *,
        caller_id: str | None = None,
        conversation_id: str | None = None,
        max_results: int | None = None,
        source: str | None = None,
        tags: list[str] | None = None,
        modality: ModalityFilter | None = None,
        vector: QueryVector | None = None,
        history: Sequence[Said] = (),
        calls: list[ShortCall] | None = None,
    ) -> list[Passage]:
        """The knowledge base's passages, and with MEMORY_ENABLED the caller's fragments (none of
        conversation `conversation_id`) after them (retrieval/search.py).

        `history`, the conversation before the message, makes a follow-up a question of its own (the
        model call that may take is appended to `calls`)."""
        if history:
            query = await self.follow_ups.query(query, history, calls)
        return await self.retriever.search(
            SearchQuery(
                query,
                max_results or self.settings.rag_topk_default,
                self.settings.rag_similarity_threshold,
                source=source,
                tags=tags or (),
                modality=modality,
                caller_id=caller_id,
                conversation_id=conversation_id,
                vector=vector,
            )
        )

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        passages = await self.search(
            arguments["query"],
            caller_id=ctx.caller_id if ctx.memory else None,
            conversation_id=ctx.conversation_id,
            max_results=arguments.get("max_results"),
            source=arguments.get("source"),
            tags=arguments.get("tags"),
            modality=arguments.get("modality"),
        )
        return ToolResult(
            tool_call_id="",
            tool_name=self.name,
            result=format_passages(passages),
            passages=passages,
        )

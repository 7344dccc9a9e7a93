"""The knowledge base as an MCP server (docs/mcp.md): `search_knowledge_base` and `ask`.

Built with the `mcp` SDK's low-level Server on the first POST /mcp (api/mcp.py), never at start-up.
Both tools read the knowledge base only — never conversations or conversation memory, which belong
to their callers — exactly as POST /api/v1/query and /api/v1/query/answer do. Bad arguments and
failed dependencies are tool errors (`isError`, in our words), which an MCP client's model reads.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server import Server
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rag_orchestrator import __version__
from rag_orchestrator.api.answer_spending import MeteredAnswers
from rag_orchestrator.api.mcp_caller import MCP_CALLER
from rag_orchestrator.config import Settings
from rag_orchestrator.domain.callers import ASKING, refused_anonymous
from rag_orchestrator.domain.passages import QueryResult, Source
from rag_orchestrator.domain.text import ClientBody
from rag_orchestrator.errors import RagError
from rag_orchestrator.observability import logger
from rag_orchestrator.retrieval.answers import AnswerQuery, collect_answer
from rag_orchestrator.retrieval.search import MAX_QUERY_CHARS, Retriever, SearchQuery
from rag_orchestrator.sanitize import MAX_SOURCE, MAX_TAG, MAX_TAGS

SEARCH = "search_knowledge_base"
ASK = "ask"
UNEXPECTED = "The tool failed unexpectedly. Please try again."
# The SDK logs each stateless request's session manager at INFO: two lines per request, no news.
logging.getLogger("mcp").setLevel(logging.WARNING)


class SearchArguments(ClientBody):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    query: str = Field(
        min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for, in plain words"
    )
    max_results: int | None = Field(
        None, ge=1, description="How many passages at most (default and cap: the service's)"
    )
    source: str | None = Field(None, max_length=MAX_SOURCE, description="Only passages of this source")
    tags: list[str] | None = Field(
        None, max_length=MAX_TAGS, description="Only passages with one of these tags"
    )


class AskArguments(ClientBody):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    question: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="The question to answer")


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True)
    schema.pop("title", None)
    return schema


TOOLS = [
    types.Tool(
        name=SEARCH,
        description="Search the knowledge base: the passages that best match the query, best first, "
        "each with its document id, title, score and text.",
        input_schema=_schema(SearchArguments),
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
    types.Tool(
        name=ASK,
        description="Answer a question from the knowledge base, citing the passages it drew on "
        "([source:documentId#chunk]); says so when the knowledge base has no answer.",
        input_schema=_schema(AskArguments),
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
]


def _result(
    text: str, structured: dict[str, Any] | None = None, *, error: bool = False
) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured, is_error=error
    )


def _invalid(exc: ValidationError) -> types.CallToolResult:
    problems = [
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg'].removeprefix('Value error, ')}"
        for e in exc.errors()[:5]
    ]
    return _result("Invalid arguments: " + "; ".join(problems), error=True)


class KnowledgeTools:
    """The two tools over the service's retriever (the routes' hybrid search and reranker) and, for `ask`,
    its metered answers (made when first asked: they need the model strategy), which only a signed-in
    caller or a guest may spend, counted on their day as /api/v1/query/answer counts them."""

    def __init__(
        self, settings: Settings, retriever: Retriever, answers: Callable[[], MeteredAnswers]
    ) -> None:
        self.settings = settings
        self.retriever = retriever
        self._answers = answers

    async def search(self, arguments: SearchArguments) -> types.CallToolResult:
        settings = self.settings
        limit = min(arguments.max_results or settings.rag_topk_default, settings.rag_topk_max)
        if arguments.tags and any(len(tag) > MAX_TAG for tag in arguments.tags):
            return _result(f"Invalid arguments: each tag has at most {MAX_TAG} characters", error=True)
        passages = await self.retriever.search(
            SearchQuery(
                arguments.query,
                limit,
                settings.rag_similarity_threshold,
                source=arguments.source,
                tags=arguments.tags or (),
            )
        )
        results = [QueryResult.from_passage(p).model_dump(mode="json", by_alias=True) for p in passages]
        structured = {"query": arguments.query, "results": results}
        return _result(json.dumps(structured, ensure_ascii=False), structured)

    async def ask(self, arguments: AskArguments) -> types.CallToolResult:
        asker = MCP_CALLER.get()
        if asker is None or not asker.someone:
            return _result(refused_anonymous(ASKING), error=True)
        settings = self.settings
        query = AnswerQuery(
            query=arguments.question,
            top_k=settings.rag_topk_default,
            threshold=settings.rag_similarity_threshold,
        )
        answer = await collect_answer(self._answers().events(asker, query))
        structured = answer.model_dump(mode="json", by_alias=True)
        return _result(_with_sources(answer.answer, answer.sources), structured)

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Run one tool; every failure is a tool error in the service's own words."""
        try:
            if name == SEARCH:
                return await self.search(SearchArguments.model_validate(arguments))
            if name == ASK:
                return await self.ask(AskArguments.model_validate(arguments))
        except ValidationError as exc:
            return _invalid(exc)
        except RagError as exc:
            return _result(exc.public_message, error=True)
        except Exception:
            logger.exception("mcp tool failed", extra={"tool": name})
            return _result(UNEXPECTED, error=True)
        return _result(f"Unknown tool: {name[:100]}", error=True)


def _with_sources(answer: str, sources: list[Source]) -> str:
    if not sources:
        return answer
    cited = "\n".join(f"- [source:{s.document_id}#{s.chunk_index}] {s.title}" for s in sources)
    return f"{answer}\n\nSources:\n{cited}"


def knowledge_server(
    settings: Settings, retriever: Retriever, answers: Callable[[], MeteredAnswers]
) -> Server:
    """The low-level MCP server of the knowledge base's tools."""
    tools = KnowledgeTools(settings, retriever, answers)

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await tools.call(params.name, params.arguments or {})

    return Server(
        "rag-orchestrator-knowledge-base",
        version=__version__,
        instructions="Search and ask the knowledge base this service answers from.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )

"""A scripted model strategy and an in-memory knowledge search: the loop runs with no network."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any, ClassVar

from rag_orchestrator.domain.messages import FunctionCall, Message, ToolCall, ToolResult
from rag_orchestrator.domain.passage_formats import format_passages
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.providers import events as se
from rag_orchestrator.providers.strategies import StrategyMetadata
from rag_orchestrator.tools.base import ToolContext
from rag_orchestrator.tools.rag_search import NAME


def call(name: str, arguments: str = "{}", call_id: str | None = None) -> ToolCall:
    return ToolCall(id=call_id or f"call_{name}", function=FunctionCall(name=name, arguments=arguments))


def answer(text: str, *, chunks: int = 1, reasoning: str | None = None, tokens: int = 10) -> list[Any]:
    """One iteration that streams `text` in `chunks` pieces and ends the turn."""
    size = max(1, -(-len(text) // chunks))
    pieces = [text[i : i + size] for i in range(0, len(text), size)] or [""]
    return [
        *(se.ContentChunk(piece) for piece in pieces),
        se.FinalResponse(text, reasoning),
        se.IterationComplete(se.Usage(5, tokens - 5, tokens)),
    ]


def tool_calls(*calls: ToolCall, reasoning: str | None = None, tokens: int = 10) -> list[Any]:
    """One iteration that asks for tool calls."""
    return [
        se.ToolCallsComplete(tuple(calls), "", reasoning),
        se.IterationComplete(se.Usage(5, tokens - 5, tokens)),
    ]


class ScriptedStrategy:
    """Plays one scripted iteration per call and records what it was sent."""

    name = "scripted"
    metadata = StrategyMetadata("scripted", "scripted-model", reasoning=False)

    def __init__(self, iterations: Sequence[list[Any]], *, repeat_last: bool = False) -> None:
        self.iterations = list(iterations)
        self.repeat_last = repeat_last
        self.requests: list[tuple[list[Message], list[dict], se.IterationContext]] = []

    async def run_iteration(
        self, messages: list[Message], tools: list[dict], ctx: se.IterationContext
    ) -> AsyncIterator[Any]:
        self.requests.append((list(messages), list(tools), ctx))
        index = len(self.requests) - 1
        script = (
            self.iterations[min(index, len(self.iterations) - 1)]
            if self.repeat_last
            else self.iterations[index]
        )
        for event in script:
            if isinstance(event, Exception):
                raise event
            if isinstance(event, se.ContentChunk) and not ctx.progressive:
                continue
            yield event
            await asyncio.sleep(0)

    async def aclose(self) -> None:
        return None


class MemorySearchTool:
    """rag_search over a fixed list of passages: every passage whose text shares a word with the query."""

    name = NAME
    description = "Search the knowledge base"
    parameters: ClassVar[dict] = {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    }

    def __init__(self, passages: list[Passage], *, fail: Exception | None = None) -> None:
        self.passages = passages
        self.fail = fail
        self.queries: list[str] = []

    async def search(self, query: str, **_: Any) -> list[Passage]:
        self.queries.append(query)
        if self.fail:
            raise self.fail
        words = {w.lower().strip("?.,") for w in query.split()}
        return [p for p in self.passages if words & {w.lower().strip("?.,") for w in p.text.split()}]

    async def execute(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        passages = await self.search(arguments["query"])
        return ToolResult(
            tool_call_id="",
            tool_name=NAME,
            result=format_passages(passages),
            passages=passages,
        )


def scripted_orchestrator(
    strategy: Any,
    *,
    store: Any = None,
    tools: Sequence[Any] = (),
    search: Any = None,
    settings: Any = None,
    timeout_seconds: float = 5.0,
    after_turn: Sequence[Any] = (),
    attachments: Any = None,
) -> Any:
    """An Orchestrator around `strategy` with no I/O of its own: in-process store, these tools, no
    initial search; its loop configuration from `settings` as the composition root builds it."""
    from rag_orchestrator.api.deps import loop_config
    from rag_orchestrator.config import load_settings
    from rag_orchestrator.conversations.in_process import InProcessStore
    from rag_orchestrator.loop.deps import TurnDeps
    from rag_orchestrator.loop.orchestrator import Orchestrator
    from rag_orchestrator.loop.toolsets import tool_chooser
    from rag_orchestrator.tools.registry import ToolRegistry

    settings = settings or load_settings(
        conversation_storage="memory", loop_initial_rag=False, auth_mode="dev"
    )
    registry = ToolRegistry([*([search] if search else []), *tools], timeout_seconds=timeout_seconds)
    deps = TurnDeps(
        store=store if store is not None else InProcessStore(),
        strategy=strategy,
        tools=registry,
        choose_tools=tool_chooser(registry),
        config=loop_config(settings),
        search=search,
        after_turn=tuple(after_turn),
        attachments=attachments,
    )
    return Orchestrator(deps)

"""The work before a turn's first model call that does not wait for the claim: tools and initial search.

What must stay ordered, and why (bench/README.md, the critical path): the window is read after the claim, which
serialises turns, so it holds every earlier turn's answer; the initial search waits for the chosen
tools (it runs only when rag_search is offered); both of them wait for the message's embedding,
made once per turn. The rest overlaps: the embedding, the tool choice and the search start with the
claim, and the window read runs beside them. Nothing here writes, so a failed claim just cancels it.
"""

from __future__ import annotations

import asyncio
import time

from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.errors import RagError
from rag_orchestrator.loop.deps import TurnDeps
from rag_orchestrator.loop.ports import KnowledgeSearch, Toolset
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.observability import logger
from rag_orchestrator.retrieval.query_vector import QueryVector
from rag_orchestrator.tools.rag_search import NAME as RAG_SEARCH


class Prelude:
    """Started with a question's claim (loop/orchestrator.py), or once a continuation has read its
    question (loop/opening.py); the turn awaits its parts."""

    def __init__(self, deps: TurnDeps, request: TurnRequest) -> None:
        self._request = request
        embedder = deps.embedder
        self.vector = QueryVector(embedder, request.message) if embedder is not None else None
        self.search_timing: tuple[int, int] | None = None  # when the initial search ran, for its span
        self.toolset: asyncio.Task[Toolset] = asyncio.create_task(deps.choose_tools(request, self.vector))
        self.found: asyncio.Task[list[Passage] | None] | None = None
        if deps.config.initial_search and deps.search is not None:
            self.found = asyncio.create_task(self._search(deps.search))

    async def _search(self, search: KnowledgeSearch) -> list[Passage] | None:
        """The initial search's passages, or None when the knowledge base failed; [] when not run."""
        if RAG_SEARCH not in (await asyncio.shield(self.toolset)).names:
            return []
        request, started = self._request, time.time_ns()
        try:
            return await search.search(
                request.message,
                caller_id=request.caller.caller_id,
                conversation_id=request.conversation_id,
                vector=self.vector,
            )
        except RagError as exc:
            logger.warning("initial knowledge search failed", extra={"error": exc.message})
            return None
        finally:
            self.search_timing = (started, time.time_ns())

    def cancel(self) -> None:
        """Stop what is still running (the claim failed, or the turn ended early)."""
        for task in (self.toolset, self.found):
            if task is None:
                continue
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: no one is left to want it
            task.cancel()

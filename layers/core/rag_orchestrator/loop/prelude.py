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
from collections.abc import Sequence

from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.errors import RagError
from rag_orchestrator.loop.deps import TurnDeps
from rag_orchestrator.loop.ports import KnowledgeSearch, Toolset
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.observability import logger
from rag_orchestrator.providers.short_calls import ShortCall
from rag_orchestrator.retrieval.followup import Said, earlier_questions
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
        self.short_calls: list[ShortCall] = []  # the model calls it made (a follow-up condensed)
        self.toolset: asyncio.Task[Toolset] = asyncio.create_task(deps.choose_tools(request, self.vector))
        self.found: asyncio.Task[list[Passage] | None] | None = None
        self._search_with = deps.search if deps.config.initial_search else None
        if self._search_with is not None:
            self.found = asyncio.create_task(self._search(self._search_with))

    def follow_up(self, window: Sequence[Said]) -> None:
        """Once the window is read: a message after earlier questions is searched again with them, as
        the question it means ("And on Saturdays?"); the search of its words alone is dropped."""
        search, found = self._search_with, self.found
        if search is not None and found is not None and earlier_questions(self._request.message, window):
            _drop(found)
            self.found = asyncio.create_task(self._search(search, window))

    async def _search(self, search: KnowledgeSearch, window: Sequence[Said] = ()) -> list[Passage] | None:
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
                history=window,
                calls=self.short_calls,
            )
        except RagError as exc:
            logger.warning("initial knowledge search failed", extra={"error": exc.message})
            return None
        finally:
            self.search_timing = (started, time.time_ns())

    def cancel(self) -> None:
        """Stop what is still running (the claim failed, or the turn ended early)."""
        for task in (self.toolset, self.found):
            if task is not None:
                _drop(task)


def _drop(task: asyncio.Task) -> None:
    if task.done() and not task.cancelled():
        task.exception()  # retrieved: no one is left to want it
    task.cancel()

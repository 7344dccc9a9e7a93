"""ActiveTurn's start (loop/turn.py): the window and the tools, and the initial search's passages,
as the prelude (loop/prelude.py) started them beside the claim."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from rag_orchestrator.conversations.turn_data import TurnContext
from rag_orchestrator.domain.passage_formats import format_passages
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.loop.approvals import resumed_request
from rag_orchestrator.loop.ports import Toolset
from rag_orchestrator.loop.prelude import Prelude

if TYPE_CHECKING:
    from rag_orchestrator.loop.control import TurnControl
    from rag_orchestrator.loop.orchestrator import Orchestrator
    from rag_orchestrator.loop.ports import TurnRequest
    from rag_orchestrator.loop.record import TurnRecord


class TurnStart:
    """ActiveTurn's part that reads what the first model call needs."""

    if TYPE_CHECKING:  # what ActiveTurn, which this is a part of, provides
        o: Orchestrator
        request: TurnRequest
        control: TurnControl
        prelude: Prelude | None
        record: TurnRecord

    async def _read(self) -> tuple[TurnContext, Toolset]:
        """The window and the tools; a continuation first reads the question it goes on answering."""
        if self.prelude is not None:
            return await self.control.wait(self._context_and_tools())
        window = self.o.settings.conversation_rolling_window
        context = await self.control.wait(self.o.store.context(self.request.conversation_id, window))
        self.request = resumed_request(self.request, context.messages)
        self.prelude = Prelude(self.o, self.request)
        return context, await self.control.wait(self.prelude.toolset)

    async def _context_and_tools(self) -> tuple[TurnContext, Toolset]:
        """The window, read beside the tool choice (and search) the prelude started with the claim."""
        window = self.o.store.context(
            self.request.conversation_id, self.o.settings.conversation_rolling_window
        )
        assert self.prelude is not None  # only called with one
        return await asyncio.gather(window, self.prelude.toolset)

    async def _initial_search(self, found: asyncio.Task[list[Passage] | None]) -> str | None:
        passages = await self.control.wait(found)
        if passages is None:
            return None
        self.record.remember(passages)
        return format_passages(passages) if passages else ""

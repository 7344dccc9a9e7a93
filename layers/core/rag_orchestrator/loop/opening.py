"""A turn's opening phase: the window and the tools, and the initial search's passages, as the prelude
(loop/prelude.py) started them beside the claim; a continuation first reads the question it goes on
answering, then starts its prelude."""

from __future__ import annotations

import asyncio
from typing import assert_never

from rag_orchestrator.conversations.turn_data import TurnContext
from rag_orchestrator.domain.attachments import citation_document
from rag_orchestrator.domain.passage_formats import format_passages
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.loop.approvals import resumed_request
from rag_orchestrator.loop.deps import TurnDeps
from rag_orchestrator.loop.ports import Toolset
from rag_orchestrator.loop.prelude import Prelude
from rag_orchestrator.loop.state import TurnState
from rag_orchestrator.loop.steps import Continuation, Question

ATTACHMENT = citation_document("")  # the documentId prefix of attachments' segments


async def open_turn(deps: TurnDeps, state: TurnState) -> tuple[TurnContext, Toolset]:
    """The window and the tools the first model call needs."""
    window = deps.store.context(state.request.conversation_id, deps.config.window)
    match state.opening:
        case Question():
            prelude = state.prelude
            assert prelude is not None  # a question's starts with its claim
            # The toolset is a task already running beside the read: awaiting one after the other
            # overlaps them as a gather would, without the gather's task for the read.
            return await state.control.wait(window), await state.control.wait(prelude.toolset)
        case Continuation():
            context = await state.control.wait(window)
            state.request = resumed_request(state.request, context.messages)
            state.prelude = Prelude(deps, state.request)
            return context, await state.control.wait(state.prelude.toolset)
        case _:
            assert_never(state.opening)


async def initial_search(state: TurnState, found: asyncio.Task[list[Passage] | None]) -> str | None:
    """The passages the prelude's search found, kept as the turn's and formatted for the model; None
    when the knowledge base failed, "" when it found nothing."""
    passages = await state.control.wait(found)
    if state.prelude is not None:  # the model calls the search made count as the turn's
        for call in state.prelude.short_calls:
            state.record.count(call.usage)
    if passages is None:
        return None
    if not state.request.memory:  # a temporary chat: the search began before the window said so
        passages = [p for p in passages if p.kind is None and not p.document_id.startswith(ATTACHMENT)]
    state.record.remember(passages)
    return format_passages(passages) if passages else ""

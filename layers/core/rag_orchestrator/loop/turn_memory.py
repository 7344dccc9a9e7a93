"""Conversation memory's after-turn work: a turn that answered becomes one question-and-answer fragment.

Turns that failed, were interrupted, stopped without an answer or belong to an anonymous caller (a
guest, whose conversations expire and who is offered no rag_search) are not indexed.
"""

from __future__ import annotations

import asyncio
import time

from rag_orchestrator.domain.events import FinishReason
from rag_orchestrator.errors import RagError
from rag_orchestrator.loop.record import TurnRecord
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.observability import logger
from rag_orchestrator.retrieval.fragments import Fragment, FragmentIndex, conversation_fragment

ANSWERED: tuple[FinishReason, ...] = ("stop", "max_iterations")


def turn_fragment(request: TurnRequest, record: TurnRecord) -> Fragment | None:
    """The fragment of a turn that answered, else None."""
    if record.failure is not None or record.finish_reason not in ANSWERED or request.caller.anonymous:
        return None
    answer = next((m for m in record.pending if m.message_id == record.message_id), None)
    if answer is None or not answer.content.strip() or not request.message.strip():
        return None
    return conversation_fragment(
        conversation_id=request.conversation_id,
        caller_id=request.caller.caller_id,
        message_id=answer.message_id,
        question=request.message,
        answer=answer.content,
        created_at=answer.created_at,
    )


class TurnMemory:
    """The AfterTurn hook that indexes a turn's fragment; Chroma being down costs the memory, not the turn."""

    def __init__(self, index: FragmentIndex) -> None:
        self.index = index

    async def __call__(self, request: TurnRequest, record: TurnRecord) -> None:
        fragment = turn_fragment(request, record)
        if fragment is None:
            return
        started = time.perf_counter()
        # A regenerate or an edit: the answers it superseded are no longer anyone's memory.
        gone = [s.message_id for s in record.superseded]
        try:
            if gone:
                await asyncio.to_thread(self.index.forget_messages, gone)
            await asyncio.to_thread(self.index.add, [fragment])
        except RagError as exc:
            logger.warning(
                "turn not remembered",
                extra={"conversation_id": request.conversation_id, "error": exc.message},
            )
            return
        logger.info(
            "turn remembered",
            extra={
                "conversation_id": request.conversation_id,
                "ms": round((time.perf_counter() - started) * 1000, 1),
            },
        )

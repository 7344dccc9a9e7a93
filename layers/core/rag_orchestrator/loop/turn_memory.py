"""Conversation memory's after-turn work: a turn that answered becomes two fragments, what the user
said and the answer; a regenerate or an edit first forgets the exchange it replaced.

Turns that failed, were interrupted, stopped without an answer, belong to an anonymous caller (a
guest, whose conversations expire and who is offered no rag_search) or to a temporary chat are not
indexed.
"""

from __future__ import annotations

import asyncio
import time

from rag_orchestrator.domain.events import FinishReason
from rag_orchestrator.errors import RagError
from rag_orchestrator.loop.record import TurnRecord
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.observability import logger
from rag_orchestrator.retrieval.fragments import Fragment, FragmentIndex, conversation_fragments
from rag_orchestrator.retrieval.memory_switch import Conversations, still_remembered

ANSWERED: tuple[FinishReason, ...] = ("stop", "max_iterations")


def turn_fragments(request: TurnRequest, record: TurnRecord) -> list[Fragment]:
    """The fragments of a turn that answered, else none."""
    if (
        record.failure is not None
        or record.finish_reason not in ANSWERED
        or request.caller.anonymous
        or not request.memory
    ):
        return []
    answer = next((m for m in record.pending if m.message_id == record.message_id), None)
    if answer is None or not answer.content.strip() or not request.message.strip():
        return []
    return conversation_fragments(
        conversation_id=request.conversation_id,
        caller_id=request.caller.caller_id,
        message_id=answer.message_id,
        question=request.message,
        answer=answer.content,
        created_at=answer.created_at,
    )


class TurnMemory:
    """The AfterTurn hook that indexes a turn's fragments; Chroma being down costs the memory, not the turn.

    The turn read its conversation's memory switch when it started; the conversation may since have been
    deleted, made a temporary chat or erased with its caller, each of which forgets its fragments. So
    once the fragments are added the conversation is read again (one consistent read): if it is gone or
    no longer remembered, they are forgotten at once, whichever came first, the add or the forgetting."""

    def __init__(self, index: FragmentIndex, conversations: Conversations) -> None:
        self.index = index
        self.conversations = conversations

    async def __call__(self, request: TurnRequest, record: TurnRecord) -> None:
        # A regenerate or an edit: the exchange it superseded is no longer anyone's memory.
        gone = [s.message_id for s in record.superseded]
        fragments = turn_fragments(request, record)
        if not fragments and not gone:
            return
        started = time.perf_counter()
        try:
            if gone:
                await asyncio.to_thread(self.index.forget_messages, gone)
            if fragments:
                await asyncio.to_thread(self.index.add, fragments)
                caller_id = request.caller.caller_id  # deleted, made temporary or erased meanwhile?
                if not await still_remembered(self.conversations, request.conversation_id, caller_id):
                    await asyncio.to_thread(
                        self.index.forget_messages, sorted({f.message_id for f in fragments if f.message_id})
                    )
                    logger.info("turn not remembered: its conversation is gone or temporary")
                    return
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
                "fragments": len(fragments),
                "ms": round((time.perf_counter() - started) * 1000, 1),
            },
        )

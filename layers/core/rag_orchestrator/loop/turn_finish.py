"""ActiveTurn's end (loop/turn.py): the turn's messages, audit record and budget stored in the one
write that releases its lock, and the after-turn hooks once that is done."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from rag_orchestrator.conversations.turn_data import TurnContext, TurnOutcome
from rag_orchestrator.conversations.versions import Revision
from rag_orchestrator.domain.budgets import Spend
from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.loop.after_turn import run_after_turn
from rag_orchestrator.loop.ports import TurnRequest
from rag_orchestrator.loop.record import TurnRecord
from rag_orchestrator.observability import logger

if TYPE_CHECKING:
    from rag_orchestrator.loop.orchestrator import Orchestrator


class TurnFinish:
    """ActiveTurn's part that stores what the turn produced."""

    if TYPE_CHECKING:  # what ActiveTurn, which this is a part of, provides
        o: Orchestrator
        request: TurnRequest
        question: ConversationMessage | None
        revision: Revision
        spend: Spend | None
        record: TurnRecord
        context: TurnContext | None
        _finished: bool

    async def after(self) -> None:
        """The after-turn hooks (loop/after_turn.py), once the turn has ended; nothing before."""
        if self._finished:
            await run_after_turn(self.o.after_turn, self.request, self.record)

    async def _finish(self, *, interrupted: bool) -> None:
        """Persist what the turn produced and release the lock, once, even while being cancelled."""
        if self._finished:
            return
        self._finished = True
        answer, revision = self.record.message_id, self.revision
        stored = revision.stored(self.record.to_store(interrupted), answer)
        self.record.superseded = revision.superseded(answer)
        with anyio.CancelScope(shield=True):
            try:
                model = self.o.strategy.metadata.model
                audit = self.record.audit(
                    self.request, self.question, stored, model=model, interrupted=interrupted
                )
                outcome = TurnOutcome(
                    stored,
                    tool_calls=sum(len(m.tool_calls or ()) for m in stored),
                    tokens=self.record.tokens + revision.question_tokens(answer),
                    interrupted=interrupted,
                    audit=revision.audited(audit, answer),
                    context=self.context,
                    supersede=self.record.superseded,
                    held=self.record.held,
                    decided=self.record.decided if self.question is None else None,
                    spend=self.spend,
                )
                await self.o.store.finish_turn(self.request.conversation_id, outcome)
            except Exception:
                logger.exception("could not record the turn; releasing the lock")
                await self.o.store.abort_turn(self.request.conversation_id)
                if self.spend is not None and self.spend.reserve:
                    await self.o.store.release(self.spend)

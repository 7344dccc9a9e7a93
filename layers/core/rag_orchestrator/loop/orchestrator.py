"""The Orchestrator: claims a turn and hands back the Turn (loop/turn.py) that runs it.

Each claim — `begin()` for a new question, `decide()` for the decision on a held call, `revise()` for
a regenerate or an edit of the last exchange — checks what the request names and takes the
conversation's turn lock, so it raises 404/409/429 before any event is sent. It holds nothing but the
turn's dependencies (loop/deps.py); each Turn gets them with a state of its own.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from rag_orchestrator.conversations.turn_data import Claim
from rag_orchestrator.domain.approvals import Decision
from rag_orchestrator.domain.budgets import Spend
from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.errors import RagError
from rag_orchestrator.loop.attachments import AttachmentReading
from rag_orchestrator.loop.control import TurnControl
from rag_orchestrator.loop.deps import TurnDeps
from rag_orchestrator.loop.prelude import Prelude
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.loop.state import TurnState
from rag_orchestrator.loop.steps import Continuation, Question
from rag_orchestrator.loop.turn import Turn
from rag_orchestrator.observability import logger


class Orchestrator:
    def __init__(self, deps: TurnDeps) -> None:
        self.deps = deps

    async def begin(self, request: TurnRequest) -> Turn:
        """Store the user message and take the turn lock; raises ConversationNotFound, Conflict,
        ApprovalPending or BudgetExhausted (and, checked first, AttachmentNotFound or
        AttachmentNotReady)."""
        deps = self.deps
        attachments = await AttachmentReading.check(deps.attachments, request)
        control, spend = self._control(request), self._spend(request)
        user = ConversationMessage.of(
            request.conversation_id,
            Message(role=Role.USER, content=request.message),
            client_message_id=request.client_message_id,
            metadata=request.metadata,
            attachment_ids=list(request.attachment_ids),
        )
        prelude = Prelude(deps, request)  # runs beside the claim (loop/prelude.py)
        try:
            claim = self._claim(request, control)
            expired = await deps.store.start_turn(claim, user, request.client_message_id, spend)
        except BaseException:
            prelude.cancel()
            raise
        opening = Question(user, decided=expired)
        state = TurnState(request, opening, control, attachments, spend=spend, prelude=prelude)
        return Turn(deps, state)

    async def decide(
        self, request: TurnRequest, approval_id: str, decision: Decision, reason: str | None
    ) -> Turn:
        """Take a held call's decision and the turn lock; the turn returned continues with it.

        Raises BudgetExhausted (its hold taken first: one more request, only with a limit),
        ApprovalNotFound, ApprovalClosed or Conflict."""
        control, spend = self._control(request), self._spend(request)
        async with self._holding(spend):
            claim = self._claim(request, control)
            decided = await self.deps.store.decide_approval(claim, approval_id, decision, reason)
        held = decided.held
        request = dataclasses.replace(request, context_type=held.context_type, context=held.context)
        none_attached = AttachmentReading(self.deps.attachments, [])
        return Turn(self.deps, TurnState(request, Continuation(decided), control, none_attached, spend=spend))

    async def revise(self, request: TurnRequest, message_id: str, *, edit: bool) -> Turn:
        """Take the turn lock for the last exchange, which `message_id` names (conversations/versions.py);
        with `edit`, `request.message` replaces its question. Stores nothing yet: an edit's new
        question is stored with the answer, and the exchange it replaces is superseded in that same
        write. Raises 404 or 409 before any event is sent."""
        deps = self.deps
        control, spend = self._control(request), self._spend(request)
        new_question, attachments = None, None
        if edit:  # the new question's files are checked before anything is claimed, as in begin()
            attachments = await AttachmentReading.check(deps.attachments, request)
            new_question = ConversationMessage.of(
                request.conversation_id,
                Message(role=Role.USER, content=request.message),
                metadata=request.metadata,
                attachment_ids=list(request.attachment_ids),
            )
        async with self._holding(spend):  # a revision spends like any turn (docs/usage.md)
            claim = self._claim(request, control)
            revision = await deps.store.start_revision(claim, message_id, new_question)
        question = revision.question
        assert question is not None  # a revision always answers a question
        ids = tuple(question.attachment_ids or ())
        answering = dataclasses.replace(request, message=question.content, attachment_ids=ids)
        if not edit:
            try:  # a regenerated question keeps its files, checked now that the lock is held
                attachments = await AttachmentReading.check(deps.attachments, answering)
            except RagError as exc:
                logger.warning("a revised question's attachments are gone", extra={"error": exc.message})
                attachments = None  # answer the question without them rather than hold the lock
        state = TurnState(
            answering,
            Question(question, revision),
            control,
            attachments or AttachmentReading(deps.attachments, []),
            spend=spend,
            prelude=Prelude(deps, answering),
        )
        return Turn(deps, state)

    def _control(self, request: TurnRequest) -> TurnControl:
        return TurnControl(request.deadline or time.time() + self.deps.config.default_seconds)

    def _claim(self, request: TurnRequest, control: TurnControl) -> Claim:
        """The caller's claim of the turn lock, held to the turn's deadline and the margin."""
        lease = control.lease_seconds(self.deps.config.lease_margin_seconds)
        return Claim(request.conversation_id, request.caller.caller_id, lease)

    def _spend(self, request: TurnRequest) -> Spend | None:
        config = self.deps.config
        return Spend.counted(request.caller, config.budgets, config.reserve_tokens)

    @asynccontextmanager
    async def _holding(self, spend: Spend | None) -> AsyncIterator[None]:
        """Reserve a limited turn's share of the caller's day in its own write (a turn whose claim
        cannot carry it: a decision's or a revision's), given back if the claim in the block is
        refused; BudgetExhausted at the limit."""
        held = spend if spend is not None and spend.limited else None
        store = self.deps.store
        if held is not None:
            await store.reserve(held)
        try:
            yield
        except Exception:
            if held is not None:
                await store.release(held)
            raise

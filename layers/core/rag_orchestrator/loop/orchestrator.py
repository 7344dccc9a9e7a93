"""The Orchestrator: the parts a turn needs, and `begin()`, which claims a turn.

`begin()` checks the attachments the request names, stores the user message and takes the
conversation's turn lock, so it raises 404/409 before any event is sent; the ActiveTurn it returns
(loop/turn.py) runs the turn.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from rag_orchestrator.config import Settings
from rag_orchestrator.conversations.store import TurnStore
from rag_orchestrator.domain.approvals import Decision
from rag_orchestrator.domain.budgets import Spend
from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.loop.attachments import AttachmentReading
from rag_orchestrator.loop.control import TurnControl
from rag_orchestrator.loop.finalizers import DirectFinalizer, Finalizer
from rag_orchestrator.loop.ports import (
    AfterTurn,
    AttachmentSource,
    KnowledgeSearch,
    ToolChooser,
    Tools,
    TurnRequest,
)
from rag_orchestrator.loop.prelude import Prelude
from rag_orchestrator.loop.turn import ActiveTurn
from rag_orchestrator.providers.strategies import ModelStrategy
from rag_orchestrator.retrieval.embedders import Embedder


class Orchestrator:
    def __init__(
        self,
        *,
        store: TurnStore,
        strategy: ModelStrategy,
        tools: Tools,
        settings: Settings,
        choose_tools: ToolChooser,
        search: KnowledgeSearch | None = None,
        finalizer: Finalizer | None = None,
        after_turn: Sequence[AfterTurn] = (),
        attachments: AttachmentSource | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.store = store
        self.strategy = strategy
        self.tools = tools
        self.settings = settings
        self.choose_tools = choose_tools
        self.search = search
        self.finalizer = finalizer or DirectFinalizer()
        self.after_turn = tuple(after_turn)
        self.attachments = attachments
        self.embedder = embedder  # embeds the message once for tool selection and search

    async def begin(self, request: TurnRequest) -> ActiveTurn:
        """Store the user message and take the turn lock; raises ConversationNotFound, Conflict,
        ApprovalPending or BudgetExhausted (and, checked first, AttachmentNotFound or
        AttachmentNotReady)."""
        attachments = await AttachmentReading.check(self.attachments, request)
        control = self.control(request)
        spend = self.spend(request)
        user = ConversationMessage.of(
            request.conversation_id,
            Message(role=Role.USER, content=request.message),
            client_message_id=request.client_message_id,
            metadata=request.metadata,
            attachment_ids=list(request.attachment_ids),
        )
        prelude = Prelude(self, request)  # runs beside the claim (loop/prelude.py)
        try:
            expired = await self.store.start_turn(
                request.conversation_id,
                request.caller.caller_id,
                user,
                request.client_message_id,
                lease_seconds=control.lease_seconds(self.settings.turn_deadline_margin_seconds),
                spend=spend,
            )
        except BaseException:
            prelude.cancel()
            raise
        return ActiveTurn(self, request, user, control, prelude, attachments, spend=spend, decided=expired)

    async def decide(
        self, request: TurnRequest, approval_id: str, decision: Decision, reason: str | None
    ) -> ActiveTurn:
        """Take a held call's decision and the turn lock; the turn returned continues with it.

        Raises BudgetExhausted (its hold taken first: one more request, only with a limit),
        ApprovalNotFound, ApprovalClosed or Conflict."""
        control, spend = self.control(request), self.spend(request)
        async with self.holding(spend):
            decided = await self.store.decide_approval(
                request.conversation_id,
                approval_id,
                request.caller.caller_id,
                decision,
                reason,
                lease_seconds=control.lease_seconds(self.settings.turn_deadline_margin_seconds),
            )
        held = decided.held
        request = dataclasses.replace(request, context_type=held.context_type, context=held.context)
        return ActiveTurn(self, request, None, control, None, spend=spend, decided=decided)

    def control(self, request: TurnRequest) -> TurnControl:
        return TurnControl(request.deadline or time.time() + self.settings.turn_default_budget_seconds)

    def spend(self, request: TurnRequest) -> Spend | None:
        """Where the turn's tokens count: nowhere while no budget is configured (a guest's always)."""
        budgets = self.settings.budgets
        reserve = self.settings.budget_turn_reserve_tokens
        return Spend.today(request.caller, budgets, reserve) if budgets.counts(request.caller) else None

    @asynccontextmanager
    async def holding(self, spend: Spend | None) -> AsyncIterator[None]:
        """Reserve a limited turn's share of the caller's day in its own write (a turn whose claim
        cannot carry it: a decision's or a revision's), given back if the claim in the block is
        refused; BudgetExhausted at the limit."""
        held = spend if spend is not None and spend.limited else None
        if held is not None:
            await self.store.reserve(held)
        try:
            yield
        except Exception:
            if held is not None:
                await self.store.release(held)
            raise

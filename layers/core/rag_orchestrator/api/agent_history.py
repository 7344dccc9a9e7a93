"""A turn of the stateless agent chat (api/agent_chat.py): the loop's store port over the client's history.

The window is the history the client sent, with the turn's question after it; no conversation is kept.
What the turn leaves is its audit record and its tokens: when it ends, they are written through the
conversation store's own methods, under the request's id, into a conversation made for them and
deleted at once — never listed or readable, its audit records kept and purged like any deleted
conversation's (docs/audit.md), read by an auditor with `GET /api/v1/admin/audit?conversationId=`.
Tools that need an approval are not offered: a decision needs a conversation to come back to.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol

from rag_orchestrator.conversations.store import ConversationStore
from rag_orchestrator.conversations.turn_data import Claim, TurnContext, TurnOutcome
from rag_orchestrator.conversations.versions import Revision
from rag_orchestrator.domain.approvals import Decision, Resolution
from rag_orchestrator.domain.budgets import Spend
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import Conversation, ConversationMessage
from rag_orchestrator.errors import ApprovalNotFound, Conflict
from rag_orchestrator.loop.orchestrator import Orchestrator
from rag_orchestrator.loop.ports import ToolChooser, Tools, Toolset, TurnStore
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.retrieval.query_vector import QueryVector

STATELESS = {"route": "/api/v1/agent/chat"}  # the metadata of the conversation an audit record is kept in


class KeepingStore(ConversationStore, TurnStore, Protocol):
    """The store's parts a stateless turn writes through: a conversation made and deleted, a turn's outcome."""


class ClientHistory:
    """The TurnStore of one stateless turn: reads from the client's history, writes only audit and usage."""

    def __init__(self, store: KeepingStore, caller: Caller, history: Sequence[ConversationMessage]) -> None:
        self._store = store
        self._caller = caller
        self._messages = list(history)

    async def start_turn(
        self,
        claim: Claim,
        user_message: ConversationMessage,
        client_message_id: str | None = None,
        spend: Spend | None = None,
    ) -> Resolution | None:
        """No lock to take: a limited caller's reserve is held on their day (429 at the limit)."""
        if spend is not None and spend.limited:
            await self._store.reserve(spend)
        self._messages.append(user_message)
        return None

    async def decide_approval(
        self, claim: Claim, approval_id: str, decision: Decision, reason: str | None
    ) -> Resolution:
        raise ApprovalNotFound(approval_id)

    async def start_revision(
        self, claim: Claim, message_id: str, edit: ConversationMessage | None
    ) -> Revision:
        raise Conflict("A stateless chat has no earlier answer to revise")

    async def context(self, conversation_id: str, size: int) -> TurnContext:
        # `titled`: no title is ever made for it.
        return TurnContext(messages=self._messages[-size:], owner=self._caller.caller_id, titled=True)

    async def finish_turn(self, conversation_id: str, outcome: TurnOutcome) -> None:
        """The audit record and the tokens, in a conversation that holds no message and is deleted."""
        owner = self._caller.caller_id
        await self._store.create(
            Conversation(conversation_id=conversation_id, caller_id=owner, metadata=STATELESS)
        )
        kept = TurnOutcome(
            tool_calls=outcome.tool_calls, tokens=outcome.tokens, audit=outcome.audit, spend=outcome.spend
        )
        await self._store.finish_turn(conversation_id, kept)
        await self._store.soft_delete(conversation_id, owner)

    async def abort_turn(self, conversation_id: str) -> None:
        """Nothing was locked."""

    async def reserve(self, spend: Spend) -> None:
        await self._store.reserve(spend)

    async def release(self, spend: Spend) -> None:
        await self._store.release(spend)


def without_approvals(choose: ToolChooser, tools: Tools) -> ToolChooser:
    """The tools `choose` offers, less those that need an approval."""

    async def chosen(request: TurnRequest, vector: QueryVector | None = None) -> Toolset:
        offered = await choose(request, vector)
        names = [name for name in offered.names if not getattr(tools.get(name), "approval_required", False)]
        return Toolset(names=names, definitions=tools.definitions(names), system_prompt=offered.system_prompt)

    return chosen


def stateless(orchestrator: Orchestrator, history: ClientHistory) -> Orchestrator:
    """The orchestrator's parts over the client's history: no after-turn work (no title, no memory)."""
    deps = orchestrator.deps
    return Orchestrator(
        dataclasses.replace(
            deps,
            store=history,
            choose_tools=without_approvals(deps.choose_tools, deps.tools),
            after_turn=(),
            attachments=None,
        )
    )

"""What the loop needs from the rest of the system, as Protocols: the store, the tools, the knowledge
search, the after-turn hooks, the attachments.

The composition root (api/deps.py) wires the real parts (loop/deps.py holds them); tests and
benchmarks wire scripted ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rag_orchestrator.conversations.turn_data import Claim, TurnContext, TurnOutcome
from rag_orchestrator.conversations.versions import Revision
from rag_orchestrator.domain.approvals import Decision, Resolution
from rag_orchestrator.domain.attachments import Attachment
from rag_orchestrator.domain.budgets import Spend
from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.fences import Fence
from rag_orchestrator.domain.messages import ToolCall, ToolResult
from rag_orchestrator.domain.passages import Passage
from rag_orchestrator.loop.record import TurnRecord
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.providers.short_calls import ShortCall
from rag_orchestrator.retrieval.followup import Said
from rag_orchestrator.retrieval.query_vector import QueryVector
from rag_orchestrator.tools.base import Tool, ToolContext


@dataclass(frozen=True)
class Toolset:
    """The tools offered for one turn, with the system prompt that goes with them and the turn's
    fence for untrusted text, which that prompt names."""

    names: list[str]
    definitions: list[dict[str, Any]]
    system_prompt: str
    fence: Fence = field(default_factory=Fence)


class TurnStore(Protocol):
    """What a turn needs of the conversation store (both stores provide it: conversations/dynamo.py,
    conversations/in_process.py). Every claim takes the turn lock for `claim.lease_seconds`."""

    async def start_turn(
        self,
        claim: Claim,
        user_message: ConversationMessage,
        client_message_id: str | None = None,
        spend: Spend | None = None,
    ) -> Resolution | None:
        """Check ownership, take the turn lock, store the user message, in one write; with a limited
        `spend`, check the caller's day is under its limit in the same write.

        Raises ConversationNotFound, DuplicateClientMessage, BudgetExhausted, ApprovalPending while a
        tool call waits for a decision, or Conflict while another turn runs. A held call that expired
        is answered as denied before the message: its Resolution is returned.
        """
        ...

    async def decide_approval(
        self, claim: Claim, approval_id: str, decision: Decision, reason: str | None
    ) -> Resolution:
        """Take the held call and the turn lock, in one write: of two decisions one wins.

        Raises ApprovalNotFound (unknown, another caller's) or ApprovalClosed (decided, expired).
        """
        ...

    async def start_revision(
        self, claim: Claim, message_id: str, edit: ConversationMessage | None
    ) -> Revision:
        """Take the turn lock for a regenerate (`edit` None) or an edit of the last exchange, which
        `message_id` names; stores nothing. Raises ConversationNotFound, MessageNotFound,
        NotLastExchange, or Conflict while another turn runs (conversations/versions.py)."""
        ...

    async def context(self, conversation_id: str, size: int) -> TurnContext:
        """The newest `size` messages, oldest first, with the conversation's audit head and owner, in
        one read; no ownership check (the claim's)."""
        ...

    async def finish_turn(self, conversation_id: str, outcome: TurnOutcome) -> None:
        """Store what the turn produced and release the lock, in one write (conversations/turn_data.py)."""
        ...

    async def abort_turn(self, conversation_id: str) -> None:
        """Release the turn lock only (the turn failed before anything worth keeping)."""
        ...

    async def reserve(self, spend: Spend) -> None:
        """Hold the turn's reserve of a limited caller's day, in one write; BudgetExhausted at the limit.
        (start_turn holds it itself: this is for a decision's continuation and a revision.)"""
        ...

    async def release(self, spend: Spend) -> None:
        """Let go of a hold taken by a turn that stores nothing (it failed, or its claim was refused)."""
        ...


class Tools(Protocol):
    """The tool registry (tools/registry.py): definitions for the model, execution that never raises."""

    def get(self, name: str) -> Tool | None: ...

    def definitions(self, names: Iterable[str] | None = None) -> list[dict[str, Any]]: ...

    async def execute_all(
        self, calls: Sequence[ToolCall], ctx: ToolContext, allowed: Iterable[str] | None = None
    ) -> list[ToolResult]: ...


class KnowledgeSearch(Protocol):
    """The initial knowledge search before the first model call (LOOP_INITIAL_RAG), as rag_search for the caller."""

    async def search(
        self,
        query: str,
        *,
        caller_id: str | None = None,
        conversation_id: str | None = None,
        vector: QueryVector | None = None,
        history: Sequence[Said] = (),  # the conversation before the message (a follow-up's meaning)
        calls: list[ShortCall] | None = None,  # the model calls made for the search, appended
    ) -> list[Passage]: ...


class AfterTurn(Protocol):
    """Work once a turn's terminal event is out (conversation memory, titles): off the client's path."""

    async def __call__(self, request: TurnRequest, record: TurnRecord) -> None: ...


class ToolChooser(Protocol):
    """Picks the tools and the system prompt for a turn (loop/toolsets.py)."""

    async def __call__(self, request: TurnRequest, vector: QueryVector | None = None) -> Toolset: ...


class AttachmentSource(Protocol):
    """The attachments a turn names (attachments/turns.py): checked before anything is written, read in the turn."""

    async def check(
        self, caller_id: str, conversation_id: str, attachment_ids: Sequence[str]
    ) -> list[Attachment]: ...

    async def read(self, attachment: Attachment) -> Attachment: ...

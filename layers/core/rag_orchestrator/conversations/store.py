"""The ConversationStore contract and what its implementations share.

Methods are coroutines. The DynamoDB store runs each in a worker thread (boto3 blocks); the memory
store never waits, so it runs on the event loop. Ownership is part of every read and write: a
missing, DELETED or another caller's conversation raises the same ConversationNotFound. What a
store returns is the caller's own, as is what it was given: changing either afterwards changes
nothing stored.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Concatenate, Protocol

from rag_orchestrator.conversations.listing import EVERY, Listing
from rag_orchestrator.conversations.paging import DEFAULT_PAGE_SIZE
from rag_orchestrator.conversations.versions import Revision, Superseded
from rag_orchestrator.domain.approvals import Decision, HeldCall, Resolution
from rag_orchestrator.domain.audit import AuditTrail
from rag_orchestrator.domain.budgets import Spend
from rag_orchestrator.domain.conversations import Conversation, ConversationMessage, Page
from rag_orchestrator.domain.feedback import Feedback, FeedbackEntry, Rating
from rag_orchestrator.domain.messages import Role

LOCK_HELD = "A turn is already running in this conversation"


@dataclass(frozen=True, slots=True)
class TurnContext:
    """What a turn reads at its start, in the window's one request: the newest messages, and from
    the conversation itself what finish_turn needs back (the audit chain's head, the owner)."""

    messages: list[ConversationMessage] = field(default_factory=list)
    audit_head: str | None = None  # the last audit record's hash (GENESIS: none yet); None: not read
    owner: str | None = None
    titled: bool | None = None  # whether the conversation has a title; None: not read


class TurnStore(Protocol):
    """What a turn needs: the loop's view of the store."""

    async def start_turn(
        self,
        conversation_id: str,
        caller_id: str,
        user_message: ConversationMessage,
        client_message_id: str | None,
        lease_seconds: int,
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
        self,
        conversation_id: str,
        approval_id: str,
        caller_id: str,
        decision: Decision,
        reason: str | None,
        lease_seconds: int,
    ) -> Resolution:
        """Take the held call and the turn lock, in one write: of two decisions one wins.

        Raises ApprovalNotFound (unknown, another caller's) or ApprovalClosed (decided, expired).
        """
        ...

    async def window(self, conversation_id: str, size: int) -> list[ConversationMessage]:
        """The newest `size` messages, oldest first, in one read; no ownership check (start_turn's)."""
        ...

    async def context(self, conversation_id: str, size: int) -> TurnContext:
        """The window, with the conversation's audit head and owner, in the same one read."""
        ...

    async def finish_turn(
        self,
        conversation_id: str,
        messages: Sequence[ConversationMessage],
        *,
        tool_calls: int,
        tokens: int,
        interrupted: bool = False,
        audit: dict[str, Any] | None = None,
        context: TurnContext | None = None,
        supersede: Sequence[Superseded] = (),
        held: HeldCall | None = None,
        decided: Resolution | None = None,
        spend: Spend | None = None,
    ) -> None:
        """Store the turn's messages and its audit record (sealed onto the chain `context` read),
        mark what they supersede (counted out of messageCount), add its counters and release the
        lock, in one write; in it too the call the turn holds, the decision it acted on, and its
        tokens on the caller's day (`spend`)."""
        ...

    async def usage(self, caller_id: str, day: str) -> int:
        """The tokens the caller's turns used on that UTC day (YYYY-MM-DD), as counted by finish_turn."""
        ...

    async def reserve(self, spend: Spend) -> None:
        """Hold the turn's reserve of a limited caller's day, in one write; BudgetExhausted at the limit.
        (start_turn holds it itself: this is for a decision's continuation.)"""
        ...

    async def release(self, spend: Spend) -> None:
        """Let go of a hold taken by a turn that stores nothing (it failed, or its decision was refused)."""
        ...

    async def start_revision(
        self,
        conversation_id: str,
        caller_id: str,
        message_id: str,
        edit: ConversationMessage | None,
        lease_seconds: int,
    ) -> Revision:
        """Take the turn lock for a regenerate (`edit` None) or an edit of the last exchange, which
        `message_id` names; stores nothing. Raises ConversationNotFound, MessageNotFound,
        NotLastExchange, or Conflict while another turn runs (conversations/versions.py)."""
        ...

    async def abort_turn(self, conversation_id: str) -> None:
        """Release the turn lock only (the turn failed before anything worth keeping)."""
        ...


class ConversationStore(TurnStore, Protocol):
    """Everything the product asks of conversations: the turn's writes and the routes' reads."""

    async def create(
        self, conversation: Conversation, messages: Sequence[ConversationMessage] = ()
    ) -> Conversation:
        """Store a new conversation, with its first messages in the same write."""
        ...

    async def get(self, conversation_id: str, caller_id: str) -> Conversation: ...

    async def list_by_caller(
        self,
        caller_id: str,
        *,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
        where: Listing = EVERY,
    ) -> Page[Conversation]:
        """The caller's conversations, most recently updated first, those `where` keeps."""
        ...

    async def update(
        self,
        conversation_id: str,
        caller_id: str,
        *,
        title: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> Conversation:
        """Replace the title and/or the metadata given; the conversation as it is now."""
        ...

    async def set_auto_title(self, conversation_id: str, title: str) -> bool:
        """Title a conversation that has none yet; False when it has one (set meanwhile, or gone)."""
        ...

    async def messages(
        self,
        conversation_id: str,
        caller_id: str,
        *,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
        all_versions: bool = False,
    ) -> Page[ConversationMessage]:
        """The transcript, oldest first; with an s3Key (archived, maybe continued since) merged from S3.
        Earlier versions (`supersededBy`) only with `all_versions`, in place."""
        ...

    async def set_feedback(
        self, conversation_id: str, caller_id: str, message_id: str, feedback: Feedback | None
    ) -> None:
        """Rate an assistant message of the caller's conversation (None: remove the rating).
        Raises ConversationNotFound, or MessageNotFound for a missing or non-assistant message."""
        ...

    async def feedback(
        self,
        *,
        since: datetime,
        rating: Rating | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
    ) -> Page[FeedbackEntry]:
        """Every caller's ratings given since `since`, newest first (the admin listing)."""
        ...

    async def soft_delete(self, conversation_id: str, caller_id: str) -> None: ...

    async def audit(
        self, conversation_id: str, *, limit: int = DEFAULT_PAGE_SIZE, cursor: str | None = None
    ) -> AuditTrail:
        """The conversation's audit records, oldest first, with the chain checked; whoever owns it,
        deleted or archived included. Raises ConversationNotFound when nothing of it is left."""
        ...


def in_worker_thread[S, **P, T](
    method: Callable[Concatenate[S, P], T],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, T]]:
    """A blocking method as a coroutine that runs it in a worker thread (the event loop never waits)."""

    @functools.wraps(method)
    async def run(self: S, *args: P.args, **kwargs: P.kwargs) -> T:
        return await asyncio.to_thread(method, self, *args, **kwargs)

    return run


def turn_messages(messages: Sequence[ConversationMessage], interrupted: bool) -> list[ConversationMessage]:
    """The messages a turn stores: when interrupted, its last assistant message is marked so."""
    stored = list(messages)
    if interrupted:
        for index in range(len(stored) - 1, -1, -1):
            if stored[index].role is Role.ASSISTANT:
                stored[index] = stored[index].model_copy(update={"interrupted": True})
                break
    return stored


def token_total(messages: Sequence[ConversationMessage]) -> int:
    return sum(m.token_count or 0 for m in messages)

"""What the in-process store keeps, shared by its parts behind one lock: conversations with their
messages, ratings, and callers' days.

Stored models are never changed in place (a change replaces them), so isolating callers needs only
fresh copies of what is mutable in them, in and out: the model itself, `metadata`, `tool_calls`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rag_orchestrator.conversations.cursors import CursorCodec
from rag_orchestrator.domain.approvals import HeldCall
from rag_orchestrator.domain.audit import GENESIS, Sealed
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.budgets import Spend
from rag_orchestrator.domain.conversations import Conversation, ConversationMessage, ConversationStatus
from rag_orchestrator.domain.feedback import FeedbackEntry
from rag_orchestrator.domain.usage import UsageLine
from rag_orchestrator.errors import ConversationNotFound


@dataclass
class StoredConversation:
    conversation: Conversation
    messages: list[ConversationMessage] = field(default_factory=list)
    # clientMessageId -> (messageId, createdAt) of the user message it started
    markers: dict[str, tuple[str, str]] = field(default_factory=dict)
    lock_until: float = 0.0
    audits: list[Sealed] = field(default_factory=list)  # sealed audit records, oldest first
    held: HeldCall | None = None  # the tool call waiting for a decision
    approvals: dict[str, str] = field(default_factory=dict)  # approvalId -> status

    @property
    def audit_head(self) -> str:
        """The last audit record's hash; GENESIS before the first."""
        return self.audits[-1].hash if self.audits else GENESIS

    def add(
        self, messages: Sequence[ConversationMessage], *, tokens: int, tool_calls: int, gone: int = 0
    ) -> None:
        """Append messages (copies) and count them, `gone` earlier versions counted out."""
        now = utcnow()
        current = self.conversation
        self.messages.extend(own_message(m) for m in messages)
        self.conversation = current.model_copy(
            update={
                "updated_at": now,
                "last_message_at": now if messages else current.last_message_at,
                "message_count": current.message_count + len(messages) - gone,
                "total_tokens": current.total_tokens + tokens,
                "tool_calls_count": current.tool_calls_count + tool_calls,
            }
        )


class Shelf:
    """The store's state; every part takes `lock` around what it reads and changes."""

    def __init__(self, cursors: CursorCodec, clock: Callable[[], float]) -> None:
        self.cursors = cursors
        self.clock = clock
        self.actor_key = os.urandom(32)  # audit actorRefs: this process's own, like everything here
        self.records: dict[str, StoredConversation] = {}
        self.ratings: dict[tuple[str, str], FeedbackEntry] = {}  # (conversationId, messageId)
        self.days: dict[tuple[str, str], list[int]] = {}  # (callerId, day) -> [used, committed]
        self.ledger: dict[tuple[str, str, str], UsageLine] = {}  # (day, callerId, model), as ledger.py
        self.lock = threading.Lock()

    def owned(self, conversation_id: str, caller_id: str) -> StoredConversation:
        record = self.records.get(conversation_id)
        if (
            record is None
            or record.conversation.caller_id != caller_id
            or record.conversation.status is ConversationStatus.DELETED
        ):
            raise ConversationNotFound(conversation_id)
        return record

    def settle(self, spend: Spend, used: int, committed: int) -> None:
        """Add to [used, committed] of each of the spend's meters' days (the caller's; all guests' too
        for a guest)."""
        for meter in spend.meters():
            day = self.days.setdefault((meter.owner, spend.day), [0, 0])
            day[0] += used
            day[1] += committed


def own_message(message: ConversationMessage) -> ConversationMessage:
    """A copy of `message` that shares nothing mutable with it (cheaper than a deep copy)."""
    if message.tool_calls is None:
        return message.model_copy()
    calls = [c.model_copy(update={"function": c.function.model_copy()}) for c in message.tool_calls]
    return message.model_copy(update={"tool_calls": calls})


def own_conversation(conversation: Conversation) -> Conversation:
    return conversation.model_copy(update={"metadata": dict(conversation.metadata)})

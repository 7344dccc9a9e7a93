"""What a turn hands the store when it claims the turn lock (Claim), reads at its start (TurnContext)
and stores at its end (TurnOutcome), and what both stores count the same way.

The values a turn builds are not frozen dataclasses: a frozen one's __init__ pays an
object.__setattr__ per field, on every turn (the loop benchmark, bench/README.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_orchestrator.conversations.versions import Superseded
from rag_orchestrator.domain.approvals import HeldCall, Resolution
from rag_orchestrator.domain.budgets import Spend
from rag_orchestrator.domain.conversations import Conversation, ConversationMessage
from rag_orchestrator.domain.messages import Role
from rag_orchestrator.domain.usage import UsageLine

LOCK_HELD = "A turn is already running in this conversation"


@dataclass(slots=True)
class Claim:
    """Who takes a conversation's turn lock, and for how long (a turn's start, a decision's, a revision's)."""

    conversation_id: str
    caller_id: str
    lease_seconds: int


@dataclass(frozen=True, slots=True)
class TurnContext:
    """What a turn reads at its start, in the window's one request: the newest messages, and from
    the conversation itself what finish_turn needs back (the audit chain's head, the owner)."""

    messages: list[ConversationMessage] = field(default_factory=list)
    audit_head: str | None = None  # the last audit record's hash (GENESIS: none yet); None: not read
    owner: str | None = None
    titled: bool | None = None  # whether the conversation has a title; None: not read
    memory: bool = True  # false: a temporary chat (nothing remembered, nothing recalled)
    summary: str | None = None  # the running summary of the messages through `summarized_through`
    summarized_through: str | None = None


@dataclass(slots=True)
class TurnOutcome:
    """What finish_turn stores in the one write that releases the turn lock: the turn's messages and
    counters, its audit entry (sealed onto the chain `context` read), the messages it supersedes
    (counted out of messageCount), the call it holds, the decision it acted on, its tokens on the
    caller's day (`spend`), and what it spent for the usage report (`usage`)."""

    messages: Sequence[ConversationMessage] = ()
    tool_calls: int = 0
    tokens: int = 0
    interrupted: bool = False
    audit: dict[str, Any] | None = None
    context: TurnContext | None = None
    supersede: Sequence[Superseded] = ()
    held: HeldCall | None = None
    decided: Resolution | None = None
    spend: Spend | None = None
    usage: UsageLine | None = None

    def stored(self) -> list[ConversationMessage]:
        """The messages as stored: when interrupted, its last assistant message is marked so."""
        stored = list(self.messages)
        if self.interrupted:
            for index in range(len(stored) - 1, -1, -1):
                if stored[index].role is Role.ASSISTANT:
                    stored[index] = stored[index].model_copy(update={"interrupted": True})
                    break
        return stored


def with_first_messages(conversation: Conversation, messages: Sequence[ConversationMessage]) -> Conversation:
    """A new conversation with the counters of the messages it is created with."""
    if not messages:
        return conversation
    return conversation.model_copy(
        update={
            "message_count": len(messages),
            "total_tokens": sum(m.token_count or 0 for m in messages),
            "last_message_at": conversation.updated_at,
        }
    )

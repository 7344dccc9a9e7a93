"""The conversation store in process memory (CONVERSATION_STORAGE=memory): the DynamoDB store's
behaviour — ownership, turn lock, clientMessageId markers, counters, cursors — without AWS; a facade
over parts that share one Shelf (in_process_records.py).

Nothing here waits, so every method runs on the event loop (the Shelf's lock guards a store shared
with another thread's loop, as a test client does). Archival runs on DynamoDB only: nothing here is
archived.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from datetime import date, datetime

from rag_orchestrator.conversations.cursors import CursorCodec
from rag_orchestrator.conversations.in_process_conversations import InProcessConversations
from rag_orchestrator.conversations.in_process_feedback import InProcessFeedback
from rag_orchestrator.conversations.in_process_records import Shelf
from rag_orchestrator.conversations.in_process_turns import InProcessTurns
from rag_orchestrator.conversations.listing import EVERY, Listing
from rag_orchestrator.conversations.paging import DEFAULT_PAGE_SIZE
from rag_orchestrator.conversations.turn_data import Claim, TurnContext, TurnOutcome
from rag_orchestrator.conversations.versions import Revision
from rag_orchestrator.domain.approvals import Decision, Resolution
from rag_orchestrator.domain.audit import AuditTrail
from rag_orchestrator.domain.budgets import Spend
from rag_orchestrator.domain.conversations import Conversation, ConversationMessage, Page
from rag_orchestrator.domain.feedback import Feedback, FeedbackEntry, Rating
from rag_orchestrator.domain.usage import UsageLine


class InProcessStore:
    def __init__(self, *, cursor_secret: bytes | None = None, clock: Callable[[], float] = time.time) -> None:
        self._shelf = Shelf(CursorCodec(cursor_secret or os.urandom(32)), clock)
        self._conversations = InProcessConversations(self._shelf)
        self._feedback = InProcessFeedback(self._shelf)
        self._turns = InProcessTurns(self._shelf)

    # ------------------------------------------------------------------ conversations (routes)

    async def create(
        self, conversation: Conversation, messages: Sequence[ConversationMessage] = ()
    ) -> Conversation:
        return self._conversations.create(conversation, messages)

    async def get(self, conversation_id: str, caller_id: str) -> Conversation:
        return self._conversations.get(conversation_id, caller_id)

    async def list_by_caller(
        self,
        caller_id: str,
        *,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
        where: Listing = EVERY,
    ) -> Page[Conversation]:
        return self._conversations.list_by_caller(caller_id, limit, cursor, where)

    async def update(
        self,
        conversation_id: str,
        caller_id: str,
        *,
        title: str | None = None,
        metadata: dict[str, str] | None = None,
        memory: bool | None = None,
    ) -> Conversation:
        return self._conversations.update(conversation_id, caller_id, title, metadata, memory)

    async def messages(
        self,
        conversation_id: str,
        caller_id: str,
        *,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
        all_versions: bool = False,
    ) -> Page[ConversationMessage]:
        return self._conversations.messages(conversation_id, caller_id, limit, cursor, all_versions)

    async def window(self, conversation_id: str, size: int) -> list[ConversationMessage]:
        return self._conversations.context(conversation_id, size).messages

    async def soft_delete(self, conversation_id: str, caller_id: str) -> None:
        self._conversations.soft_delete(conversation_id, caller_id)

    async def set_feedback(
        self, conversation_id: str, caller_id: str, message_id: str, feedback: Feedback | None
    ) -> None:
        self._feedback.set_feedback(conversation_id, caller_id, message_id, feedback)

    async def feedback(
        self,
        *,
        since: datetime,
        rating: Rating | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
    ) -> Page[FeedbackEntry]:
        return self._feedback.feedback(since, rating, limit, cursor)

    async def audit(
        self, conversation_id: str, *, limit: int = DEFAULT_PAGE_SIZE, cursor: str | None = None
    ) -> AuditTrail:
        return self._conversations.audit(conversation_id, limit, cursor)

    async def usage(self, caller_id: str, day: str) -> int:
        return self._turns.usage(caller_id, day)

    async def usage_lines(self, first: date, last: date) -> list[UsageLine]:
        return self._turns.usage_lines(first, last)

    # ------------------------------------------------------------------ turns (the loop, the title hook)

    async def start_turn(
        self,
        claim: Claim,
        user_message: ConversationMessage,
        client_message_id: str | None = None,
        spend: Spend | None = None,
    ) -> Resolution | None:
        return self._turns.start_turn(claim, user_message, client_message_id, spend)

    async def context(self, conversation_id: str, size: int) -> TurnContext:
        return self._conversations.context(conversation_id, size)

    async def finish_turn(self, conversation_id: str, outcome: TurnOutcome) -> None:
        self._turns.finish_turn(conversation_id, outcome)

    async def abort_turn(self, conversation_id: str) -> None:
        self._turns.abort_turn(conversation_id)

    async def decide_approval(
        self, claim: Claim, approval_id: str, decision: Decision, reason: str | None
    ) -> Resolution:
        return self._turns.decide_approval(claim, approval_id, decision, reason)

    async def start_revision(
        self, claim: Claim, message_id: str, edit: ConversationMessage | None
    ) -> Revision:
        return self._turns.start_revision(claim, message_id, edit)

    async def reserve(self, spend: Spend) -> None:
        self._turns.reserve(spend)

    async def release(self, spend: Spend) -> None:
        self._turns.release(spend)

    async def count_answer(self, spend: Spend | None, line: UsageLine, started: int) -> None:
        self._turns.count_answer(spend, line)  # nothing here is erased by another process

    async def set_auto_title(self, conversation_id: str, title: str) -> bool:
        return self._conversations.set_auto_title(conversation_id, title)

    async def set_summary(
        self, conversation_id: str, summary: str, through: str, previous: str | None
    ) -> bool:
        return self._conversations.set_summary(conversation_id, summary, through, previous)

"""The memory store's titles, feedback and revisions: part of MemoryConversationStore (memory.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rag_orchestrator.conversations.cursors import CursorCodec, feedback_scope
from rag_orchestrator.conversations.paging import DEFAULT_PAGE_SIZE, offset_page
from rag_orchestrator.conversations.store import LOCK_HELD
from rag_orchestrator.conversations.versions import Revision, StoredMessage, last_exchange, revision
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.conversations import Conversation, ConversationMessage, ConversationStatus, Page
from rag_orchestrator.domain.feedback import Feedback, FeedbackEntry, Rating
from rag_orchestrator.domain.messages import Role
from rag_orchestrator.errors import ApprovalPending, Conflict, MessageNotFound, NotLastExchange

if TYPE_CHECKING:
    from rag_orchestrator.conversations.memory import _Record


class MemoryFeatures:
    _records: dict[str, _Record]
    _lock: threading.Lock
    _cursors: CursorCodec
    _clock: Callable[[], float]
    _ratings: dict[tuple[str, str], FeedbackEntry]
    _owned: Callable[[str, str], _Record]

    async def update(
        self,
        conversation_id: str,
        caller_id: str,
        *,
        title: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> Conversation:
        changes: dict[str, Any] = {"updated_at": utcnow()}
        if title is not None:
            changes["title"] = title
        if metadata is not None:
            changes["metadata"] = dict(metadata)
        with self._lock:
            record = self._owned(conversation_id, caller_id)
            record.conversation = record.conversation.model_copy(update=changes)
            current = record.conversation
        return current.model_copy(update={"metadata": dict(current.metadata)})

    async def set_auto_title(self, conversation_id: str, title: str) -> bool:
        with self._lock:
            record = self._records.get(conversation_id)
            if (
                record is None
                or record.conversation.title is not None
                or record.conversation.status is ConversationStatus.DELETED
            ):
                return False
            record.conversation = record.conversation.model_copy(update={"title": title})
            return True

    async def set_feedback(
        self, conversation_id: str, caller_id: str, message_id: str, feedback: Feedback | None
    ) -> None:
        with self._lock:
            record = self._owned(conversation_id, caller_id)
            index = next(
                (
                    i
                    for i, m in enumerate(record.messages)
                    if m.message_id == message_id and m.role is Role.ASSISTANT
                ),
                None,
            )
            if index is None:
                raise MessageNotFound(message_id)
            record.messages[index] = record.messages[index].model_copy(update={"feedback": feedback})
            if feedback is None:
                self._ratings.pop((conversation_id, message_id), None)
                return
            self._ratings[(conversation_id, message_id)] = FeedbackEntry(
                conversation_id=conversation_id,
                message_id=message_id,
                caller_id=caller_id,
                rating=feedback.rating,
                comment=feedback.comment,
                category=feedback.category,
                updated_at=feedback.updated_at,
            )

    async def feedback(
        self,
        *,
        since: datetime,
        rating: Rating | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
    ) -> Page[FeedbackEntry]:
        with self._lock:
            chosen = [
                e for e in self._ratings.values() if e.updated_at >= since and rating in (None, e.rating)
            ]
        chosen.sort(key=lambda e: (e.updated_at, e.conversation_id, e.message_id), reverse=True)
        return offset_page(chosen, limit, cursor, self._cursors, feedback_scope(since, rating))

    async def start_revision(
        self,
        conversation_id: str,
        caller_id: str,
        message_id: str,
        edit: ConversationMessage | None,
        lease_seconds: int,
    ) -> Revision:
        now = self._clock()
        with self._lock:
            record = self._owned(conversation_id, caller_id)
            if record.lock_until > now:
                raise Conflict(LOCK_HELD)
            if record.held is not None:  # the exchange ends in a held call: decide it first
                raise ApprovalPending(record.held.approval_id)
            current = [StoredMessage(m) for m in reversed(record.messages) if m.superseded_by is None]
            found = revision(last_exchange(current) or [], message_id, edit)
            if found is None:
                if any(m.message_id == message_id for m in record.messages):
                    raise NotLastExchange(message_id)
                raise MessageNotFound(message_id)
            record.lock_until = now + lease_seconds
        return found

"""Ratings in process memory: on the message, and in a listing of every caller's (the DynamoDB store's
feedback.py)."""

from __future__ import annotations

from datetime import datetime

from rag_orchestrator.conversations.cursors import feedback_scope
from rag_orchestrator.conversations.in_process_records import Shelf
from rag_orchestrator.conversations.paging import offset_page
from rag_orchestrator.domain.conversations import Page
from rag_orchestrator.domain.feedback import Feedback, FeedbackEntry, Rating
from rag_orchestrator.domain.messages import Role
from rag_orchestrator.errors import MessageNotFound


class InProcessFeedback:
    def __init__(self, shelf: Shelf) -> None:
        self._shelf = shelf

    def set_feedback(
        self, conversation_id: str, caller_id: str, message_id: str, feedback: Feedback | None
    ) -> None:
        shelf = self._shelf
        with shelf.lock:
            record = shelf.owned(conversation_id, caller_id)
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
                shelf.ratings.pop((conversation_id, message_id), None)
                return
            shelf.ratings[(conversation_id, message_id)] = FeedbackEntry(
                conversation_id=conversation_id,
                message_id=message_id,
                caller_id=caller_id,
                rating=feedback.rating,
                comment=feedback.comment,
                category=feedback.category,
                updated_at=feedback.updated_at,
            )

    def feedback(
        self, since: datetime, rating: Rating | None, limit: int, cursor: str | None
    ) -> Page[FeedbackEntry]:
        shelf = self._shelf
        with shelf.lock:
            chosen = [
                e for e in shelf.ratings.values() if e.updated_at >= since and rating in (None, e.rating)
            ]
        chosen.sort(key=lambda e: (e.updated_at, e.conversation_id, e.message_id), reverse=True)
        return offset_page(chosen, limit, cursor, shelf.cursors, feedback_scope(since, rating))

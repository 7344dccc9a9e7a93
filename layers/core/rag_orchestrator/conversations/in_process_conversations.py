"""Conversations in process memory: create, read, list, change, soft-delete, and their transcripts, a
turn's window and audit trail (the DynamoDB store's dynamo_conversations, _listing, _titles, _messages
and _audit)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_orchestrator.conversations.audit_trail import TrailHead, audit_scope, held_page
from rag_orchestrator.conversations.in_process_records import (
    Shelf,
    StoredConversation,
    own_conversation,
    own_message,
)
from rag_orchestrator.conversations.keys import activity_key, messages_scope
from rag_orchestrator.conversations.listing import Listing
from rag_orchestrator.conversations.paging import check_limit, offset_page
from rag_orchestrator.conversations.turn_data import TurnContext, with_first_messages
from rag_orchestrator.domain.audit import GENESIS, AuditTrail
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.conversations import Conversation, ConversationMessage, ConversationStatus, Page
from rag_orchestrator.errors import BadRequest, Conflict, ConversationNotFound

DELETED = ConversationStatus.DELETED


class InProcessConversations:
    def __init__(self, shelf: Shelf) -> None:
        self._shelf = shelf

    def create(self, conversation: Conversation, messages: Sequence[ConversationMessage]) -> Conversation:
        conversation = with_first_messages(conversation, messages)
        shelf = self._shelf
        with shelf.lock:
            if conversation.conversation_id in shelf.records:
                raise Conflict("A conversation with this id already exists")
            shelf.records[conversation.conversation_id] = StoredConversation(
                own_conversation(conversation), [own_message(m) for m in messages]
            )
        return conversation

    def get(self, conversation_id: str, caller_id: str) -> Conversation:
        with self._shelf.lock:
            conversation = self._shelf.owned(conversation_id, caller_id).conversation
        return own_conversation(conversation)

    def list_by_caller(
        self,
        caller_id: str,
        limit: int,
        cursor: str | None,
        where: Listing,
    ) -> Page[Conversation]:
        check_limit(limit)
        shelf = self._shelf
        scope = where.scope(f"CALLER#{caller_id}")
        after = None
        if cursor:
            after = shelf.cursors.decode(cursor, scope).get("after")
            if not isinstance(after, str):
                raise BadRequest("Invalid cursor")
        with shelf.lock:
            chosen = [
                r.conversation
                for r in shelf.records.values()
                if r.conversation.caller_id == caller_id
                and r.conversation.status is not DELETED
                and where.keeps(r.conversation)
            ]
        ordered = sorted(chosen, key=lambda c: activity_key(c.updated_at, c.conversation_id), reverse=True)
        if after is not None:
            ordered = [c for c in ordered if activity_key(c.updated_at, c.conversation_id) < after]
        page = [own_conversation(c) for c in ordered[:limit]]
        following = None
        if len(ordered) > limit:
            last = page[-1]
            following = shelf.cursors.encode(
                {"after": activity_key(last.updated_at, last.conversation_id)}, scope
            )
        return Page(items=page, next_cursor=following)

    def update(
        self,
        conversation_id: str,
        caller_id: str,
        title: str | None,
        metadata: dict[str, str] | None,
        memory: bool | None = None,
    ) -> Conversation:
        changes: dict[str, Any] = {"updated_at": utcnow()}
        if title is not None:
            changes["title"] = title
        if metadata is not None:
            changes["metadata"] = dict(metadata)
        if memory is not None:
            changes["memory"] = memory
        with self._shelf.lock:
            record = self._shelf.owned(conversation_id, caller_id)
            record.conversation = record.conversation.model_copy(update=changes)
            current = record.conversation
        return own_conversation(current)

    def set_auto_title(self, conversation_id: str, title: str) -> bool:
        with self._shelf.lock:
            record = self._shelf.records.get(conversation_id)
            if (
                record is None
                or record.conversation.title is not None
                or record.conversation.status is DELETED
            ):
                return False
            record.conversation = record.conversation.model_copy(update={"title": title})
            return True

    def set_summary(self, conversation_id: str, summary: str, through: str, previous: str | None) -> bool:
        with self._shelf.lock:
            record = self._shelf.records.get(conversation_id)
            if (
                record is None
                or record.conversation.status is DELETED
                or record.conversation.summarized_through != previous
            ):
                return False
            record.conversation = record.conversation.model_copy(
                update={"summary": summary, "summarized_through": through}
            )
            return True

    def soft_delete(self, conversation_id: str, caller_id: str) -> None:
        with self._shelf.lock:
            record = self._shelf.owned(conversation_id, caller_id)
            now = utcnow()
            record.conversation = record.conversation.model_copy(
                update={"status": DELETED, "deleted_at": now, "updated_at": now}
            )

    def messages(
        self, conversation_id: str, caller_id: str, limit: int, cursor: str | None, all_versions: bool
    ) -> Page[ConversationMessage]:
        shelf = self._shelf
        with shelf.lock:
            stored = [
                m
                for m in shelf.owned(conversation_id, caller_id).messages
                if all_versions or m.superseded_by is None
            ]
        scope = messages_scope(conversation_id, caller_id, all_versions)
        page = offset_page(stored, limit, cursor, shelf.cursors, scope)
        return Page(items=[own_message(m) for m in page.items], next_cursor=page.next_cursor)

    def context(self, conversation_id: str, size: int) -> TurnContext:
        """The newest `size` current messages, read from the end: a turn's cost does not grow with
        the conversation's length."""
        with self._shelf.lock:
            record = self._shelf.records.get(conversation_id)
            if record is None:
                return TurnContext()
            recent: list[ConversationMessage] = []
            for message in reversed(record.messages):
                if len(recent) == size:
                    break
                if message.superseded_by is None:
                    recent.append(message)
            head = record.audit_head
            conversation = record.conversation
            owner, titled = conversation.caller_id, conversation.title is not None
        return TurnContext(
            [own_message(m) for m in reversed(recent)],
            head,
            owner,
            titled,
            conversation.memory,
            conversation.summary,
            conversation.summarized_through,
        )

    def audit(self, conversation_id: str, limit: int, cursor: str | None) -> AuditTrail:
        """Deleted conversations included: nothing here is ever purged."""
        with self._shelf.lock:
            record = self._shelf.records.get(conversation_id)
            if record is None:
                raise ConversationNotFound(conversation_id)
            kept, head = list(record.audits), record.audit_head
        records = [sealed.record() for sealed in kept]  # fresh dicts: the caller's own
        trail_head = TrailHead(None if head == GENESIS else head, len(records))
        return held_page(
            records, trail_head, limit, cursor, self._shelf.cursors, audit_scope(conversation_id)
        )

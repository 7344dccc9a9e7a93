"""ConversationStore in process memory (CONVERSATION_STORAGE=memory): the DynamoDB store's behaviour —
ownership, turn lock, clientMessageId markers, counters, cursors — without AWS.

Nothing here waits, so every method runs on the event loop (the lock guards a store shared with
another thread's loop, as a test client does). Stored models are never changed in place (a change
replaces them), so isolating callers needs only fresh copies of what is mutable in them, in and out:
the model itself, `metadata`, `tool_calls`. Archival runs on DynamoDB only: nothing here is archived.
"""

from __future__ import annotations

import copy
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_orchestrator.conversations.audit_trail import TrailHead, audit_scope, held_page
from rag_orchestrator.conversations.cursors import CursorCodec
from rag_orchestrator.conversations.keys import activity_key, iso, list_scope, messages_scope
from rag_orchestrator.conversations.memory_features import MemoryFeatures
from rag_orchestrator.conversations.memory_holds import MemoryHolds
from rag_orchestrator.conversations.paging import DEFAULT_PAGE_SIZE, check_limit, offset_page
from rag_orchestrator.conversations.store import LOCK_HELD, TurnContext, token_total, turn_messages
from rag_orchestrator.conversations.titles import matches
from rag_orchestrator.conversations.versions import Superseded
from rag_orchestrator.domain.approvals import PENDING, HeldCall, Resolution
from rag_orchestrator.domain.audit import GENESIS, AuditTrail, seal
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.budgets import Spend
from rag_orchestrator.domain.conversations import Conversation, ConversationMessage, ConversationStatus, Page
from rag_orchestrator.errors import (
    ApprovalPending,
    BadRequest,
    Conflict,
    ConversationNotFound,
    DuplicateClientMessage,
)

ACTIVE, DELETED = ConversationStatus.ACTIVE, ConversationStatus.DELETED


@dataclass
class _Record:
    conversation: Conversation
    messages: list[ConversationMessage] = field(default_factory=list)
    # clientMessageId -> (messageId, createdAt) of the user message it started
    markers: dict[str, tuple[str, str]] = field(default_factory=dict)
    lock_until: float = 0.0
    audits: list[dict[str, Any]] = field(default_factory=list)  # sealed audit records, oldest first
    audit_head: str = GENESIS
    held: HeldCall | None = None  # the tool call waiting for a decision
    approvals: dict[str, str] = field(default_factory=dict)  # approvalId -> status


def _own_message(message: ConversationMessage) -> ConversationMessage:
    """A copy of `message` that shares nothing mutable with it (cheaper than a deep copy)."""
    if message.tool_calls is None:
        return message.model_copy()
    calls = [c.model_copy(update={"function": c.function.model_copy()}) for c in message.tool_calls]
    return message.model_copy(update={"tool_calls": calls})


def _own_conversation(conversation: Conversation) -> Conversation:
    return conversation.model_copy(update={"metadata": dict(conversation.metadata)})


class MemoryConversationStore(MemoryFeatures, MemoryHolds):
    def __init__(self, *, cursor_secret: bytes | None = None, clock: Callable[[], float] = time.time) -> None:
        self._cursors = CursorCodec(cursor_secret or os.urandom(32))
        self._clock = clock
        self._records: dict[str, _Record] = {}
        self._ratings = {}
        self._usage: dict[tuple[str, str], list[int]] = {}  # (callerId, day) -> [used, committed]
        self._lock = threading.Lock()

    async def create(
        self, conversation: Conversation, messages: Sequence[ConversationMessage] = ()
    ) -> Conversation:
        if messages:
            conversation = conversation.model_copy(
                update={
                    "message_count": len(messages),
                    "total_tokens": token_total(messages),
                    "last_message_at": conversation.updated_at,
                }
            )
        with self._lock:
            if conversation.conversation_id in self._records:
                raise Conflict("A conversation with this id already exists")
            self._records[conversation.conversation_id] = _Record(
                _own_conversation(conversation), [_own_message(m) for m in messages]
            )
        return conversation

    async def get(self, conversation_id: str, caller_id: str) -> Conversation:
        with self._lock:
            conversation = self._owned(conversation_id, caller_id).conversation
        return _own_conversation(conversation)

    async def list_by_caller(
        self,
        caller_id: str,
        *,
        status: ConversationStatus | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
        title_words: Sequence[str] = (),
    ) -> Page[Conversation]:
        check_limit(limit)
        scope = list_scope(f"CALLER#{caller_id}", status, title_words)
        after = None
        if cursor:
            after = self._cursors.decode(cursor, scope).get("after")
            if not isinstance(after, str):
                raise BadRequest("Invalid cursor")
        with self._lock:
            chosen = [
                r.conversation
                for r in self._records.values()
                if r.conversation.caller_id == caller_id
                and r.conversation.status is not DELETED
                and (status is None or r.conversation.status is status)
                and (not title_words or matches(r.conversation.title, list(title_words)))
            ]
        ordered = sorted(chosen, key=lambda c: activity_key(c.updated_at, c.conversation_id), reverse=True)
        if after is not None:
            ordered = [c for c in ordered if activity_key(c.updated_at, c.conversation_id) < after]
        page = [_own_conversation(c) for c in ordered[:limit]]
        following = None
        if len(ordered) > limit:
            last = page[-1]
            following = self._cursors.encode(
                {"after": activity_key(last.updated_at, last.conversation_id)}, scope
            )
        return Page(items=page, next_cursor=following)

    async def soft_delete(self, conversation_id: str, caller_id: str) -> None:
        with self._lock:
            record = self._owned(conversation_id, caller_id)
            now = utcnow()
            record.conversation = record.conversation.model_copy(
                update={"status": DELETED, "deleted_at": now, "updated_at": now}
            )

    async def messages(
        self,
        conversation_id: str,
        caller_id: str,
        *,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
        all_versions: bool = False,
    ) -> Page[ConversationMessage]:
        with self._lock:
            stored = [
                m
                for m in self._owned(conversation_id, caller_id).messages
                if all_versions or m.superseded_by is None
            ]
        scope = messages_scope(conversation_id, caller_id, all_versions)
        page = offset_page(stored, limit, cursor, self._cursors, scope)
        return Page(items=[_own_message(m) for m in page.items], next_cursor=page.next_cursor)

    async def window(self, conversation_id: str, size: int) -> list[ConversationMessage]:
        return (await self.context(conversation_id, size)).messages

    async def context(self, conversation_id: str, size: int) -> TurnContext:
        with self._lock:
            record = self._records.get(conversation_id)
            if record is None:
                return TurnContext()
            recent = [m for m in record.messages if m.superseded_by is None][-size:]
            head = record.audit_head
            owner, titled = record.conversation.caller_id, record.conversation.title is not None
        return TurnContext([_own_message(m) for m in recent], head, owner, titled)

    async def audit(
        self, conversation_id: str, *, limit: int = DEFAULT_PAGE_SIZE, cursor: str | None = None
    ) -> AuditTrail:
        """Deleted conversations included: nothing here is ever purged."""
        with self._lock:
            record = self._records.get(conversation_id)
            if record is None:
                raise ConversationNotFound(conversation_id)
            records, head = copy.deepcopy(record.audits), record.audit_head
        trail_head = TrailHead(None if head == GENESIS else head, len(records))
        return held_page(records, trail_head, limit, cursor, self._cursors, audit_scope(conversation_id))

    async def start_turn(
        self,
        conversation_id: str,
        caller_id: str,
        user_message: ConversationMessage,
        client_message_id: str | None,
        lease_seconds: int,
        spend: Spend | None = None,
    ) -> Resolution | None:
        now = self._clock()
        with self._lock:
            record = self._owned(conversation_id, caller_id)
            if client_message_id and client_message_id in record.markers:
                raise DuplicateClientMessage(client_message_id, *record.markers[client_message_id])
            if spend is not None and spend.limited:
                self._check_budget(spend)
            expired = None
            if record.held is not None:
                if record.held.decide_by > now:
                    raise ApprovalPending(record.held.approval_id)
                expired = Resolution(record.held, "expired")
            if record.lock_until > now:
                raise Conflict(LOCK_HELD)
            record.lock_until = now + lease_seconds
            if client_message_id:
                record.markers[client_message_id] = (user_message.message_id, iso(user_message.created_at))
            if spend is not None and spend.limited:
                self._settle(spend, 0, spend.reserve)
            if expired is not None:
                self._resolve(record, expired)
                refusal = ConversationMessage.of(conversation_id, expired.tool_message())
                self._add(record, [refusal], tokens=0, tool_calls=0)
            self._add(record, [user_message], tokens=user_message.token_count or 0, tool_calls=0)
        return expired

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
        """The chain's head is this store's own: `context` is not needed to seal the record."""
        with self._lock:
            record = self._records.get(conversation_id)
            if record is None:
                raise ConversationNotFound(conversation_id)
            record.lock_until = 0.0
            by = {s.message_id: s.superseded_by for s in supersede}
            record.messages = [
                m.model_copy(update={"superseded_by": by[m.message_id]}) if m.message_id in by else m
                for m in record.messages
            ]
            stored = turn_messages(messages, interrupted)
            self._add(record, stored, tokens=tokens, tool_calls=tool_calls, gone=len(by))
            if audit is not None:
                sealed = seal(copy.deepcopy(audit), record.audit_head)
                record.audits.append(sealed)
                record.audit_head = sealed["hash"]
            if decided is not None:
                self._resolve(record, decided)
            if held is not None:
                record.held, record.approvals[held.approval_id] = held, PENDING
            if spend is not None:
                self._settle(spend, tokens, tokens - spend.reserve)

    async def abort_turn(self, conversation_id: str) -> None:
        with self._lock:
            record = self._records.get(conversation_id)
            if record is not None:
                record.lock_until = 0.0

    def _owned(self, conversation_id: str, caller_id: str) -> _Record:
        record = self._records.get(conversation_id)
        if (
            record is None
            or record.conversation.caller_id != caller_id
            or record.conversation.status is DELETED
        ):
            raise ConversationNotFound(conversation_id)
        return record

    @staticmethod
    def _add(
        record: _Record, messages: list[ConversationMessage], *, tokens: int, tool_calls: int, gone: int = 0
    ) -> None:
        now = utcnow()
        current = record.conversation
        record.messages.extend(_own_message(m) for m in messages)
        record.conversation = current.model_copy(
            update={
                "updated_at": now,
                "last_message_at": now if messages else current.last_message_at,
                "message_count": current.message_count + len(messages) - gone,
                "total_tokens": current.total_tokens + tokens,
                "tool_calls_count": current.tool_calls_count + tool_calls,
            }
        )

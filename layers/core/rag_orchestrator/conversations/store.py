"""The ConversationStore contract, what its implementations share, and the factory choosing one.

Methods are synchronous (boto3 is). A store says whether they block on I/O: the async ContextManager
runs a blocking store's methods in a worker thread and calls the others on the event loop.
Ownership is part of every read and write: a missing, DELETED or another caller's conversation
raises the same ConversationNotFound. What a store returns is the caller's own, as is what it was
given: changing either afterwards changes nothing stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import Protocol

from rag_orchestrator.config import Settings
from rag_orchestrator.conversations.cursors import CursorCodec
from rag_orchestrator.domain.conversations import (
    Conversation,
    ConversationMessage,
    ConversationStatus,
    Page,
)
from rag_orchestrator.domain.messages import Role
from rag_orchestrator.errors import BadRequest

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
LOCK_HELD = "A turn is already running in this conversation"


class ConversationStore(Protocol):
    blocking: bool
    """True when methods wait on the network (DynamoDB, S3): the ContextManager runs them in a worker
    thread. False for a store that does no I/O (memory): it is called on the event loop, which spares a
    thread hand-off per call; such a store must never wait."""

    def create(
        self, conversation: Conversation, messages: Sequence[ConversationMessage] = ()
    ) -> Conversation:
        """Store a new conversation, with its first messages in the same write."""
        ...

    def get(self, conversation_id: str, caller_id: str) -> Conversation: ...

    def list_by_caller(
        self,
        caller_id: str,
        *,
        status: ConversationStatus | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
    ) -> Page[Conversation]:
        """The caller's conversations, most recently updated first."""
        ...

    def list_by_user(
        self,
        user_id: str,
        *,
        caller_id: str | None = None,
        status: ConversationStatus | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
    ) -> Page[Conversation]:
        """Conversations for a userId (optionally only one caller's), most recently updated first."""
        ...

    def messages(
        self,
        conversation_id: str,
        caller_id: str,
        *,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
    ) -> Page[ConversationMessage]:
        """The transcript, oldest first; with an s3Key (archived, maybe continued since) merged from S3."""
        ...

    def window(self, conversation_id: str, size: int) -> list[ConversationMessage]:
        """The newest `size` messages, oldest first, in one read; no ownership check (see start_turn)."""
        ...

    def load(
        self, conversation_id: str, caller_id: str, size: int
    ) -> tuple[Conversation, list[ConversationMessage]]:
        """The conversation and its window, in the same single read."""
        ...

    def append(
        self,
        conversation_id: str,
        caller_id: str,
        messages: Sequence[ConversationMessage],
        *,
        tool_calls: int = 0,
    ) -> None:
        """Add messages outside a turn; counters by atomic ADD."""
        ...

    def soft_delete(self, conversation_id: str, caller_id: str) -> None: ...

    def mark_archived(self, conversation_id: str, s3_key: str) -> None:
        """ACTIVE -> ARCHIVED with the transcript's key; the message items stay (archival.py moves them)."""
        ...

    def start_turn(
        self,
        conversation_id: str,
        caller_id: str,
        user_message: ConversationMessage,
        client_message_id: str | None,
        lease_seconds: int,
    ) -> None:
        """Check ownership, take the turn lock, store the user message, in one write.

        Raises ConversationNotFound, DuplicateClientMessage, or Conflict while another turn runs.
        """
        ...

    def finish_turn(
        self,
        conversation_id: str,
        messages: Sequence[ConversationMessage],
        *,
        tool_calls: int,
        tokens: int,
        interrupted: bool = False,
    ) -> None:
        """Store the turn's messages, add its counters and release the lock, in one write."""
        ...

    def abort_turn(self, conversation_id: str) -> None:
        """Release the turn lock only (the turn failed before anything worth keeping)."""
        ...


def iso(moment: datetime) -> str:
    """Fixed-width UTC ISO-8601, so index sort keys order as time does."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def activity_key(moment: datetime, conversation_id: str) -> str:
    """GSI1SK / GSI2SK: most recent activity, then the id to keep keys unique."""
    return f"{iso(moment)}#{conversation_id}"


def check_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_PAGE_SIZE:
        raise BadRequest(f"limit must be between 1 and {MAX_PAGE_SIZE}")
    return limit


def list_scope(kind: str, partition: str, status: ConversationStatus | None, caller_id: str | None) -> str:
    """What a listing cursor is bound to: the same listing, for the same caller, with the same filter."""
    return f"{kind}|{partition}|{status or '*'}|{caller_id or '*'}"


def messages_scope(conversation_id: str, caller_id: str) -> str:
    return f"messages|{conversation_id}|{caller_id}"


def offset_page[T](
    items: Sequence[T], limit: int, cursor: str | None, codec: CursorCodec, scope: str
) -> Page[T]:
    """A page of a list held whole (transcripts, the memory store): the cursor is an offset."""
    check_limit(limit)
    offset = 0
    if cursor:
        offset = codec.decode(cursor, scope).get("offset")
        if not isinstance(offset, int) or offset < 0:
            raise BadRequest("Invalid cursor")
    end = offset + limit
    following = codec.encode({"offset": end}, scope) if end < len(items) else None
    return Page(items=list(items[offset:end]), next_cursor=following)


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


@lru_cache(maxsize=1)
def memory_store() -> ConversationStore:
    """One in-memory store per process, so the dev server keeps its conversations between requests."""
    from rag_orchestrator.conversations.memory import MemoryConversationStore

    return MemoryConversationStore()


def create_store(settings: Settings) -> ConversationStore:
    """The store CONVERSATION_STORAGE names; DynamoDB is imported only when used."""
    if settings.conversation_storage == "memory":
        return memory_store()
    from rag_orchestrator.conversations.dynamo import DynamoConversationStore

    return DynamoConversationStore.from_settings(settings)

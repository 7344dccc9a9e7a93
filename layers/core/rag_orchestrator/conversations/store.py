"""What the routes ask of the conversation store, split by what each needs.

A turn's side of the store is the loop's port (loop/ports.py `TurnStore`); the title hook's is in
loop/titles.py. Both stores (dynamo.py, in_process.py) provide all of them. Methods are coroutines.
Ownership is part of every read and write: a missing, DELETED or another caller's conversation
raises the same ConversationNotFound. What a store returns is the caller's own, as is what it was
given: changing either afterwards changes nothing stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime
from typing import Protocol

from rag_orchestrator.conversations.listing import EVERY, Listing
from rag_orchestrator.conversations.paging import DEFAULT_PAGE_SIZE
from rag_orchestrator.domain.audit import AuditTrail
from rag_orchestrator.domain.conversations import Conversation, ConversationMessage, Page
from rag_orchestrator.domain.feedback import Feedback, FeedbackEntry, Rating
from rag_orchestrator.domain.usage import UsageLine


class ConversationStore(Protocol):
    """Conversations and their transcripts, as the owner reads and changes them."""

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
        memory: bool | None = None,
    ) -> Conversation:
        """Replace the title, the metadata and/or the memory switch given; the conversation as it is now."""
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

    async def window(self, conversation_id: str, size: int) -> list[ConversationMessage]:
        """The newest `size` messages, oldest first, in one read; no ownership check (a get first)."""
        ...

    async def soft_delete(self, conversation_id: str, caller_id: str) -> None: ...


class FeedbackStore(Protocol):
    """Ratings of answers: the owner's, and every caller's for the admin listing."""

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


class AuditStore(Protocol):
    async def audit(
        self, conversation_id: str, *, limit: int = DEFAULT_PAGE_SIZE, cursor: str | None = None
    ) -> AuditTrail:
        """The conversation's audit records, oldest first, with the chain checked; whoever owns it,
        deleted or archived included. Raises ConversationNotFound when nothing of it is left."""
        ...


class UsageStore(Protocol):
    async def usage(self, caller_id: str, day: str) -> int:
        """The tokens the caller's turns used on that UTC day (YYYY-MM-DD), as counted by finish_turn."""
        ...

    async def usage_lines(self, first: date, last: date) -> list[UsageLine]:
        """What every caller's turns spent per day and model, from `first` to `last` inclusive."""
        ...

"""ContextManager (seed 000): conversations and their rolling window for the rest of the code.

Async over the synchronous store: a blocking one (DynamoDB) runs in a worker thread, one that does
no I/O (memory) on the event loop; nothing above this sees boto3.
A turn costs three DynamoDB requests: start_turn (one transaction), window (one Query),
finish_turn (one transaction).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rag_orchestrator.config import Settings
from rag_orchestrator.conversations.store import DEFAULT_PAGE_SIZE, ConversationStore, create_store
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.conversations import (
    Conversation,
    ConversationMessage,
    ConversationStatus,
    CreateConversationRequest,
    Page,
)
from rag_orchestrator.domain.messages import Message, Role

DEFAULT_LEASE_SECONDS = 900  # a turn cannot outlive the longest Lambda invocation
CHARS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class ConversationContext:
    conversation: Conversation
    messages: list[Message]
    total_tokens: int


class ContextManager:
    def __init__(self, store: ConversationStore, *, window_size: int = 20) -> None:
        self.store = store
        self.window_size = window_size

    @staticmethod
    def estimate_tokens(text: str) -> int:
        """About four characters a token, at least one: for when a provider reports no usage."""
        return max(1, len(text) // CHARS_PER_TOKEN)

    async def _call[T](self, method: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """One store call: in a worker thread when the store blocks, else directly (no hand-off to pay)."""
        if self.store.blocking:
            return await asyncio.to_thread(method, *args, **kwargs)
        return method(*args, **kwargs)

    def stored(
        self,
        conversation_id: str,
        message: Message,
        token_count: int | None = None,
        *,
        client_message_id: str | None = None,
    ) -> ConversationMessage:
        """A Message as the store keeps it, with a time-ordered id and a token count."""
        return ConversationMessage(
            conversation_id=conversation_id,
            role=message.role,
            content=message.content,
            tool_call_id=message.tool_call_id,
            tool_name=message.tool_name,
            tool_calls=message.tool_calls,
            reasoning=message.reasoning,
            token_count=token_count if token_count is not None else self.estimate_tokens(message.content),
            client_message_id=client_message_id,
        )

    async def create(self, request: CreateConversationRequest, caller_id: str) -> Conversation:
        """A new conversation; `initialMessage`, when given, is stored in the same write as its first message."""
        now = utcnow()
        conversation = Conversation(
            caller_id=caller_id,
            user_id=request.user_id,
            account_id=request.account_id,
            metadata=request.metadata,
            created_at=now,
            updated_at=now,
        )
        first = []
        if request.initial_message:
            first.append(
                self.stored(
                    conversation.conversation_id, Message(role=Role.USER, content=request.initial_message)
                )
            )
        return await self._call(self.store.create, conversation, first)

    async def get(self, conversation_id: str, caller_id: str) -> Conversation:
        return await self._call(self.store.get, conversation_id, caller_id)

    async def list_conversations(
        self,
        caller_id: str,
        *,
        status: ConversationStatus | None = None,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
    ) -> Page[Conversation]:
        return await self._call(
            self.store.list_by_caller, caller_id, status=status, limit=limit, cursor=cursor
        )

    async def recent(self, caller_id: str, limit: int = 10) -> list[Conversation]:
        """The caller's most recently updated conversations (seed 000's getRecentConversations)."""
        return (await self.list_conversations(caller_id, limit=limit)).items

    async def messages(
        self,
        conversation_id: str,
        caller_id: str,
        *,
        limit: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
    ) -> Page[ConversationMessage]:
        return await self._call(self.store.messages, conversation_id, caller_id, limit=limit, cursor=cursor)

    async def delete(self, conversation_id: str, caller_id: str) -> None:
        await self._call(self.store.soft_delete, conversation_id, caller_id)

    async def load(self, conversation_id: str, caller_id: str) -> ConversationContext:
        """The conversation and its rolling window (CONVERSATION_ROLLING_WINDOW), in one read."""
        conversation, window = await self._call(self.store.load, conversation_id, caller_id, self.window_size)
        return ConversationContext(
            conversation=conversation,
            messages=[m.to_message() for m in window],
            total_tokens=sum(m.token_count or self.estimate_tokens(m.content) for m in window),
        )

    async def window(self, conversation_id: str, size: int | None = None) -> list[Message]:
        """The newest messages, oldest first, in one read. Ownership is start_turn's check."""
        stored = await self._call(self.store.window, conversation_id, size or self.window_size)
        return [m.to_message() for m in stored]

    async def add_message(
        self, conversation_id: str, caller_id: str, message: Message, *, token_count: int | None = None
    ) -> ConversationMessage:
        """Store one message outside a turn; counters and timestamps move with it."""
        stored = self.stored(conversation_id, message, token_count)
        tool_calls = len(message.tool_calls or ())
        await self._call(self.store.append, conversation_id, caller_id, [stored], tool_calls=tool_calls)
        return stored

    async def start_turn(
        self,
        conversation_id: str,
        caller_id: str,
        user_message: ConversationMessage,
        client_message_id: str | None = None,
        *,
        lease_seconds: int = DEFAULT_LEASE_SECONDS,
    ) -> None:
        """Take the turn lock and store the user message; raises ConversationNotFound,
        DuplicateClientMessage or Conflict."""
        await self._call(
            self.store.start_turn, conversation_id, caller_id, user_message, client_message_id, lease_seconds
        )

    async def finish_turn(
        self,
        conversation_id: str,
        messages: Sequence[ConversationMessage],
        *,
        tool_calls: int,
        tokens: int,
        interrupted: bool = False,
    ) -> None:
        """Store the turn's messages, add its counters and release the lock."""
        await self._call(
            self.store.finish_turn,
            conversation_id,
            list(messages),
            tool_calls=tool_calls,
            tokens=tokens,
            interrupted=interrupted,
        )

    async def abort_turn(self, conversation_id: str) -> None:
        await self._call(self.store.abort_turn, conversation_id)


@lru_cache(maxsize=4)
def get_context_manager(settings: Settings) -> ContextManager:
    """The process's ContextManager for these settings (the store CONVERSATION_STORAGE names)."""
    return ContextManager(create_store(settings), window_size=settings.conversation_rolling_window)

"""Whether a conversation is still remembered, read after its fragments were added (docs/memory.md).

What adds fragments (a turn's after-turn hook, an attachment's indexing) decided to from what it read
earlier; the conversation may since have been deleted, made a temporary chat or erased with its caller,
each of which forgets its fragments. So the adder reads the conversation once more after adding, and
forgets what it added when the answer is no: whichever came first, the add or the forgetting, nothing
stays.
"""

from __future__ import annotations

from typing import Protocol

from rag_orchestrator.domain.conversations import Conversation
from rag_orchestrator.errors import ConversationNotFound
from rag_orchestrator.observability import logger


class Conversations(Protocol):
    async def get(self, conversation_id: str, caller_id: str) -> Conversation: ...


async def still_remembered(conversations: Conversations, conversation_id: str, caller_id: str) -> bool:
    """Whether the conversation still exists, is the caller's and is remembered; when it cannot be
    read, not (memory is what is lost, never a forgetting)."""
    try:
        conversation = await conversations.get(conversation_id, caller_id)
    except ConversationNotFound:
        return False
    except Exception as exc:
        logger.warning(
            "not remembered: the conversation could not be read", extra={"error_type": type(exc).__name__}
        )
        return False
    return conversation.memory

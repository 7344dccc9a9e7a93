"""Messages as the table keeps them, shared by the parts of the DynamoDB store that write or read them:
keys in list order, large texts moved to S3 and brought back, and a guest's TTL on what it writes."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.contents import ContentOffloader
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.callers import is_guest
from rag_orchestrator.domain.conversations import ConversationMessage


class MessageItems:
    def __init__(self, contents: ContentOffloader, guest_ttl: timedelta) -> None:
        self._contents = contents
        self._guest_ttl = guest_ttl

    def expiry(self, caller_id: str | None) -> int | None:
        """The TTL of what is written now for this owner: only a guest's conversation expires."""
        if caller_id is None or not is_guest(caller_id):
            return None
        return it.epoch(utcnow() + self._guest_ttl + it.TTL_GRACE)

    def puts(
        self, messages: Sequence[ConversationMessage], expires_at: int | None = None
    ) -> list[dict[str, Any]]:
        """Put actions for messages, keys assigned in list order, large texts moved to S3."""
        puts = []
        ttl = {"expiresAt": expires_at} if expires_at else {}
        for message in messages:
            values = self._contents.offload(it.message_item(message, it.new_message_key()) | ttl)
            puts.append({"Put": {"Item": it.to_attributes(values)}})
        return puts

    def restore(self, values: dict[str, Any]) -> ConversationMessage:
        """A message item as the message it stores, its large texts read back from S3."""
        return ConversationMessage.model_validate(self._contents.restore(values))

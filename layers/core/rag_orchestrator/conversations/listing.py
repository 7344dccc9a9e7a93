"""What a listing of a caller's conversations keeps (GET /api/v1/chat/conversations, docs/conversations.md):
a value object both stores read, and the scope a page cursor of it is bound to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.titles import matches
from rag_orchestrator.domain.conversations import Conversation, ConversationStatus


@dataclass(frozen=True, slots=True)
class Listing:
    """Every field optional: a status; words each beginning a word of the title (titles.query_words);
    the userId the conversation was created with; a createdAt range, both ends included."""

    status: ConversationStatus | None = None
    title_words: tuple[str, ...] = ()
    user_id: str | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None

    def scope(self, partition: str) -> str:
        """What a cursor is bound to: the same caller's listing with the same filters."""
        words = f"|{' '.join(self.title_words)}" if self.title_words else ""
        created = (self.created_from, self.created_to)
        extra = (
            f"|user={self.user_id or ''}|{'..'.join(iso(d) if d else '' for d in created)}"
            if self.user_id is not None or any(created)
            else ""
        )
        return f"ByCaller|{partition}|{self.status or '*'}{words}{extra}"

    def keeps(self, conversation: Conversation) -> bool:
        """Whether the conversation passes the filters (its owner and its being listed at all aside)."""
        created = conversation.created_at
        return (
            (self.status is None or conversation.status is self.status)
            and (not self.title_words or matches(conversation.title, list(self.title_words)))
            and (self.user_id is None or conversation.user_id == self.user_id)
            and (self.created_from is None or created >= self.created_from)
            and (self.created_to is None or created <= self.created_to)
        )


EVERY = Listing()

"""AttachmentStore in process memory (CONVERSATION_STORAGE=memory)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from rag_orchestrator.domain.attachments import Attachment, AttachmentStatus
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.errors import AttachmentNotFound

PROCESSING = AttachmentStatus.PROCESSING


class InProcessAttachmentStore:
    def __init__(self) -> None:
        self._items: dict[tuple[str, str], Attachment] = {}
        self._lock = threading.Lock()

    async def create(self, attachment: Attachment) -> None:
        with self._lock:
            self._items[(attachment.conversation_id, attachment.attachment_id)] = attachment.model_copy(
                deep=True
            )

    async def get(self, conversation_id: str, attachment_id: str, caller_id: str) -> Attachment:
        with self._lock:
            found = self._items.get((conversation_id, attachment_id))
        if found is None or found.caller_id != caller_id:
            raise AttachmentNotFound(attachment_id)
        return found.model_copy(deep=True)

    async def get_many(
        self, conversation_id: str, attachment_ids: Sequence[str], caller_id: str
    ) -> list[Attachment]:
        return [await self.get(conversation_id, aid, caller_id) for aid in attachment_ids]

    async def claim(self, attachment: Attachment, now: int, lease_until: int) -> bool:
        key = (attachment.conversation_id, attachment.attachment_id)
        with self._lock:
            current = self._items.get(key)
            if current is None or not _claimable(current, now):
                return False
            self._items[key] = current.model_copy(
                update={"status": PROCESSING, "lease_until": lease_until, "updated_at": utcnow()}
            )
            return True

    async def finish(self, attachment: Attachment) -> bool:
        key = (attachment.conversation_id, attachment.attachment_id)
        with self._lock:
            current = self._items.get(key)
            if current is None or current.status is not PROCESSING:
                return False
            self._items[key] = attachment.model_copy(
                deep=True, update={"lease_until": None, "updated_at": utcnow()}
            )
            return True


def _claimable(attachment: Attachment, now: int) -> bool:
    if attachment.status is AttachmentStatus.PENDING_UPLOAD:
        return True
    return attachment.status is PROCESSING and (attachment.lease_until or 0) < now

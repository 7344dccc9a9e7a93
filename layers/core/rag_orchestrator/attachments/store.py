"""The AttachmentStore contract: attachment items with their segments, and the processing lease.

Ownership is part of every read: a missing attachment, another conversation's, or another caller's
raises the same AttachmentNotFound. Status moves PENDING_UPLOAD -> PROCESSING -> READY | FAILED; a
worker takes PROCESSING with a lease, and another may take it over once the lease has run out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from rag_orchestrator.domain.attachments import Attachment


class AttachmentStore(Protocol):
    async def create(self, attachment: Attachment) -> None: ...

    async def get(self, conversation_id: str, attachment_id: str, caller_id: str) -> Attachment:
        """The attachment, segments included; AttachmentNotFound unless the caller owns it."""
        ...

    async def get_many(
        self, conversation_id: str, attachment_ids: Sequence[str], caller_id: str
    ) -> list[Attachment]:
        """The attachments in the order asked, in one read; AttachmentNotFound for the first the caller
        does not own."""
        ...

    async def claim(self, attachment: Attachment, now: int, lease_until: int) -> bool:
        """PENDING_UPLOAD (or PROCESSING past its lease) -> PROCESSING until `lease_until`; False if taken."""
        ...

    async def finish(self, attachment: Attachment) -> bool:
        """Store the attachment as given (its final status) if it is still PROCESSING; False if not."""
        ...

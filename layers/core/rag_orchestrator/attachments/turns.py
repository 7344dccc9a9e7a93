"""What turns and tools ask of attachments (docs/attachments.md, sections 5 and 7).

`check` runs before a turn writes anything, so its refusals are plain HTTP errors: one read for all
the ids (BatchGetItem), and a HEAD only for those still PENDING_UPLOAD. `read` processes in the turn
what is not READY yet. `link` is an HTTP tool's presigned GET. The service is built on first use:
without ATTACHMENTS_BUCKET, only a request that names an attachment gets the 503.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rag_orchestrator.domain.attachments import ATTACHMENT_ID, Attachment, AttachmentStatus
from rag_orchestrator.errors import AttachmentChanged, AttachmentNotFound

if TYPE_CHECKING:  # imported when first used: building a toolbox at start-up loads no S3 code
    from rag_orchestrator.attachments.objects import StoredObject
    from rag_orchestrator.attachments.service import Attachments

PENDING, FAILED = AttachmentStatus.PENDING_UPLOAD, AttachmentStatus.FAILED


class TurnAttachments:
    def __init__(self, attachments: Callable[[], Attachments]) -> None:
        self._attachments = attachments

    async def check(
        self, caller_id: str, conversation_id: str, attachment_ids: Sequence[str]
    ) -> list[Attachment]:
        """The attachments, in order; AttachmentNotFound (404) for one the caller does not own in this
        conversation, AttachmentNotReady (409) for one that FAILED or whose file was never uploaded."""
        from rag_orchestrator.attachments.service import not_ready

        service = self._attachments()
        found = await service.store.get_many(conversation_id, attachment_ids, caller_id)
        for attachment in found:
            if attachment.status is FAILED:
                raise not_ready(attachment)
        heads = await asyncio.gather(*(asyncio.to_thread(service.objects.head, a.key) for a in found))
        for attachment, stored in zip(found, heads, strict=True):
            if attachment.status is PENDING and stored is None:
                raise not_ready(attachment)
            check_pinned(attachment, stored)
        return found

    async def read(self, attachment: Attachment) -> Attachment:
        """The attachment READY with its segments, read now if nobody has; AttachmentNotReady if that failed.

        Shielded: a turn whose client leaves still stores what the reading found."""
        service = self._attachments()
        return await asyncio.shield(
            service.ensure_processed(
                attachment.caller_id, attachment.conversation_id, attachment.attachment_id
            )
        )

    async def link(self, caller_id: str, conversation_id: str, attachment_id: str) -> str:
        """A presigned GET of the attachment's file, valid ATTACHMENT_URL_TTL_SECONDS; AttachmentNotFound
        unless the caller owns it in this conversation, AttachmentNotReady if it was never uploaded."""
        if not ATTACHMENT_ID.fullmatch(attachment_id):
            raise AttachmentNotFound(attachment_id)
        from rag_orchestrator.attachments.service import not_ready

        service = self._attachments()
        attachment = await service.get(caller_id, conversation_id, attachment_id)
        stored = await asyncio.to_thread(service.objects.head, attachment.key)
        if attachment.status is PENDING and stored is None:
            raise not_ready(attachment)
        check_pinned(attachment, stored)
        ttl = service.settings.attachment_url_ttl_seconds
        return await asyncio.to_thread(
            service.objects.presign_get, attachment.key, ttl, attachment.version_id
        )


def check_pinned(attachment: Attachment, stored: StoredObject | None) -> None:
    """AttachmentChanged (409) when the file at the key is not the object processing read."""
    if attachment.etag and stored is not None and stored.etag != attachment.etag:
        raise AttachmentChanged(
            f"Attachment {attachment.attachment_id}'s file was replaced after it was read; "
            "the new file is not used. Attach it again as a new attachment"
        )

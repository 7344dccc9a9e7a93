"""Attachments: what the routes, a turn (phase B of docs/attachments.md) and AttachmentFunction call.

Processing runs once per attachment: whoever finds the file uploaded takes a lease (PROCESSING),
reads it in a worker thread and stores the outcome; anyone else waits for that outcome, or takes
over once the lease has run out (a worker that died).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from datetime import timedelta
from functools import cached_property
from typing import TYPE_CHECKING

from rag_orchestrator.attachments.engines import Engines
from rag_orchestrator.attachments.objects import AttachmentObjects, StoredObject
from rag_orchestrator.attachments.pipeline import read_segments
from rag_orchestrator.attachments.store import AttachmentStore
from rag_orchestrator.attachments.uploads import ReadFailure, TooLarge, UnsupportedContent, Upload
from rag_orchestrator.config import Settings
from rag_orchestrator.domain.attachments import (
    FINAL,
    KEY_PREFIX,
    Attachment,
    AttachmentStatus,
    CreateAttachmentRequest,
    CreatedAttachment,
    UploadForm,
    media_type,
)
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.caller_keys import key_parts
from rag_orchestrator.errors import (
    AttachmentNotFound,
    AttachmentNotReady,
    PayloadTooLarge,
    StorageUnavailable,
    UnsupportedMediaType,
)
from rag_orchestrator.observability import logger, metrics
from rag_orchestrator.retrieval.memory_switch import Conversations, still_remembered

if TYPE_CHECKING:
    from rag_orchestrator.retrieval.fragments import FragmentIndex

READY, FAILED = AttachmentStatus.READY, AttachmentStatus.FAILED
PROCESSING, PENDING = AttachmentStatus.PROCESSING, AttachmentStatus.PENDING_UPLOAD
LEASE_MARGIN_SECONDS = 30
POLL_SECONDS = (0.2, 0.5, 1.0, 2.0)


def parse_key(key: str) -> tuple[str, str, str] | None:
    """`attachments/<callerId>/<conversationId>/<attachmentId>` -> the three ids (caller ids may hold '/')."""
    parts = key_parts(key, KEY_PREFIX, 2)
    return (parts[0], parts[1], parts[2]) if parts is not None else None


def not_ready(attachment: Attachment) -> AttachmentNotReady:
    """The 409 for an attachment that is not READY, saying why (the detail is safe to show)."""
    attachment_id = attachment.attachment_id
    match attachment.status:
        case AttachmentStatus.FAILED:
            return AttachmentNotReady(f"Attachment {attachment_id} could not be read: {attachment.detail}")
        case AttachmentStatus.PENDING_UPLOAD:
            return AttachmentNotReady(f"Attachment {attachment_id} has not been uploaded")
    return AttachmentNotReady(f"Attachment {attachment_id} is still being processed; try again shortly")


class Attachments:
    def __init__(
        self,
        store: AttachmentStore,
        objects: AttachmentObjects,
        settings: Settings,
        *,
        engines: Callable[[], Engines],
        clock: Callable[[], float] = time.time,
        memory: FragmentIndex | None = None,
        conversations: Conversations | None = None,
    ) -> None:
        self.store = store
        self.objects = objects
        self.settings = settings
        self._build_engines = engines
        self._clock = clock
        self.memory = memory  # where READY segments are indexed (MEMORY_ENABLED), or None
        # Read once segments are indexed: a conversation deleted or made temporary since its file was
        # declared keeps none of them (retrieval/memory_switch.py).
        self.conversations = conversations

    @cached_property
    def engines(self) -> Engines:
        """Made on the first file read: an API request that only creates or lists loads none."""
        return self._build_engines()

    async def create(
        self,
        caller_id: str,
        conversation_id: str,
        request: CreateAttachmentRequest,
        *,
        remembered: bool = True,
    ) -> CreatedAttachment:
        """A PENDING_UPLOAD attachment and the presigned POST that uploads its file (conversation
        checked by the caller; `remembered` false in a temporary chat)."""
        content_type = media_type(request.content_type)
        if content_type not in self.settings.attachment_types:
            allowed = ", ".join(self.settings.attachment_types)
            raise UnsupportedMediaType(
                f"Content type {request.content_type!r} is not accepted; allowed: {allowed}"
            )
        limit = self.settings.attachment_max_bytes
        if request.size_bytes > limit:
            raise PayloadTooLarge(
                f"The file is {request.size_bytes} bytes; at most {limit} bytes are accepted"
            )
        attachment = Attachment(
            conversation_id=conversation_id,
            caller_id=caller_id,
            file_name=request.file_name,
            content_type=content_type,
            size_bytes=request.size_bytes,
            remembered=remembered,
        )
        ttl = self.settings.attachment_url_ttl_seconds
        form = await asyncio.to_thread(
            self.objects.presign_post, attachment.key, content_type, request.size_bytes, ttl
        )
        await self.store.create(attachment)
        metrics.add_metric(name="AttachmentsCreated", unit="Count", value=1)
        return CreatedAttachment(
            attachment_id=attachment.attachment_id,
            status=attachment.status,
            upload=UploadForm(url=form["url"], fields=form["fields"]),
            expires_at=attachment.created_at + timedelta(seconds=ttl),
        )

    async def get(self, caller_id: str, conversation_id: str, attachment_id: str) -> Attachment:
        return await self.store.get(conversation_id, attachment_id, caller_id)

    async def ensure_processed(
        self, caller_id: str, conversation_id: str, attachment_id: str, *, wait_seconds: float | None = None
    ) -> Attachment:
        """The READY attachment with its segments, processing it now if nobody has.

        Raises AttachmentNotFound (another caller's or conversation's, or none), and AttachmentNotReady
        when it FAILED, was never uploaded, or another worker is still reading it after `wait_seconds`.
        """
        attachment = await self.store.get(conversation_id, attachment_id, caller_id)
        was_ready = attachment.status is READY
        wait = self.settings.attachment_processing_timeout_seconds if wait_seconds is None else wait_seconds
        attachment = await self._process(attachment, wait_until=time.monotonic() + wait)
        if attachment.status is not READY:
            raise not_ready(attachment)
        if not was_ready:  # read just now (here or by the worker waited for): its segments go to memory
            await self._index(attachment, strict=False)
        return attachment

    async def process_object(self, key: str) -> Attachment | None:
        """Process the attachment an uploaded object belongs to (S3 ObjectCreated); None if it belongs to none."""
        ids = parse_key(key)
        if ids is None:
            return None
        caller_id, conversation_id, attachment_id = ids
        try:
            attachment = await self.store.get(conversation_id, attachment_id, caller_id)
        except AttachmentNotFound:
            logger.warning("an uploaded object has no attachment", extra={"key": key})
            return None
        attachment = await self._process(attachment, wait_until=time.monotonic())
        if attachment.status is READY:
            # Every time, READY before or not: a failed indexing is retried with the event.
            await self._index(attachment, strict=True)
        return attachment

    async def _index(self, attachment: Attachment, *, strict: bool) -> None:
        """Index the segments as conversation fragments, then forget them if their conversation is no
        longer remembered; a failure raises when `strict`, else is logged."""
        memory = self.memory
        if memory is None:
            return
        from rag_orchestrator.attachments.indexing import index_segments

        try:
            if await index_segments(memory, attachment) and self.conversations is not None:
                conversation_id, caller_id = attachment.conversation_id, attachment.caller_id
                if not await still_remembered(self.conversations, conversation_id, caller_id):
                    await asyncio.to_thread(memory.forget_conversation, conversation_id)
                    logger.info(
                        "attachment not remembered: its conversation is gone or temporary",
                        extra={"attachment_id": attachment.attachment_id},
                    )
        except Exception:
            if strict:
                raise
            logger.exception(
                "attachment segments not indexed", extra={"attachment_id": attachment.attachment_id}
            )

    async def _process(self, attachment: Attachment, *, wait_until: float) -> Attachment:
        polls = 0
        while attachment.status not in FINAL:
            now = int(self._clock())
            if attachment.status is PROCESSING and (attachment.lease_until or 0) >= now:
                if time.monotonic() >= wait_until:
                    return attachment
                await asyncio.sleep(POLL_SECONDS[min(polls, len(POLL_SECONDS) - 1)])
                polls += 1
            else:
                stored = await asyncio.to_thread(self.objects.head, attachment.key)
                if stored is None:
                    return attachment  # not uploaded (yet)
                lease = (
                    now
                    + math.ceil(self.settings.attachment_processing_timeout_seconds)
                    + LEASE_MARGIN_SECONDS
                )
                if await self.store.claim(attachment, now, lease):
                    return await self._read(attachment, stored)
            attachment = await self.store.get(
                attachment.conversation_id, attachment.attachment_id, attachment.caller_id
            )
        return attachment

    async def _read(self, attachment: Attachment, stored: StoredObject) -> Attachment:
        started = time.perf_counter()
        try:
            segments, detail = await asyncio.to_thread(self._read_file, attachment, stored)
            status = READY
        except ReadFailure as failure:
            segments, detail, status = [], str(failure), FAILED
        except StorageUnavailable:
            raise  # the file could not be read just now: the lease runs out and a later attempt retries
        except Exception:  # a defect, not the file's fault: recorded as FAILED, never left PROCESSING
            logger.exception(
                "attachment processing failed", extra={"attachment_id": attachment.attachment_id}
            )
            segments, detail, status = [], "processing failed", FAILED
        done = attachment.model_copy(
            update={
                "status": status,
                "detail": detail,
                "segments": segments,
                "size_bytes": stored.size,
                "updated_at": utcnow(),
                "lease_until": None,
                "etag": stored.etag,
                "version_id": stored.version_id,
            }
        )
        if status is AttachmentStatus.READY:
            metrics.add_metric(name="AttachmentsReady", unit="Count", value=1)
        else:
            metrics.add_metric(name="AttachmentsFailed", unit="Count", value=1)
        logger.info(
            "attachment processed",
            extra={
                "attachment_id": attachment.attachment_id,
                "status": status.value,
                "segments": len(segments),
                "seconds": round(time.perf_counter() - started, 3),
            },
        )
        if await self.store.finish(done):
            return done
        return await self.store.get(
            attachment.conversation_id, attachment.attachment_id, attachment.caller_id
        )

    def _read_file(self, attachment: Attachment, stored: StoredObject) -> tuple[list, str | None]:
        # S3 enforces the upload policy (the declared size exactly); this checks it did.
        if stored.size > self.settings.attachment_max_bytes:
            raise TooLarge(f"the file is larger than {self.settings.attachment_max_bytes} bytes")
        if stored.size != attachment.size_bytes:
            raise UnsupportedContent(
                f"the file is {stored.size} bytes, not the {attachment.size_bytes} declared"
            )
        if media_type(stored.content_type) != attachment.content_type:
            raise UnsupportedContent("the uploaded file's type differs from the declared one")
        upload = Upload(
            bucket=self.objects.bucket,
            key=attachment.key,
            content_type=attachment.content_type,
            size=stored.size,
            fetch=lambda: self.objects.read(attachment.key, stored),
            version_id=stored.version_id,
        )
        reading = read_segments(upload, attachment.kind, self.engines)
        return reading.segments, "; ".join(reading.notes) or None

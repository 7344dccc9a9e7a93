"""S3 ObjectCreated under `attachments/` -> each attachment processed once (AttachmentFunction's work)."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import unquote_plus

from rag_orchestrator.attachments.service import Attachments
from rag_orchestrator.domain.attachments import KEY_PREFIX
from rag_orchestrator.errors import RagError
from rag_orchestrator.observability import logger


class AttachmentRecordsFailed(RagError):
    error = "Attachment processing failed"

    def __init__(self, keys: list[str]) -> None:
        super().__init__(f"{len(keys)} attachment(s) could not be processed now: {', '.join(keys)}")
        self.keys = keys


def created_keys(event: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(keys of objects created under attachments/, keys of the other records)."""
    created: list[str] = []
    skipped: list[str] = []
    for record in event.get("Records") or []:
        key = unquote_plus(
            ((record.get("s3") or {}).get("object") or {}).get("key", "")
        )  # S3 URL-encodes keys
        if str(record.get("eventName", "")).startswith("ObjectCreated") and key.startswith(KEY_PREFIX):
            created.append(key)
        else:
            skipped.append(key)
    return created, skipped


async def process_event(attachments: Attachments, event: dict[str, Any]) -> dict[str, Any]:
    """Process every created attachment; raise after the others if one failed for a passing reason
    (storage unreachable), so Lambda retries the event and then hands it to the failure queue."""
    created, skipped = created_keys(event)
    processed: list[dict[str, str]] = []
    failed: list[str] = []
    for key in created:
        try:
            attachment = await attachments.process_object(key)
        except RagError as exc:
            logger.error("attachment not processed", extra={"key": key, "reason": exc.message})
            failed.append(key)
            continue
        if attachment is None:
            skipped.append(key)
        else:
            processed.append({"attachmentId": attachment.attachment_id, "status": attachment.status.value})
    if failed:
        raise AttachmentRecordsFailed(failed)
    return {"processed": processed, "skipped": skipped}


def process_s3_event(attachments: Attachments, event: dict[str, Any]) -> dict[str, Any]:
    return asyncio.run(process_event(attachments, event))

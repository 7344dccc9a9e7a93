"""AttachmentStore on the conversations table: `PK=CONV#<id>, SK=ATT#<attachmentId>`.

Segments are kept in the item as one JSON text; past 300 KB they go to S3 under the conversation's
content prefix, like a message's large contents, so the purge of the conversation removes them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import Settings
from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.contents import ContentOffloader
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.table import ConditionFailed, Table, in_worker_thread
from rag_orchestrator.domain.attachments import Attachment, AttachmentStatus
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.errors import AttachmentNotFound

SK_PREFIX = "ATT#"
PENDING, PROCESSING = AttachmentStatus.PENDING_UPLOAD.value, AttachmentStatus.PROCESSING.value


def attachment_key(conversation_id: str, attachment_id: str) -> dict[str, Any]:
    return it.to_attributes({"PK": it.pk(conversation_id), "SK": SK_PREFIX + attachment_id})


def to_item(attachment: Attachment) -> dict[str, Any]:
    values = attachment.model_dump(mode="json", exclude_none=True, exclude={"segments"})
    values["segments"] = json.dumps([s.model_dump(mode="json") for s in attachment.segments])
    return {"PK": it.pk(attachment.conversation_id), "SK": SK_PREFIX + attachment.attachment_id, **values}


def from_item(values: dict[str, Any]) -> Attachment:
    values = {k: v for k, v in values.items() if k not in ("PK", "SK")}
    values["segments"] = json.loads(values.get("segments") or "[]")
    return Attachment.model_validate(values)


class DynamoAttachmentStore:
    def __init__(self, table: str, bucket: str, *, dynamodb: Any, s3: Any) -> None:
        self._table = Table(dynamodb, table)
        self._contents = ContentOffloader(s3, bucket, fields=("segments",), id_field="attachmentId")

    @classmethod
    def from_settings(cls, settings: Settings, aws: AwsClients) -> DynamoAttachmentStore:
        return cls(
            settings.conversations_table or "",
            settings.transcripts_bucket or "",
            dynamodb=aws.client("dynamodb"),
            s3=aws.lazy("s3"),
        )

    @in_worker_thread
    def create(self, attachment: Attachment) -> None:
        self._table.call(
            "put_item",
            Item=it.to_attributes(to_item(attachment)),
            ConditionExpression="attribute_not_exists(PK)",
        )

    @in_worker_thread
    def get(self, conversation_id: str, attachment_id: str, caller_id: str) -> Attachment:
        response = self._table.call(
            "get_item", Key=attachment_key(conversation_id, attachment_id), ConsistentRead=True
        )
        values = it.from_attributes(response.get("Item") or {})
        if values.get("callerId") != caller_id:
            raise AttachmentNotFound(attachment_id)
        return from_item(self._contents.restore(values))

    @in_worker_thread
    def get_many(
        self, conversation_id: str, attachment_ids: Sequence[str], caller_id: str
    ) -> list[Attachment]:
        if not attachment_ids:
            return []
        found = self._table.batch_get([attachment_key(conversation_id, aid) for aid in attachment_ids])
        owned = {values["attachmentId"]: values for values in found if values.get("callerId") == caller_id}
        for aid in attachment_ids:
            if aid not in owned:
                raise AttachmentNotFound(aid)
        return [from_item(self._contents.restore(owned[aid])) for aid in attachment_ids]

    @in_worker_thread
    def claim(self, attachment: Attachment, now: int, lease_until: int) -> bool:
        try:
            self._table.call(
                "update_item",
                Key=attachment_key(attachment.conversation_id, attachment.attachment_id),
                UpdateExpression="SET #status = :processing, leaseUntil = :until, updatedAt = :updated",
                ConditionExpression="#status = :pending OR (#status = :processing AND leaseUntil < :now)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=it.to_attributes(
                    {
                        ":processing": PROCESSING,
                        ":pending": PENDING,
                        ":until": lease_until,
                        ":now": now,
                        ":updated": iso(utcnow()),
                    }
                ),
            )
        except ConditionFailed:
            return False
        return True

    @in_worker_thread
    def finish(self, attachment: Attachment) -> bool:
        values = self._contents.offload(to_item(attachment))
        try:
            self._table.call(
                "put_item",
                Item=it.to_attributes(values),
                ConditionExpression="#status = :processing",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=it.to_attributes({":processing": PROCESSING}),
            )
        except ConditionFailed:
            return False
        return True

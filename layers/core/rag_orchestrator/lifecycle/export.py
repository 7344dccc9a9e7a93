"""A caller's export (docs/privacy.md): one JSON document of everything about the caller, in S3.

    PK=EXPORT#<exportId>  SK=META   callerId, status (RUNNING | READY), requestedAt, readyAt, objectKey;
                                    in ByCaller under EXPORTS#<callerId> (an erasure removes them)
    s3://TRANSCRIPTS_BUCKET/exports/<exportId>.json

The document: conversations (not deleted) with every message and version (reasoning traces left out, as
in every response), attachments (metadata and a download URL), memory fragments, ratings, usage days.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.store import ConversationStore
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.domain.attachments import object_key as attachment_object
from rag_orchestrator.domain.base import new_id, utcnow
from rag_orchestrator.domain.conversations import MessageResponse
from rag_orchestrator.errors import NotFound
from rag_orchestrator.lifecycle.partitions import indexed, partition

EXPORTS_PREFIX = "EXPORTS#"
URL_SECONDS = 3600
RUNNING, READY = "RUNNING", "READY"
_HIDDEN = ("PK", "SK", "GSI1PK", "GSI1SK", "GSI3PK", "GSI3SK", "entity", "expiresAt", "segments")


class ExportNotFound(NotFound):
    error = "Export not found"


def export_key(export_id: str) -> dict[str, Any]:
    return it.to_attributes({"PK": f"EXPORT#{export_id}", "SK": it.META})


def object_key(export_id: str) -> str:
    return f"exports/{export_id}.json"


class Exports:
    """Export jobs: started by the route, built by the lifecycle job, read back as a presigned URL."""

    def __init__(self, table: Table, s3: Any, bucket: str) -> None:
        self._table = table
        self._s3 = s3
        self._bucket = bucket

    def start(self, caller_id: str) -> str:
        export_id, now = new_id(), iso(utcnow())
        item = {
            "exportId": export_id,
            "callerId": caller_id,
            "status": RUNNING,
            "requestedAt": now,
            "GSI1PK": EXPORTS_PREFIX + caller_id,
            "GSI1SK": now,
            "entity": "export",
        }
        self._table.call("put_item", Item=export_key(export_id) | it.to_attributes(item))
        return export_id

    def status(self, export_id: str, caller_id: str) -> dict[str, Any]:
        """The caller's export, with `url` (valid an hour) once READY; another caller's is a 404 too."""
        found = self._table.call("get_item", Key=export_key(export_id), ConsistentRead=True).get("Item")
        job = it.from_attributes(found or {})
        if job.get("callerId") != caller_id:
            raise ExportNotFound(f"Export not found: {export_id}")
        answer: dict[str, Any] = {
            k: job[k] for k in ("exportId", "status", "requestedAt", "readyAt") if k in job
        }
        if job.get("status") == READY:
            answer["url"] = self._s3.generate_presigned_url(
                "get_object", Params={"Bucket": self._bucket, "Key": job["objectKey"]}, ExpiresIn=URL_SECONDS
            )
            answer["expiresIn"] = URL_SECONDS
        return answer

    def build(self, export_id: str, document: Callable[[str], dict[str, Any]]) -> None:
        """Write the document of the export's caller and mark it READY (run again: the same)."""
        found = self._table.call("get_item", Key=export_key(export_id), ConsistentRead=True).get("Item")
        job = it.from_attributes(found or {})
        if not job or job.get("status") == READY:
            return
        body = json.dumps(document(job["callerId"]), ensure_ascii=False, default=str).encode()
        key = object_key(export_id)
        self._s3.put_object(Bucket=self._bucket, Key=key, Body=body, ContentType="application/json")
        self._table.call(
            "update_item",
            Key=export_key(export_id),
            UpdateExpression="SET #status = :ready, readyAt = :now, objectKey = :key",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues=it.to_attributes({":ready": READY, ":now": iso(utcnow()), ":key": key}),
        )


class ExportDocument:
    """Everything about one caller, gathered from the store, the table, S3 and conversation memory."""

    def __init__(
        self,
        table: Table,
        store: ConversationStore,
        fragments: Callable[[str], list[dict[str, object]]],
        download_url: Callable[[str], str] | None,
    ) -> None:
        self._table = table
        self._store = store
        self._fragments = fragments
        self._download_url = download_url

    def __call__(self, caller_id: str) -> dict[str, Any]:
        conversations, attachments, ratings = [], [], []
        for conversation_id in indexed(self._table, "CALLER#" + caller_id):
            conversation, messages = asyncio.run(self._conversation(conversation_id, caller_id))
            conversations.append(conversation | {"messages": messages})
            for item in partition(self._table, it.pk(conversation_id)):
                if item["SK"].startswith("ATT#"):
                    attachments.append(self._attachment(item))
                elif item["SK"].startswith("FEEDBACK#"):
                    ratings.append(_plain(item))
        usage = [_plain(v) for v in partition(self._table, f"USAGE#{caller_id}")]
        return {
            "callerId": caller_id,
            "exportedAt": iso(utcnow()),
            "conversations": conversations,
            "attachments": attachments,
            "memory": self._fragments(caller_id),
            "feedback": ratings,
            "usage": usage,
        }

    async def _conversation(self, conversation_id: str, caller_id: str) -> tuple[dict[str, Any], list[Any]]:
        conversation = await self._store.get(conversation_id, caller_id)
        messages, cursor = [], None
        while True:
            page = await self._store.messages(
                conversation_id, caller_id, limit=100, cursor=cursor, all_versions=True
            )
            messages += [MessageResponse.of(m).model_dump(mode="json", by_alias=True) for m in page.items]
            if not (cursor := page.next_cursor):
                return conversation.model_dump(mode="json", by_alias=True, exclude_none=True), messages

    def _attachment(self, item: dict[str, Any]) -> dict[str, Any]:
        values = _plain(item)
        ids = [str(item.get(f) or "") for f in ("callerId", "conversationId", "attachmentId")]
        key = item.get("objectKey") or (attachment_object(*ids) if all(ids) else None)
        if self._download_url is not None and key and item.get("status") in (None, "READY"):
            values["downloadUrl"] = self._download_url(str(key))
        return values


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k not in _HIDDEN}

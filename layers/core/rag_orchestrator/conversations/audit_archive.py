"""The audit trail in the archival job (docs/audit.md): archived with the transcript, kept when the
conversation is purged, removed AUDIT_RETENTION_DAYS after the deletion.

Archive: the table's records join the trail in S3 (`audit/<callerId>/<conversationId>.jsonl`, written
and verified before META points at it with `auditS3Key`), then leave the table with the messages.
Purge: before META goes, an AUDIT$ item takes over the head hash and `auditS3Key`, listed in the
ByArchive index under RETAIN#<shard> by the end of the retention, and every record gets a TTL a
grace period later (a backstop). Expire (that end reached): the S3 trail's versions, the records,
then the AUDIT$ item last, so a run that stops half way is found again by the next.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.audit_trail import AUDIT_HEAD, record_of
from rag_orchestrator.conversations.dynamo_audit import read_trail
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.s3_objects import ObjectStore
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.conversations.transcripts import S3AuditTrails, merge_trails, trail_jsonl, trail_key
from rag_orchestrator.domain.base import utcnow

HEAD_FIELDS = ("callerId", "lastAuditHash", "auditCount", "auditS3Key")


class TrailKeeper:
    def __init__(
        self, table: Table, objects: ObjectStore, trails: S3AuditTrails, retention: timedelta
    ) -> None:
        self._table = table
        self._objects = objects
        self._trails = trails
        self._retention = retention

    def records(self, conversation_id: str) -> list[dict[str, Any]]:
        """The audit items still in the table, oldest first."""
        return read_trail(self._table, conversation_id)

    def archive(
        self, conversation_id: str, meta: dict[str, Any], stored: list[dict[str, Any]]
    ) -> tuple[str | None, int]:
        """The S3 trail with the table's records added: its key (None: no records at all) and the
        bytes written (0 when the table holds none)."""
        key = meta.get("auditS3Key")
        if not stored:
            return key, 0
        held = self._trails.read(key) if key else []
        key = key or trail_key(meta["callerId"], conversation_id)
        merged = merge_trails(held, [record_of(v) for v in stored])
        return key, self._objects.put_verified(key, trail_jsonl(merged))

    def retain(self, conversation_id: str, meta: dict[str, Any], stored: list[dict[str, Any]]) -> None:
        """Keep the trail past the purge of META (idempotent: a purge run again writes the same); in the
        caller's TRAIL# partition of ByCaller while `meta` names the caller (an erasure's does not)."""
        if not stored and not meta.get("auditS3Key"):
            return
        deleted = meta.get("deletedAt") or iso(utcnow())  # a guest's conversation expires undeleted
        until = datetime.fromisoformat(deleted.replace("Z", "+00:00")) + self._retention
        ttl = it.epoch(until + it.TTL_GRACE)
        caller = (
            {"GSI1PK": it.TRAIL_PREFIX + meta["callerId"], "GSI1SK": conversation_id}
            if meta.get("callerId")
            else {}
        )
        head = (
            caller
            | {field: meta[field] for field in HEAD_FIELDS if meta.get(field)}
            | {
                "PK": it.pk(conversation_id),
                "SK": AUDIT_HEAD,
                "entity": "auditHead",
                "conversationId": conversation_id,
                "deletedAt": deleted,
                "GSI3PK": it.archive_shard(conversation_id, it.RETAIN_PREFIX),
                "GSI3SK": iso(until),
                "expiresAt": ttl,
            }
        )
        self._table.call("put_item", Item=it.to_attributes(head))
        self._table.batch_put([it.to_attributes(v | {"expiresAt": ttl}) for v in stored])

    def expire(self, conversation_id: str, due_before: str) -> int | None:
        """Remove a retained trail whose retention ended before `due_before` (ISO): the number of
        records removed, None when it is not due (or gone)."""
        key = it.to_attributes({"PK": it.pk(conversation_id), "SK": AUDIT_HEAD})
        found = self._table.call("get_item", Key=key, ConsistentRead=True).get("Item")
        head = it.from_attributes(found or {})
        due = head.get("GSI3PK", "").startswith(it.RETAIN_PREFIX) and head.get("GSI3SK", "") < due_before
        if not due:
            return None
        if head.get("auditS3Key"):
            self._objects.delete_versions(head["auditS3Key"], exact=True)
        stored = self.records(conversation_id)
        self._table.batch_delete([it.to_attributes({"PK": v["PK"], "SK": v["SK"]}) for v in stored])
        self._table.call("delete_item", Key=key)
        return len(stored)

"""Archiving one conversation, and purging one deleted conversation; every step crash-safe.

Archive (an ACTIVE conversation idle past the cutoff, or an ARCHIVED one in the CLEANUP# partition):
  1. read META and every message item (consistent Query, paginated);
  2. unless ARCHIVED with every table message already in the transcript: write the transcript (the
     one in S3 for a conversation archived before and continued, plus the table's messages it lacks),
     and verify the stored object's size and SHA-256;
     (the audit records read in 1 join the S3 audit trail the same way: audit_archive.py);
  3. a conditional update of META (updatedAt as read in 1, no turn running, not DELETED) sets ARCHIVED,
     s3Key (and auditS3Key), archivedAt and re-keys the ByArchive entry from ARCHIVE#<shard> to
     CLEANUP#<shard>;
  4. delete the message and audit items read in 1, then the messages' offloaded contents;
  5. re-key the CLEANUP# entry to IDLE#<shard>, still by lastMessageAt, where retention finds it
     (conditional: a conversation continued meanwhile is in ARCHIVE# again).

A crash before 3 leaves the conversation ACTIVE and an object nothing points at, which the next run
overwrites; after 3, the CLEANUP# entry leads the next run back to 4 (writing nothing: the transcript
holds every message). Readers merge transcript and table by message id, so nothing shows twice.

Purge (DELETED longer ago than the retention, or a guest's conversation no guest token can reach any
more): the conversation's fragments in conversation memory (its turns and its attachments' segments:
DELETE removed them already unless Chroma failed then), every version of the transcript and of the
offloaded contents, then the partition's items, META last, so a crash or a failure leaves it findable
for the next run. The audit records stay, handed to an AUDIT$ item until AUDIT_RETENTION_DAYS after the
deletion (audit_archive.py), when `expire` removes them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.audit_archive import TrailKeeper
from rag_orchestrator.conversations.audit_trail import AUDIT_HEAD, AUDIT_PREFIX
from rag_orchestrator.conversations.contents import OFFLOADABLE, ContentOffloader, content_prefix
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.meta_update import LOCK_FREE, meta_key
from rag_orchestrator.conversations.s3_objects import ObjectStore
from rag_orchestrator.conversations.table import ConditionFailed, Table
from rag_orchestrator.conversations.transcripts import S3AuditTrails, S3Transcripts, to_jsonl, transcript_key
from rag_orchestrator.domain.attachments import conversation_prefix, files_of
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.conversations import ConversationMessage, ConversationStatus

ACTIVE, ARCHIVED, DELETED = (s.value for s in ConversationStatus)
AUDIT_RETENTION = timedelta(days=365)

# (step, conversation_id), called after "read", "written" (transcript verified) and "marked"
# (status updated): where tests inject a crash or a concurrent write.
Checkpoint = Callable[[str, str], None]
# Deletes every fragment of a conversation from conversation memory (FragmentIndex.forget_conversation).
Forget = Callable[[str], None]


class Outcome(StrEnum):
    ARCHIVED = "archived"  # moved to S3 by this run
    CLEANED = "cleaned"  # message items removed after an earlier run stopped past step 3
    PURGED = "purged"
    EXPIRED = "expired"  # a purged conversation's audit trail, past its retention, removed
    RETIRED = "retired"  # idle past CONVERSATION_RETENTION_DAYS: deleted, to be purged like any other
    SKIPPED = "skipped"  # changed since read, a turn running, not due (any more), or gone


@dataclass(frozen=True, slots=True)
class Result:
    outcome: Outcome
    messages: int = 0  # message items moved out of (or purged from) the table
    bytes: int = 0  # transcript bytes written


SKIPPED = Result(Outcome.SKIPPED)


def _no_checkpoint(step: str, conversation_id: str) -> None:
    return None


class ConversationArchiver:
    def __init__(
        self,
        table: Table,
        s3: Any,
        bucket: str,
        *,
        forget: Forget,
        checkpoint: Checkpoint | None = None,
        audit_retention: timedelta = AUDIT_RETENTION,
        attachments_bucket: str | None = None,
    ) -> None:
        self._table = table
        self._forget = forget
        self._objects = ObjectStore(s3, bucket)
        self._attachment_objects = ObjectStore(s3, attachments_bucket) if attachments_bucket else None
        self._contents = ContentOffloader(s3, bucket)
        self._transcripts = S3Transcripts(s3, bucket)
        self._trail = TrailKeeper(table, self._objects, S3AuditTrails(s3, bucket), audit_retention)
        self._checkpoint = checkpoint or _no_checkpoint

    def archive(self, conversation_id: str, due_before: str) -> Result:
        """Steps 1-5 for a conversation idle since before `due_before` (ISO), or one left in CLEANUP#."""
        meta, items = self._read(conversation_id, it.META, it.MSG_END)
        if meta is None or not _archivable(meta, due_before):
            return SKIPPED
        self._checkpoint("read", conversation_id)
        trail = self._trail.records(conversation_id)
        held = self._transcripts.read(meta["s3Key"]) if meta.get("s3Key") else []
        known = {m.message_id for m in held}
        offloaded = _content_keys(items)
        # Query order is newest first; the transcript is oldest first.
        fresh = [self._message(v) for v in reversed(items) if v.get("messageId") not in known]
        outcome, written = Outcome.CLEANED, 0
        if meta["status"] == ACTIVE or fresh:
            key = meta.get("s3Key") or transcript_key(meta["callerId"], conversation_id)
            written = self._objects.put_verified(key, to_jsonl([*held, *fresh]))
            trail_key, trail_bytes = self._trail.archive(conversation_id, meta, trail)
            written += trail_bytes
            self._checkpoint("written", conversation_id)
            if not self._mark(conversation_id, meta, key, trail_key):
                return SKIPPED  # the objects stay; the next run overwrites them
            self._checkpoint("marked", conversation_id)
            outcome = Outcome.ARCHIVED
        self._table.batch_delete(_raw_keys([*items, *trail]))
        self._objects.delete_objects({"Key": k} for k in offloaded)
        self._unlist(conversation_id)
        return Result(outcome, len(items), written)

    def purge(self, conversation_id: str, due_before: str) -> Result:
        """Remove every trace but the audit trail of a conversation due before `due_before` (ISO):
        DELETED then (PURGE#), or a guest's last active then (EXPIRE#)."""
        meta, items = self._read(conversation_id)
        if meta is None or not _purgeable(meta, due_before):
            return SKIPPED
        self._forget(conversation_id)
        keys = {transcript_key(meta["callerId"], conversation_id)}
        if meta.get("s3Key"):
            keys.add(meta["s3Key"])
        for key in keys:
            self._objects.delete_versions(key, exact=True)
        self._objects.delete_versions(content_prefix(conversation_id), exact=False)
        if self._attachment_objects is not None:  # the uploaded files (their segments went with the contents)
            caller_id = meta["callerId"]
            self._attachment_objects.delete_versions(
                conversation_prefix(caller_id, conversation_id), exact=False, keep=files_of(caller_id)
            )
        self._trail.retain(conversation_id, meta, [v for v in items if v["SK"].startswith(AUDIT_PREFIX)])
        self._table.batch_delete(
            _raw_keys(v for v in items if not v["SK"].startswith((AUDIT_PREFIX, AUDIT_HEAD)))
        )
        # Only as read (a guest's may still be ACTIVE): in the same partition, not written since.
        try:
            self._table.call(
                "delete_item",
                Key=meta_key(conversation_id),
                ConditionExpression="GSI3PK = :listed AND updatedAt = :seen",
                ExpressionAttributeValues=it.to_attributes(
                    {":listed": meta["GSI3PK"], ":seen": meta["updatedAt"]}
                ),
            )
        except ConditionFailed:
            return SKIPPED  # a turn ended after the deletion and wrote again: the next run sees it
        messages = sum(1 for v in items if v["SK"].startswith(it.MSG_PREFIX))
        return Result(Outcome.PURGED, messages)

    def expire(self, conversation_id: str, due_before: str) -> Result:
        """Remove a purged conversation's audit trail once its retention ended before `due_before`."""
        removed = self._trail.expire(conversation_id, due_before)
        return SKIPPED if removed is None else Result(Outcome.EXPIRED, removed)

    # ------------------------------------------------------------------ DynamoDB

    def _read(
        self, conversation_id: str, first: str | None = None, last: str | None = None
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """META, and the other items from `first` to `last` (the whole partition without them).

        Message keys are inverted: their ascending order is newest first."""
        values = {":pk": it.pk(conversation_id)}
        condition = "PK = :pk"
        if first and last:
            condition += " AND SK BETWEEN :first AND :last"
            values |= {":first": first, ":last": last}
        params: dict[str, Any] = {
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": it.to_attributes(values),
            "ConsistentRead": True,
        }
        found: list[dict[str, Any]] = []
        while True:
            response = self._table.call("query", **params)
            found += [it.from_attributes(v) for v in response.get("Items", ())]
            if "LastEvaluatedKey" not in response:
                break
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        meta = next((v for v in found if v["SK"] == it.META), None)
        return meta, [v for v in found if v["SK"] != it.META]

    def _mark(self, conversation_id: str, meta: dict[str, Any], key: str, trail_key: str | None) -> bool:
        """Step 3; False when the conversation changed since it was read."""
        trail = {":trail": trail_key} if trail_key else {}
        try:
            self._table.call(
                "update_item",
                Key=meta_key(conversation_id),
                UpdateExpression="SET #status = :archived, s3Key = :key, archivedAt = :now, GSI3PK = :cleanup"
                + (", auditS3Key = :trail" if trail_key else ""),
                ConditionExpression=f"#status IN (:active, :archived) AND updatedAt = :seen AND {LOCK_FREE}",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=it.to_attributes(
                    {
                        ":archived": ARCHIVED,
                        ":active": ACTIVE,
                        ":key": key,
                        ":now": iso(utcnow()),
                        ":cleanup": it.archive_shard(conversation_id, it.CLEANUP_PREFIX),
                        ":seen": meta["updatedAt"],
                        ":epoch": int(time.time()),
                    }
                    | trail
                ),
            )
        except ConditionFailed:
            return False
        return True

    def _unlist(self, conversation_id: str) -> None:
        try:
            self._table.call(
                "update_item",
                Key=meta_key(conversation_id),
                UpdateExpression="SET GSI3PK = :idle",
                ConditionExpression="GSI3PK = :cleanup",
                ExpressionAttributeValues=it.to_attributes(
                    {
                        ":cleanup": it.archive_shard(conversation_id, it.CLEANUP_PREFIX),
                        ":idle": it.archive_shard(conversation_id, it.IDLE_PREFIX),
                    }
                ),
            )
        except ConditionFailed:
            return  # continued meanwhile: back in ARCHIVE#, which is where it belongs

    def _message(self, values: dict[str, Any]) -> ConversationMessage:
        return ConversationMessage.model_validate(self._contents.restore(dict(values)))


def _purgeable(meta: dict[str, Any], due_before: str) -> bool:
    index, listed = meta.get("GSI3PK", ""), meta.get("GSI3SK", "")
    if index.startswith(it.EXPIRE_PREFIX):  # a guest's: no guest token reaches it any more
        return listed < due_before
    return meta.get("status") == DELETED and index.startswith(it.PURGE_PREFIX) and listed < due_before


def _archivable(meta: dict[str, Any], due_before: str) -> bool:
    if int(meta.get("turnLockUntil", 0)) >= time.time():
        return False
    index = meta.get("GSI3PK", "")
    if meta.get("status") == ACTIVE:
        return index.startswith(it.ARCHIVE_PREFIX) and meta.get("GSI3SK", "") < due_before
    return meta.get("status") == ARCHIVED and index.startswith(it.CLEANUP_PREFIX)


def _content_keys(items: Iterable[dict[str, Any]]) -> list[str]:
    return [v[f"{f}S3Key"] for v in items for f in OFFLOADABLE if v.get(f"{f}S3Key")]


def _raw_keys(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [it.to_attributes({"PK": v["PK"], "SK": v["SK"]}) for v in items]

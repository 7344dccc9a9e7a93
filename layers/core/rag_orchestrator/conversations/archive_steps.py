"""Archiving one conversation, and purging one deleted conversation; every step crash-safe.

Archive (an ACTIVE conversation idle past the cutoff, or an ARCHIVED one in the CLEANUP# partition):
  1. read META and every message item (consistent Query, paginated);
  2. unless ARCHIVED with every table message already in the transcript: write the transcript (the
     one in S3 for a conversation archived before and continued, plus the table's messages it lacks),
     and verify the stored object's size and SHA-256;
  3. a conditional update of META (updatedAt as read in 1, no turn running, not DELETED) sets ARCHIVED,
     s3Key, archivedAt and re-keys the ByArchive entry from ARCHIVE#<shard> to CLEANUP#<shard>;
  4. delete the message items read in 1, then their offloaded contents;
  5. remove the CLEANUP# entry (conditional: a conversation continued meanwhile is in ARCHIVE# again).

A crash before 3 leaves the conversation ACTIVE and an object nothing points at, which the next run
overwrites; after 3, the CLEANUP# entry leads the next run back to 4 (writing nothing: the transcript
holds every message). Readers merge transcript and table by message id, so nothing shows twice.

Purge (DELETED longer ago than the retention): the conversation's fragments in conversation memory
(its turns and its attachments' segments: DELETE removed them already unless Chroma failed then), every
version of the transcript and of the offloaded contents, then the partition's items, META last, so a
crash or a failure leaves it findable for the next run.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.contents import OFFLOADABLE, ContentOffloader, content_prefix
from rag_orchestrator.conversations.dynamo_writes import meta_key
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.table import ConditionFailed, Table
from rag_orchestrator.conversations.transcripts import S3Transcripts, to_jsonl, transcript_key
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.conversations import ConversationMessage, ConversationStatus
from rag_orchestrator.errors import StorageUnavailable

ACTIVE, ARCHIVED, DELETED = (s.value for s in ConversationStatus)
S3_DELETE_BATCH = 1000

# (step, conversation_id), called after "read", "written" (transcript verified) and "marked"
# (status updated): where tests inject a crash or a concurrent write.
Checkpoint = Callable[[str, str], None]
# Deletes every fragment of a conversation from conversation memory (FragmentIndex.forget_conversation).
Forget = Callable[[str], None]


class Outcome(StrEnum):
    ARCHIVED = "archived"  # moved to S3 by this run
    CLEANED = "cleaned"  # message items removed after an earlier run stopped past step 3
    PURGED = "purged"
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
        self, table: Table, s3: Any, bucket: str, *, forget: Forget, checkpoint: Checkpoint | None = None
    ) -> None:
        self._table = table
        self._forget = forget
        self._s3 = s3
        self._bucket = bucket
        self._contents = ContentOffloader(s3, bucket)
        self._transcripts = S3Transcripts(s3, bucket)
        self._checkpoint = checkpoint or _no_checkpoint

    def archive(self, conversation_id: str, due_before: str) -> Result:
        """Steps 1-5 for a conversation idle since before `due_before` (ISO), or one left in CLEANUP#."""
        meta, items = self._read(conversation_id, it.META, it.MSG_END)
        if meta is None or not _archivable(meta, due_before):
            return SKIPPED
        self._checkpoint("read", conversation_id)
        held = self._transcripts.read(meta["s3Key"]) if meta.get("s3Key") else []
        known = {m.message_id for m in held}
        offloaded = _content_keys(items)
        # Query order is newest first; the transcript is oldest first.
        fresh = [self._message(v) for v in reversed(items) if v.get("messageId") not in known]
        outcome, written = Outcome.CLEANED, 0
        if meta["status"] == ACTIVE or fresh:
            key = meta.get("s3Key") or transcript_key(meta["callerId"], conversation_id)
            written = self._put_verified(key, to_jsonl([*held, *fresh]))
            self._checkpoint("written", conversation_id)
            if not self._mark(conversation_id, meta, key):
                return SKIPPED  # the object stays; the next run overwrites it
            self._checkpoint("marked", conversation_id)
            outcome = Outcome.ARCHIVED
        self._table.batch_delete(_raw_keys(items))
        self._delete_objects({"Key": k} for k in offloaded)
        self._unlist(conversation_id)
        return Result(outcome, len(items), written)

    def purge(self, conversation_id: str, due_before: str) -> Result:
        """Remove every trace of a conversation DELETED before `due_before` (ISO)."""
        meta, items = self._read(conversation_id)
        if meta is None:
            return SKIPPED
        due = (
            meta.get("status") == DELETED
            and meta.get("GSI3PK", "").startswith(it.PURGE_PREFIX)
            and meta.get("GSI3SK", "") < due_before
        )
        if not due:
            return SKIPPED
        self._forget(conversation_id)
        keys = {transcript_key(meta["callerId"], conversation_id)}
        if meta.get("s3Key"):
            keys.add(meta["s3Key"])
        for key in keys:
            self._delete_versions(key, exact=True)
        self._delete_versions(content_prefix(conversation_id), exact=False)
        self._table.batch_delete(_raw_keys(items))
        try:
            self._table.call(
                "delete_item",
                Key=meta_key(conversation_id),
                ConditionExpression="#status = :deleted AND updatedAt = :seen",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=it.to_attributes({":deleted": DELETED, ":seen": meta["updatedAt"]}),
            )
        except ConditionFailed:
            return SKIPPED  # a turn ended after the deletion and wrote again: the next run sees it
        messages = sum(1 for v in items if v["SK"].startswith(it.MSG_PREFIX))
        return Result(Outcome.PURGED, messages)

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

    def _mark(self, conversation_id: str, meta: dict[str, Any], key: str) -> bool:
        """Step 3; False when the conversation changed since it was read."""
        try:
            self._table.call(
                "update_item",
                Key=meta_key(conversation_id),
                UpdateExpression="SET #status = :archived, s3Key = :key, archivedAt = :now, GSI3PK = :cleanup",
                ConditionExpression="#status IN (:active, :archived) AND updatedAt = :seen "
                "AND (attribute_not_exists(turnLockUntil) OR turnLockUntil < :epoch)",
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
                UpdateExpression="REMOVE GSI3PK, GSI3SK",
                ConditionExpression="GSI3PK = :cleanup",
                ExpressionAttributeValues=it.to_attributes(
                    {":cleanup": it.archive_shard(conversation_id, it.CLEANUP_PREFIX)}
                ),
            )
        except ConditionFailed:
            return  # continued meanwhile: back in ARCHIVE#, which is where it belongs

    def _message(self, values: dict[str, Any]) -> ConversationMessage:
        return ConversationMessage.model_validate(self._contents.restore(dict(values)))

    # ------------------------------------------------------------------ S3

    def _put_verified(self, key: str, body: bytes) -> int:
        """Put the transcript, then check the stored object's size and SHA-256 against `body`."""
        digest = base64.b64encode(hashlib.sha256(body).digest()).decode()
        try:
            put = self._s3.put_object(
                Bucket=self._bucket,
                Key=key,
                Body=body,
                ContentType="application/x-ndjson",
                ChecksumAlgorithm="SHA256",
                ChecksumSHA256=digest,
            )
            version = {"VersionId": put["VersionId"]} if put.get("VersionId") else {}
            head = self._s3.head_object(Bucket=self._bucket, Key=key, ChecksumMode="ENABLED", **version)
        except (ClientError, BotoCoreError) as exc:
            raise StorageUnavailable("Could not store the transcript") from exc
        if head.get("ContentLength") != len(body) or head.get("ChecksumSHA256") != digest:
            raise StorageUnavailable(f"The stored transcript {key} does not match what was written")
        return len(body)

    def _delete_versions(self, prefix: str, *, exact: bool) -> None:
        """Every version and delete marker of `prefix` (the key itself when `exact`)."""
        found = []
        try:
            for page in self._s3.get_paginator("list_object_versions").paginate(
                Bucket=self._bucket, Prefix=prefix
            ):
                for entry in [*page.get("Versions", ()), *page.get("DeleteMarkers", ())]:
                    if not exact or entry["Key"] == prefix:
                        found.append({"Key": entry["Key"], "VersionId": entry["VersionId"]})
        except (ClientError, BotoCoreError) as exc:
            raise StorageUnavailable("Could not list the objects to purge") from exc
        self._delete_objects(found)

    def _delete_objects(self, objects: Iterable[dict[str, str]]) -> None:
        pending = list(objects)
        for start in range(0, len(pending), S3_DELETE_BATCH):
            chunk = pending[start : start + S3_DELETE_BATCH]
            try:
                response = self._s3.delete_objects(
                    Bucket=self._bucket, Delete={"Objects": chunk, "Quiet": True}
                )
            except (ClientError, BotoCoreError) as exc:
                raise StorageUnavailable("Could not delete objects") from exc
            if response.get("Errors"):
                raise StorageUnavailable(f"Could not delete {len(response['Errors'])} objects")


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

"""Erasing one conversation of a caller; every step idempotent, META removed last.

  1. read the partition (consistently);
  2. with META still there: the conversation's fragments in conversation memory, its transcript (every
     version), offloaded contents and uploaded files in S3, and its shares;
  3. the archived audit trail, if any, rewritten without the plain caller id under a key that names no
     caller (`audit-pseudonymous/<conversationId>.jsonl`), written and verified;
  4. the audit records kept under an AUDIT$ item as a purge keeps them (audit_archive.py), without the
     plain caller id: their hashes cover `actorRef`, so the chain still checks out;
  5. every other item of the partition, META last; then the old S3 trail.

A run stopped anywhere is found again by the next (META, or the AUDIT$ item still in the caller's TRAIL#
partition, is what lists it) and does the rest; what is gone already is simply not found.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.audit_archive import TrailKeeper
from rag_orchestrator.conversations.audit_trail import AUDIT_HEAD, AUDIT_PREFIX
from rag_orchestrator.conversations.contents import content_prefix
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.s3_objects import ObjectStore
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.conversations.transcripts import S3AuditTrails, trail_jsonl, transcript_key
from rag_orchestrator.domain.attachments import conversation_prefix, files_of
from rag_orchestrator.domain.audit import pseudonymous
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.lifecycle.partitions import Tally, partition, raw_keys

SHARE_POINTER = "SHARE#"  # PK=CONV#<id>, SK=SHARE#<shareId>: a share of the conversation
PSEUDONYMOUS_TRAILS = "audit-pseudonymous/"  # outside audit/<callerId>/, which an erasure sweeps

# (step, conversation_id), called after "objects", "trail" and "audit": where tests stop a run.
Checkpoint = Callable[[str, str], None]
# Removes a conversation's shares (snapshot and all); returns how many items and objects went.
RevokeShares = Callable[[list[dict[str, Any]]], tuple[int, int]]


def pseudonymous_trail_key(conversation_id: str) -> str:
    return f"{PSEUDONYMOUS_TRAILS}{conversation_id}.jsonl"


def _no_checkpoint(step: str, conversation_id: str) -> None:
    return None


class ConversationEraser:
    def __init__(
        self,
        table: Table,
        objects: ObjectStore,
        attachment_objects: ObjectStore | None,
        trails: S3AuditTrails,
        *,
        forget: Callable[[str], None],
        revoke_shares: RevokeShares,
        audit_retention: timedelta,
        checkpoint: Checkpoint | None = None,
    ) -> None:
        self._table = table
        self._objects = objects
        self._attachment_objects = attachment_objects
        self._trails = trails
        self._keeper = TrailKeeper(table, objects, trails, audit_retention)
        self._forget = forget
        self._revoke_shares = revoke_shares
        self._checkpoint = checkpoint or _no_checkpoint

    def erase(self, conversation_id: str, caller_id: str, tally: Tally) -> None:
        found = partition(self._table, it.pk(conversation_id))
        meta = next((v for v in found if v["SK"] == it.META), None)
        head = next((v for v in found if v["SK"] == AUDIT_HEAD), None)
        if meta is not None and meta.get("callerId") != caller_id:
            return  # listed under this caller by a stale index entry: someone else's
        records = [v for v in found if v["SK"].startswith(AUDIT_PREFIX)]
        if meta is not None:
            tally.s3 += self._remove_objects(conversation_id, caller_id, meta)
            shares = [v for v in found if v["SK"].startswith(SHARE_POINTER)]
            items, objects = self._revoke_shares(shares)
            tally.dynamodb, tally.s3 = tally.dynamodb + items, tally.s3 + objects
        self._checkpoint("objects", conversation_id)
        holder = meta or head or {}
        old_key = holder.get("auditS3Key")
        new_key = self._pseudonymous_trail(conversation_id, holder, head, tally)
        self._checkpoint("trail", conversation_id)
        kept = {
            "lastAuditHash": holder.get("lastAuditHash"),
            "auditCount": holder.get("auditCount"),  # the trail must hold exactly this many
            "auditS3Key": new_key,
            "deletedAt": holder.get("deletedAt") or iso(utcnow()),
        }
        self._keeper.retain(
            conversation_id, {k: v for k, v in kept.items() if v}, [pseudonymous(v) for v in records]
        )
        tally.audit += sum(1 for v in records if "callerId" in v)
        self._checkpoint("audit", conversation_id)
        # Share pointers went with their shares in step 2.
        rest = [
            v for v in found if not v["SK"].startswith((AUDIT_PREFIX, AUDIT_HEAD, it.META, SHARE_POINTER))
        ]
        self._table.batch_delete(raw_keys(rest))
        if meta is not None:
            self._table.call("delete_item", Key=it.to_attributes({"PK": meta["PK"], "SK": it.META}))
            tally.conversations += 1
        tally.dynamodb += len(rest) + (meta is not None)
        if old_key and old_key != new_key:
            tally.s3 += self._objects.delete_versions(old_key, exact=True)

    def _remove_objects(self, conversation_id: str, caller_id: str, meta: dict[str, Any]) -> int:
        """Step 2: memory fragments, then every S3 object of the conversation but its audit trail."""
        self._forget(conversation_id)
        removed = 0
        for key in {transcript_key(caller_id, conversation_id), meta.get("s3Key")} - {None}:
            removed += self._objects.delete_versions(str(key), exact=True)
        removed += self._objects.delete_versions(content_prefix(conversation_id), exact=False)
        if self._attachment_objects is not None:
            prefix = conversation_prefix(caller_id, conversation_id)
            removed += self._attachment_objects.delete_versions(prefix, exact=False, keep=files_of(caller_id))
        return removed

    def _pseudonymous_trail(
        self, conversation_id: str, holder: dict[str, Any], head: dict[str, Any] | None, tally: Tally
    ) -> str | None:
        """Step 3: the key of the archived trail without plain caller ids (None: nothing archived)."""
        new_key = pseudonymous_trail_key(conversation_id)
        if head is not None and head.get("auditS3Key") == new_key:
            return new_key  # an earlier run got this far
        key = holder.get("auditS3Key")
        if not key:
            return None
        if key != new_key:
            records = self._trails.read(key)
            self._objects.put_verified(new_key, trail_jsonl(pseudonymous(r) for r in records))
            tally.audit += sum(1 for r in records if "callerId" in r)
        return new_key

"""Erasing a caller (docs/privacy.md): every conversation, then what the caller holds outside them.

  1. every fragment of the caller in conversation memory (Chroma, `callerId`); again after step 2, for
     what a turn running meanwhile indexed;
  2. each conversation listed under the caller in ByCaller (conversation_erasure.py), its counts added
     to the job as it finishes;
  3. the caller's day counters (USAGE#<callerId>), usage-ledger lines (USAGEDAY#<day>, one Query per
     day the ledger keeps, the lines whose callerId is the id) and exports (items and documents);
  4. whatever S3 still holds under a key naming the caller: transcripts/<callerId>/, audit/<callerId>/,
     attachments/<callerId>/, the keys whose caller part is the id exactly (domain/caller_keys.py);
  5. one audit record of the erasure (who asked, when, the counts) in a chain of its own, kept like a
     purged conversation's (readable at GET /api/v1/admin/audit?conversationId=<erasureId>);
  6. the job COMPLETED, without the plain caller id.

Caller ids may hold `/` and `#`: `transcripts/X/` lists caller `X/b`'s keys too, `CALLER#X#` begins
caller `X#b`'s ledger lines; an erasure of `X` leaves theirs alone.

Each step is idempotent; a run stopped anywhere is run again (a new request joins the job and starts
it again; AWS retries a failed asynchronous invocation) and does what is left.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.audit_archive import TrailKeeper
from rag_orchestrator.conversations.audit_trail import AUDIT_PREFIX, audit_item
from rag_orchestrator.conversations.ledger import KEEP as LEDGER_KEEP
from rag_orchestrator.conversations.ledger import PREFIX as LEDGER_PREFIX
from rag_orchestrator.conversations.s3_objects import ObjectStore
from rag_orchestrator.conversations.table import Table
from rag_orchestrator.conversations.transcripts import TRAILS, TRANSCRIPTS
from rag_orchestrator.domain.attachments import KEY_PREFIX as ATTACHMENTS
from rag_orchestrator.domain.attachments import files_of
from rag_orchestrator.domain.audit import GENESIS, seal
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.caller_keys import owned_by
from rag_orchestrator.domain.ids import sortable_id
from rag_orchestrator.lifecycle.conversation_erasure import ConversationEraser
from rag_orchestrator.lifecycle.export import EXPORTS_PREFIX
from rag_orchestrator.lifecycle.export import object_key as export_object
from rag_orchestrator.lifecycle.jobs import ErasureJobs
from rag_orchestrator.lifecycle.partitions import Tally, caller_conversations, indexed, partition, raw_keys

ForgetCaller = Callable[[str], int]  # FragmentIndex.erase_caller


class CallerEraser:
    def __init__(
        self,
        table: Table,
        jobs: ErasureJobs,
        conversations: ConversationEraser,
        *,
        objects: ObjectStore,
        attachment_objects: ObjectStore | None,
        forget_caller: ForgetCaller,
        actor_key: bytes,
        keeper: TrailKeeper,
    ) -> None:
        self._table = table
        self._jobs = jobs
        self._conversations = conversations
        self._objects = objects
        self._attachment_objects = attachment_objects
        self._forget_caller = forget_caller
        self._actor_key = actor_key
        self._keeper = keeper

    def run(self, erasure_id: str) -> dict[str, Any]:
        """Erase the caller of a job (a COMPLETED one is left as it is); the job as it ends."""
        job = self._jobs.job(erasure_id)
        caller_id = job.get("callerId")
        if not caller_id:
            return job
        self._jobs.add_counts(erasure_id, Tally(chroma=self._forget_caller(caller_id)).as_dict())
        for conversation_id in caller_conversations(self._table, caller_id):
            tally = Tally()
            self._conversations.erase(conversation_id, caller_id, tally)
            self._jobs.add_counts(erasure_id, tally.as_dict())
        tally = Tally(chroma=self._forget_caller(caller_id))  # what a turn running meanwhile added
        usage = partition(self._table, f"USAGE#{caller_id}") + self._ledger_lines(caller_id)
        exports = [{"PK": pk, "SK": it.META} for pk in indexed(self._table, EXPORTS_PREFIX + caller_id)]
        for export in exports:
            tally.s3 += self._objects.delete_versions(
                export_object(export["PK"].removeprefix("EXPORT#")), exact=True
            )
        self._table.batch_delete(raw_keys([*usage, *exports]))
        tally.dynamodb += len(usage) + len(exports)
        for root in (TRANSCRIPTS, TRAILS):  # <root><callerId>/<conversationId>.jsonl
            mine = owned_by(caller_id, root, 1)
            tally.s3 += self._objects.delete_versions(f"{root}{caller_id}/", exact=False, keep=mine)
        if self._attachment_objects is not None:
            prefix, mine = f"{ATTACHMENTS}{caller_id}/", files_of(caller_id)
            tally.s3 += self._attachment_objects.delete_versions(prefix, exact=False, keep=mine)
        self._jobs.add_counts(erasure_id, tally.as_dict())
        job = self._jobs.job(erasure_id)
        self._record(job)
        self._jobs.complete(erasure_id, job["actorRef"])
        return self._jobs.job(erasure_id)

    def _ledger_lines(self, caller_id: str) -> list[dict[str, Any]]:
        """The caller's lines in the usage ledger (USAGEDAY#<day>, SK CALLER#<id>#MODEL#<model>): a Query
        per day kept, of the lines whose callerId is the id exactly (`CALLER#X#MODEL#` begins those of a
        caller `X#MODEL#b` too)."""
        today, found = utcnow().date(), []
        for back in range(LEDGER_KEEP.days + 1):
            day = (today - timedelta(days=back)).isoformat()
            response = self._table.call(
                "query",
                KeyConditionExpression="PK = :pk AND begins_with(SK, :caller)",
                ExpressionAttributeValues=it.to_attributes(
                    {":pk": LEDGER_PREFIX + day, ":caller": f"CALLER#{caller_id}#MODEL#"}
                ),
            )
            lines = (it.from_attributes(v) for v in response.get("Items", ()))
            found += [v for v in lines if v.get("callerId") == caller_id]
        return found

    def _record(self, job: dict[str, Any]) -> None:
        """Step 5: the erasure's audit record, sealed onto a chain of its own keyed by the erasureId (a
        run again keeps the record an earlier run stored)."""
        erasure_id = job["erasureId"]
        entry = {
            "recordId": sortable_id(),
            "kind": "erasure",
            "erasureId": erasure_id,
            "time": job["requestedAt"],
            "actorRef": job["actorRef"],  # the erased caller's pseudonym: who the counts are of
            "requestedBy": job.get("requestedBy") or {},
            "counts": job.get("counts") or {},
            "completedAt": utcnow().isoformat().replace("+00:00", "Z"),
        }
        earlier = [v for v in partition(self._table, it.pk(erasure_id)) if v["SK"].startswith(AUDIT_PREFIX)]
        stored = earlier[0] if earlier else audit_item(erasure_id, seal(entry, GENESIS, self._actor_key))
        meta = {"lastAuditHash": stored["hash"], "auditCount": 1, "deletedAt": job["requestedAt"]}
        self._keeper.retain(erasure_id, meta, [stored])

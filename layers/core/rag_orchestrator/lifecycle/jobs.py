"""Erasure jobs on the conversations table: one running per caller, their status and counts.

    PK=ERASURE#<erasureId>  SK=META   status (RUNNING | COMPLETED), requestedAt, completedAt, counts,
                                      actorRef (the erased caller's), requestedBy (the requester's
                                      actorRef), callerId while it runs (removed when it completes)
    PK=ERASING#<actorRef>   SK=META   the erasure running for that caller, while it runs
    PK=ERASED#<actorRef>    SK=META   erasedAt: when the caller's last erasure completed, epoch ms (TTL an hour
                                      on): an answer started before it writes nothing of the caller

Starting writes both in one transaction, on condition that the caller has none running: a second
request while one runs joins it (its erasureId); one after it completed starts another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.table import ConditionFailed, Table
from rag_orchestrator.conversations.usage import ERASED_KEEP, erased_key, erasing_key
from rag_orchestrator.domain.base import new_id, utcnow
from rag_orchestrator.errors import NotFound, StorageUnavailable

RUNNING, COMPLETED = "RUNNING", "COMPLETED"


class ErasureNotFound(NotFound):
    error = "Erasure not found"


@dataclass(frozen=True, slots=True)
class Started:
    erasure_id: str
    joined: bool  # an erasure of this caller was running already
    requested_at: str


@dataclass(frozen=True, slots=True)
class ErasureRequest:
    caller_id: str
    actor_ref: str  # the erased caller's
    requested_by: dict[str, Any] = field(default_factory=dict)  # {actorRef, roles} of the requester


def _job_key(erasure_id: str) -> dict[str, Any]:
    return it.to_attributes({"PK": f"ERASURE#{erasure_id}", "SK": it.META})


class ErasureJobs:
    def __init__(self, table: Table) -> None:
        self._table = table

    def start(self, request: ErasureRequest) -> Started:
        for _ in range(3):  # the running one may complete between the refusal and the read
            erasure_id, now = new_id(), iso(utcnow())
            job = {
                "erasureId": erasure_id,
                "status": RUNNING,
                "requestedAt": now,
                "callerId": request.caller_id,
                "actorRef": request.actor_ref,
                "requestedBy": request.requested_by,
                "updatedAt": now,
                "counts": {},
                "entity": "erasure",
            }
            running = {"erasureId": erasure_id, "requestedAt": now, "entity": "erasing"}
            try:
                self._table.transact(
                    [
                        {
                            "Put": {
                                "Item": erasing_key(request.actor_ref) | it.to_attributes(running),
                                "ConditionExpression": "attribute_not_exists(PK)",
                            }
                        },
                        {"Put": {"Item": _job_key(erasure_id) | it.to_attributes(job)}},
                    ]
                )
                return Started(erasure_id, False, now)
            except ConditionFailed:
                found = self._table.call("get_item", Key=erasing_key(request.actor_ref), ConsistentRead=True)
                if found.get("Item"):
                    held = it.from_attributes(found["Item"])
                    return Started(held["erasureId"], True, held["requestedAt"])
        raise StorageUnavailable("Could not start the erasure", retryable=True)

    def job(self, erasure_id: str) -> dict[str, Any]:
        found = self._table.call("get_item", Key=_job_key(erasure_id), ConsistentRead=True).get("Item")
        if not found:
            raise ErasureNotFound(f"Erasure not found: {erasure_id}")
        return {k: v for k, v in it.from_attributes(found).items() if k not in ("PK", "SK", "entity")}

    def add_counts(self, erasure_id: str, counts: dict[str, int]) -> None:
        """Add a finished step's counts to the job's (a run stopped and resumed counts what it found)."""
        names = {f"#{name}": name for name in counts}
        sums = ", ".join(f"counts.#{n} = if_not_exists(counts.#{n}, :zero) + :{n}" for n in counts)
        self._table.call(
            "update_item",
            Key=_job_key(erasure_id),
            UpdateExpression=f"SET {sums}, updatedAt = :now",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=it.to_attributes(
                {":zero": 0, ":now": iso(utcnow())} | {f":{n}": v for n, v in counts.items()}
            ),
        )

    def complete(self, erasure_id: str, actor_ref: str) -> None:
        """COMPLETED, the plain caller id gone from the job, and the caller free for another erasure;
        when it completed kept an hour under the caller's pseudonym, for the answers that were running
        (conversations/usage.py count_answer)."""
        now = utcnow()
        self._table.call(
            "update_item",
            Key=_job_key(erasure_id),
            UpdateExpression="SET #status = :done, completedAt = :now REMOVE callerId",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues=it.to_attributes({":done": COMPLETED, ":now": iso(now)}),
        )
        erased = {
            "erasedAt": int(now.timestamp() * 1000),
            "expiresAt": it.epoch(now + ERASED_KEEP),
            "entity": "erased",
        }
        self._table.call("put_item", Item=erased_key(actor_ref) | it.to_attributes(erased))
        try:
            self._table.call(
                "delete_item",
                Key=erasing_key(actor_ref),
                ConditionExpression="erasureId = :id",
                ExpressionAttributeValues=it.to_attributes({":id": erasure_id}),
            )
        except ConditionFailed:
            return  # already freed by an earlier run of this erasure

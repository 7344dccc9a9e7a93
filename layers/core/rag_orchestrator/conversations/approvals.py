"""Held tool calls on the table (docs/approvals.md, docs/storage.md), a part of the DynamoDB store.

    PK=CONV#<id>  SK=APPROVAL#<approvalId>   the held call, its status and decision (kept for history)
    META.pendingApproval                     the held call while it waits: a new message is refused

The turn that holds a call writes both in the transaction that finishes it. A decision is one
conditional UpdateItem on META — the held call still there, not expired, no turn running — that takes
the turn lock, removes the held call and returns it (ALL_OLD): of two decisions exactly one wins. The
continuation's finishing transaction then records the decision on the APPROVAL item. An expired call is
answered as denied by the next message's start (its transaction writes the refusal before the message).
"""

from __future__ import annotations

import time
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.meta_update import LOCK_FREE
from rag_orchestrator.conversations.table import ConditionFailed, Table
from rag_orchestrator.conversations.turn_data import LOCK_HELD, Claim
from rag_orchestrator.domain.approvals import OUTCOMES, PENDING, Decision, HeldCall, Resolution
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.errors import ApprovalClosed, ApprovalNotFound, ApprovalPending, Conflict, RagError

APPROVAL_PREFIX = "APPROVAL#"
PENDING_FIELD = "pendingApproval"
OWNED = "callerId = :caller AND #status <> :deleted"
DECIDED = "The approval was already decided"
EXPIRED = "The approval expired; it counts as denied"


def approval_key(conversation_id: str, approval_id: str) -> dict[str, Any]:
    return it.to_attributes({"PK": it.pk(conversation_id), "SK": APPROVAL_PREFIX + approval_id})


def held_in(meta: dict[str, Any] | None) -> HeldCall | None:
    """The call a conversation's META holds, if any."""
    value = (meta or {}).get(PENDING_FIELD)
    return HeldCall.from_item(value) if value else None


def held_put(held: HeldCall) -> dict[str, Any]:
    """The APPROVAL item of a call the finishing turn holds (kept a week past its expiry)."""
    item = held.to_item() | {
        "PK": it.pk(held.conversation_id),
        "SK": APPROVAL_PREFIX + held.approval_id,
        "entity": "approval",
        "status": PENDING,
        "createdAt": iso(utcnow()),
        "expiresAt": held.decide_by + int(it.TTL_GRACE.total_seconds()),
    }
    return {"Put": {"Item": it.to_attributes(item)}}


def outcome_update(resolution: Resolution) -> dict[str, Any]:
    """The decision written on the APPROVAL item, in the transaction of the turn that acts on it."""
    held = resolution.held
    values: dict[str, Any] = {":outcome": resolution.outcome, ":at": iso(utcnow())}
    expression = "SET #status = :outcome, decidedAt = :at"
    if resolution.reason:
        expression += ", reason = :reason"
        values[":reason"] = resolution.reason
    return {
        "Update": {
            "Key": approval_key(held.conversation_id, held.approval_id),
            "UpdateExpression": expression,
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": it.to_attributes(values),
        }
    }


def refused_start(old_meta: dict[str, Any], now: int) -> tuple[RagError | None, HeldCall | None]:
    """Why a start found a held call on META: still waiting (409), or expired (answer it as denied)."""
    held = held_in(old_meta)
    if held is None:
        return None, None
    if held.decide_by > now:
        return ApprovalPending(held.approval_id), None
    return None, held


class ApprovalWrites:
    """The decision on a held call: the part of the DynamoDB store that takes it."""

    def __init__(self, table: Table) -> None:
        self._table = table

    def decide_approval(
        self, claim: Claim, approval_id: str, decision: Decision, reason: str | None
    ) -> Resolution:
        conversation_id, caller_id = claim.conversation_id, claim.caller_id
        now = int(time.time())
        try:
            response = self._table.call(
                "update_item",
                Key=it.to_attributes({"PK": it.pk(conversation_id), "SK": it.META}),
                UpdateExpression=f"SET turnLockUntil = :until, updatedAt = :now REMOVE {PENDING_FIELD}",
                ConditionExpression=(
                    f"{OWNED} AND {PENDING_FIELD}.approvalId = :aid AND {PENDING_FIELD}.decideBy > :epoch"
                    f" AND {LOCK_FREE}"
                ),
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=it.to_attributes(
                    {
                        ":caller": caller_id,
                        ":deleted": "DELETED",
                        ":aid": approval_id,
                        ":epoch": now,
                        ":until": now + claim.lease_seconds,
                        ":now": iso(utcnow()),
                    }
                ),
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailed as failed:
            raise self._refused_decision(
                failed.old(0), conversation_id, approval_id, caller_id, now
            ) from None
        held = held_in(it.from_attributes(response.get("Attributes") or {}))
        assert held is not None  # the condition required it
        return Resolution(held, OUTCOMES[decision], reason)

    def _refused_decision(
        self, meta: dict[str, Any], conversation_id: str, approval_id: str, caller_id: str, now: int
    ) -> RagError:
        """404 for what the caller cannot see; 409 for an approval of theirs that is no longer open."""
        if not meta or meta.get("callerId") != caller_id or meta.get("status") == "DELETED":
            return ApprovalNotFound(approval_id)
        held = held_in(meta)
        if held is not None and held.approval_id == approval_id:
            return ApprovalClosed(EXPIRED) if held.decide_by <= now else Conflict(LOCK_HELD)
        response = self._table.call(
            "get_item", Key=approval_key(conversation_id, approval_id), ConsistentRead=True
        )
        if not response.get("Item"):
            return ApprovalNotFound(approval_id)
        return ApprovalClosed(DECIDED)

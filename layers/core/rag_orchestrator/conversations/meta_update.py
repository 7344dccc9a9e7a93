"""The META item's side of the writes that add messages to a conversation (conversations/dynamo_writes.py),
and the key and ownership condition every write to META uses."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.keys import activity_key, iso
from rag_orchestrator.domain.audit import GENESIS
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.conversations import ConversationStatus

ACTIVE = ConversationStatus.ACTIVE.value
OWNED = "callerId = :caller AND #status <> :deleted"
LOCK_FREE = "(attribute_not_exists(turnLockUntil) OR turnLockUntil < :epoch)"  # no turn holds it


def meta_key(conversation_id: str) -> dict[str, Any]:
    return it.to_attributes({"PK": it.pk(conversation_id), "SK": it.META})


@dataclass(frozen=True, slots=True)
class MetaUpdate:
    """The META side of a write adding messages: counters by ADD, index sort keys moved.

    GSI3SK is set even where its partition key is absent (not ACTIVE): an item without an
    index's partition key is simply not in that index. `reactivate` (the ByArchive prefix): an
    ARCHIVED conversation that goes on is ACTIVE again, so archival finds it again (its s3Key
    stays: the transcript keeps the older messages). `chain` (head read, new head): the audit
    head moves only from the one the turn read, and `auditCount` counts the record it seals.
    """

    conversation_id: str
    counts: tuple[int, int, int]  # messages, tokens, tool calls
    condition: str
    values: dict[str, Any]
    lock: str = ""  # "SET …" takes the turn lock, "REMOVE …" releases it
    reactivate: str | None = None
    expires_at: int | None = None
    chain: tuple[str, str] | None = None
    sets: dict[str, Any] | None = None
    removes: tuple[str, ...] = ()

    def action(self) -> dict[str, Any]:
        """The Update action of a transaction."""
        conversation_id, condition, values = self.conversation_id, self.condition, self.values
        reactivate, expires_at, chain, lock = self.reactivate, self.expires_at, self.chain, self.lock
        now = utcnow()
        messages, tokens, tool_calls = self.counts
        assignments = ["updatedAt = :now", "GSI1SK = :activity"]
        if messages:
            assignments += ["lastMessageAt = :now", "GSI3SK = :now"]
        if reactivate:
            assignments += ["#status = :active", "GSI3PK = :shard"]
            values = values | {":active": ACTIVE, ":shard": it.archive_shard(conversation_id, reactivate)}
        if expires_at:
            assignments.append("expiresAt = :expires")
            values = values | {":expires": expires_at}
        if chain:
            read, moved = chain
            assignments.append("lastAuditHash = :head")
            values = values | {":head": moved}
            if read == GENESIS:
                condition += " AND attribute_not_exists(lastAuditHash)"
            else:
                condition += " AND lastAuditHash = :read"
                values = values | {":read": read}
        for name, value in (self.sets or {}).items():
            assignments.append(f"{name} = :{name}")
            values = values | {f":{name}": value}
        action, _, clause = lock.partition(" ")
        if action == "SET":
            assignments.append(clause)
        expression = (
            "SET " + ", ".join(assignments) + " ADD messageCount :m, totalTokens :t, toolCallsCount :c"
        )
        if chain:  # the records the trail must hold: the audit read compares (docs/audit.md)
            expression += ", auditCount :one"
            values = values | {":one": 1}
        removed = [clause] if action == "REMOVE" else []
        removed += self.removes
        if removed:
            expression += " REMOVE " + ", ".join(removed)
        update: dict[str, Any] = {
            "Key": meta_key(conversation_id),
            "UpdateExpression": expression,
            "ConditionExpression": condition,
            "ExpressionAttributeValues": it.to_attributes(
                values
                | {
                    ":now": iso(now),
                    ":activity": activity_key(now, conversation_id),
                    ":m": messages,
                    ":t": tokens,
                    ":c": tool_calls,
                }
            ),
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if "#status" in condition or reactivate:
            update["ExpressionAttributeNames"] = {"#status": "status"}
        return {"Update": update}

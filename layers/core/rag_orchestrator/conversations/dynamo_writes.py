"""The writes that add messages to a conversation: the two ends of a turn, a part of the DynamoDB store.

Each is one TransactWriteItems: the META update (condition, counters by atomic ADD, index sort
keys, the turn lock) together with the message items.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.contents import ContentOffloader
from rag_orchestrator.conversations.keys import activity_key, iso
from rag_orchestrator.conversations.store import LOCK_HELD, in_worker_thread, turn_messages
from rag_orchestrator.conversations.table import (
    TRANSACT_MAX_BYTES,
    TRANSACT_MAX_ITEMS,
    ConditionFailed,
    Table,
)
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.conversations import ConversationMessage, ConversationStatus
from rag_orchestrator.errors import (
    Conflict,
    ConversationNotFound,
    DuplicateClientMessage,
    RagError,
    StorageUnavailable,
)

ACTIVE, DELETED = ConversationStatus.ACTIVE.value, ConversationStatus.DELETED.value
OWNED = "callerId = :caller AND #status <> :deleted"


def meta_key(conversation_id: str) -> dict[str, Any]:
    return it.to_attributes({"PK": it.pk(conversation_id), "SK": it.META})


class TurnWrites:
    """start_turn, finish_turn and abort_turn of DynamoConversationStore, which sets the two attributes."""

    _table: Table
    _contents: ContentOffloader

    def _message_puts(self, messages: Sequence[ConversationMessage]) -> list[dict[str, Any]]:
        """Put actions for messages, keys assigned in list order, large texts moved to S3."""
        puts = []
        for message in messages:
            values = self._contents.offload(it.message_item(message, it.new_message_key()))
            puts.append({"Put": {"Item": it.to_attributes(values)}})
        return puts

    @in_worker_thread
    def start_turn(
        self,
        conversation_id: str,
        caller_id: str,
        user_message: ConversationMessage,
        client_message_id: str | None,
        lease_seconds: int,
    ) -> None:
        now = int(time.time())
        update = self._meta_update(
            conversation_id,
            counts=(1, user_message.token_count or 0, 0),
            condition=f"{OWNED} AND (attribute_not_exists(turnLockUntil) OR turnLockUntil < :epoch)",
            values={":caller": caller_id, ":deleted": DELETED, ":epoch": now, ":until": now + lease_seconds},
            lock="SET turnLockUntil = :until",
            reactivate=True,
        )
        actions = [update, *self._message_puts([user_message])]
        if client_message_id:
            marker = it.marker_item(conversation_id, client_message_id, user_message)
            actions.append(
                {
                    "Put": {
                        "Item": it.to_attributes(marker),
                        "ConditionExpression": "attribute_not_exists(PK)",
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                }
            )
        try:
            self._table.transact(actions)
        except ConditionFailed as failed:
            raise _refusal(failed, conversation_id, caller_id, client_message_id) from None

    @in_worker_thread
    def finish_turn(
        self,
        conversation_id: str,
        messages: Sequence[ConversationMessage],
        *,
        tool_calls: int,
        tokens: int,
        interrupted: bool = False,
    ) -> None:
        update = self._meta_update(
            conversation_id,
            counts=(len(messages), tokens, tool_calls),
            condition="attribute_exists(PK)",
            values={},
            lock="REMOVE turnLockUntil",
        )
        try:
            self._write(update, turn_messages(messages, interrupted))
        except ConditionFailed:
            raise ConversationNotFound(conversation_id) from None

    @in_worker_thread
    def abort_turn(self, conversation_id: str) -> None:
        try:
            self._table.call(
                "update_item",
                Key=meta_key(conversation_id),
                UpdateExpression="REMOVE turnLockUntil",
                ConditionExpression="attribute_exists(PK)",
            )
        except ConditionFailed:
            return  # no conversation, no lock to release

    def _meta_update(
        self,
        conversation_id: str,
        *,
        counts: tuple[int, int, int],
        condition: str,
        values: dict[str, Any],
        lock: str = "",
        reactivate: bool = False,
    ) -> dict[str, Any]:
        """The META side of a write adding messages: counters by ADD, index sort keys moved.

        GSI3SK is set even where its partition key is absent (not ACTIVE): an item without an
        index's partition key is simply not in that index. `reactivate`: an
        ARCHIVED conversation that goes on is ACTIVE again, so archival finds it again (its s3Key
        stays: the transcript keeps the older messages).
        """
        now = utcnow()
        messages, tokens, tool_calls = counts
        sets = ["updatedAt = :now", "GSI1SK = :activity"]
        if messages:
            sets += ["lastMessageAt = :now", "GSI3SK = :now"]
        if reactivate:
            sets += ["#status = :active", "GSI3PK = :shard"]
            values = values | {":active": ACTIVE, ":shard": it.archive_shard(conversation_id)}
        action, _, clause = lock.partition(" ")
        if action == "SET":
            sets.append(clause)
        expression = "SET " + ", ".join(sets) + " ADD messageCount :m, totalTokens :t, toolCallsCount :c"
        if action == "REMOVE":
            expression += f" {lock}"
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

    def _write(self, update: dict[str, Any], messages: list[ConversationMessage]) -> None:
        """The META update and the messages in one transaction. Past a transaction's limits (100
        actions, 4 MB) the oldest messages go ahead by BatchWriteItem."""
        puts = self._message_puts(messages)
        split, size = len(puts), 0
        while split > 0 and len(puts) - split < TRANSACT_MAX_ITEMS - 1:
            size += len(str(puts[split - 1]))
            if size > TRANSACT_MAX_BYTES:
                break
            split -= 1
        self._table.batch_put([p["Put"]["Item"] for p in puts[:split]])
        self._table.transact([update, *puts[split:]])


def _refusal(
    failed: ConditionFailed, conversation_id: str, caller_id: str, client_message_id: str | None
) -> RagError:
    """Why start_turn's transaction was cancelled; a missing or foreign conversation wins over the rest."""
    if failed.code(0) == "ConditionalCheckFailed":
        old = failed.old(0)
        if not old or old.get("callerId") != caller_id or old.get("status") == DELETED:
            return ConversationNotFound(conversation_id)
    if client_message_id and failed.code(2) == "ConditionalCheckFailed":
        marker = failed.old(2)
        return DuplicateClientMessage(client_message_id, marker.get("messageId"), marker.get("createdAt"))
    if failed.code(0) == "ConditionalCheckFailed" or failed.only_conflicts:
        return Conflict(LOCK_HELD)
    return StorageUnavailable()

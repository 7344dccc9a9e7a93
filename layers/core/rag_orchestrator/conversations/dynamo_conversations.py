"""Conversations on the table (META items, key design in items.py): create, read, soft-delete; each one
request (create with first messages one transaction). Listing them: dynamo_listing.py."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.message_items import MessageItems
from rag_orchestrator.conversations.meta_update import meta_key
from rag_orchestrator.conversations.table import ConditionFailed, Table
from rag_orchestrator.conversations.turn_data import with_first_messages
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.callers import is_guest
from rag_orchestrator.domain.conversations import Conversation, ConversationMessage, ConversationStatus
from rag_orchestrator.errors import Conflict, ConversationNotFound

DELETED = ConversationStatus.DELETED.value


def read_owned(table: Table, conversation_id: str, caller_id: str) -> Conversation:
    """The caller's conversation, read consistently; ConversationNotFound when missing, deleted or not theirs."""
    response = table.call("get_item", Key=meta_key(conversation_id), ConsistentRead=True)
    values = it.from_attributes(response.get("Item") or {})
    if not values or values.get("callerId") != caller_id or values.get("status") == DELETED:
        raise ConversationNotFound(conversation_id)
    return it.conversation_from_item(values)


def deletion(
    conversation_id: str,
    caller_id: str,
    retention: timedelta,
    *,
    condition: str = "",
    values: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The update_item arguments that mark the caller's conversation DELETED (not already so, and
    `condition` with its `values` when given): purged `retention` later, by the archival job."""
    now = utcnow()
    bound: dict[str, Any] = {
        ":deleted": DELETED,
        ":now": iso(now),
        ":caller": caller_id,
        ":gone": it.GONE_PREFIX + caller_id,
        ":gone_key": f"{iso(now)}#{conversation_id}",
    }
    expression = (
        "SET #status = :deleted, deletedAt = :now, updatedAt = :now, GSI1PK = :gone, GSI1SK = :gone_key"
    )
    if not is_guest(caller_id):
        expression += ", expiresAt = :ttl, GSI3PK = :purge, GSI3SK = :now"
        bound |= {
            ":ttl": it.epoch(now + retention + it.TTL_GRACE),
            ":purge": it.archive_shard(conversation_id, it.PURGE_PREFIX),
        }
    return {
        "Key": meta_key(conversation_id),
        "UpdateExpression": expression,
        "ConditionExpression": "callerId = :caller AND #status <> :deleted"
        + (f" AND {condition}" if condition else ""),
        "ExpressionAttributeNames": {"#status": "status"},
        "ExpressionAttributeValues": it.to_attributes(bound | (values or {})),
    }


class DynamoConversations:
    def __init__(self, table: Table, items: MessageItems, retention: timedelta) -> None:
        self._table = table
        self._items = items
        self._retention = retention

    def create(
        self, conversation: Conversation, messages: Sequence[ConversationMessage] = ()
    ) -> Conversation:
        conversation = with_first_messages(conversation, messages)
        expires = self._items.expiry(conversation.caller_id)
        put = {
            "Item": it.to_attributes(
                it.conversation_item(conversation) | ({"expiresAt": expires} if expires else {})
            ),
            "ConditionExpression": "attribute_not_exists(PK)",
        }
        try:
            if messages:
                self._table.transact([{"Put": put}, *self._items.puts(messages, expires)])
            else:
                self._table.call("put_item", **put)
        except ConditionFailed:
            raise Conflict("A conversation with this id already exists") from None
        return conversation

    def get(self, conversation_id: str, caller_id: str) -> Conversation:
        return read_owned(self._table, conversation_id, caller_id)

    def soft_delete(self, conversation_id: str, caller_id: str) -> None:
        """Into PURGE# for the retention period; a guest's stays in EXPIRE#, with its own TTL. Out of
        the caller's listing, into the caller's GONE# partition (where an erasure finds it)."""
        update = deletion(conversation_id, caller_id, self._retention)
        try:
            self._table.call("update_item", **update)
        except ConditionFailed:
            raise ConversationNotFound(conversation_id) from None

"""start_revision of the DynamoDB store: the turn lock for a regenerate or an edit of the last exchange
(versions.py); finish_turn (dynamo_writes.py) then supersedes that exchange in its own transaction."""

from __future__ import annotations

import time

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.approvals import PENDING_FIELD, held_in
from rag_orchestrator.conversations.dynamo_conversations import read_owned
from rag_orchestrator.conversations.dynamo_writes import TurnWrites
from rag_orchestrator.conversations.message_items import MessageItems
from rag_orchestrator.conversations.message_lookup import find_message, newest_current
from rag_orchestrator.conversations.meta_update import LOCK_FREE, OWNED, meta_key
from rag_orchestrator.conversations.table import ConditionFailed, Table
from rag_orchestrator.conversations.turn_data import LOCK_HELD, Claim
from rag_orchestrator.conversations.versions import Revision, StoredMessage, last_exchange, revision
from rag_orchestrator.domain.conversations import ConversationMessage, ConversationStatus
from rag_orchestrator.domain.messages import Role
from rag_orchestrator.errors import ApprovalPending, Conflict, MessageNotFound, NotLastExchange


class RevisionWrites:
    def __init__(self, table: Table, items: MessageItems, turns: TurnWrites) -> None:
        self._table = table
        self._items = items
        self._turns = turns

    def start_revision(self, claim: Claim, message_id: str, edit: ConversationMessage | None) -> Revision:
        """The lock first, then the read: no other turn can move the last exchange in between."""
        conversation_id, caller_id = claim.conversation_id, claim.caller_id
        now = int(time.time())
        try:
            self._table.call(
                "update_item",
                Key=meta_key(conversation_id),
                UpdateExpression="SET turnLockUntil = :until",
                ConditionExpression=f"{OWNED} AND {LOCK_FREE} AND attribute_not_exists({PENDING_FIELD})",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=it.to_attributes(
                    {
                        ":caller": caller_id,
                        ":deleted": ConversationStatus.DELETED.value,
                        ":epoch": now,
                        ":until": now + claim.lease_seconds,
                    }
                ),
            )
        except ConditionFailed as failed:
            read_owned(
                self._table, conversation_id, caller_id
            )  # ConversationNotFound unless the lock was why
            held = held_in(failed.old(0))
            if held is not None:  # the exchange ends in a held call: decide it first
                raise ApprovalPending(held.approval_id) from None
            raise Conflict(LOCK_HELD) from None
        try:
            found = revision(self._last_exchange(conversation_id), message_id, edit)
            if found is None:
                if find_message(self._table, conversation_id, message_id):
                    raise NotLastExchange(message_id)
                raise MessageNotFound(message_id)
        except BaseException:
            self._turns.abort_turn(conversation_id)
            raise
        return found

    def _last_exchange(self, conversation_id: str) -> list[StoredMessage]:
        newest: list[StoredMessage] = []
        for values in newest_current(self._table, conversation_id):
            newest.append(StoredMessage(self._items.restore(values), values["SK"]))
            if values.get("role") == Role.USER.value:
                break
        return last_exchange(newest) or []

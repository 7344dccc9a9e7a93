"""The writes that add messages to a conversation: the two ends of a turn, a part of the DynamoDB store.

Each is one TransactWriteItems: the META update (condition, counters by atomic ADD, index sort
keys, the turn lock) together with the message items; finish_turn adds the turn's audit record and
moves the chain's head on META (`lastAuditHash`), on condition that it is still the head the
turn's window read. A guest's conversation gets a TTL on every item it writes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.approvals import PENDING_FIELD, held_put, outcome_update, refused_start
from rag_orchestrator.conversations.audit_trail import audit_item, head_of
from rag_orchestrator.conversations.contents import ContentOffloader
from rag_orchestrator.conversations.meta_update import LOCK_FREE, OWNED, meta_key, meta_update
from rag_orchestrator.conversations.store import LOCK_HELD, TurnContext, in_worker_thread, turn_messages
from rag_orchestrator.conversations.table import (
    TRANSACT_MAX_BYTES,
    TRANSACT_MAX_ITEMS,
    ConditionFailed,
    Table,
)
from rag_orchestrator.conversations.usage import (
    GuestPool,
    holding_guests_day,
    pooled,
    refused_budget,
    reservation,
    settlement,
)
from rag_orchestrator.conversations.versions import Superseded
from rag_orchestrator.domain.approvals import HeldCall, Resolution
from rag_orchestrator.domain.audit import GENESIS, seal
from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.budgets import Spend
from rag_orchestrator.domain.callers import is_guest
from rag_orchestrator.domain.conversations import ConversationMessage, ConversationStatus
from rag_orchestrator.errors import (
    BudgetExhausted,
    Conflict,
    ConversationNotFound,
    DuplicateClientMessage,
    RagError,
    StorageUnavailable,
)

DELETED = ConversationStatus.DELETED.value
CHAIN_ATTEMPTS = 3  # the head moves under a turn only when its lock's lease ran out


class TurnWrites:
    """start_turn, finish_turn and abort_turn of DynamoConversationStore, which sets the two attributes."""

    _table: Table
    _contents: ContentOffloader
    _guest_ttl: timedelta

    def _expiry(self, caller_id: str | None) -> int | None:
        """The TTL of what is written now for this owner: only a guest's conversation expires."""
        if caller_id is None or not is_guest(caller_id):
            return None
        return it.epoch(utcnow() + self._guest_ttl + it.TTL_GRACE)

    def _message_puts(
        self, messages: Sequence[ConversationMessage], expires_at: int | None = None
    ) -> list[dict[str, Any]]:
        """Put actions for messages, keys assigned in list order, large texts moved to S3."""
        puts = []
        ttl = {"expiresAt": expires_at} if expires_at else {}
        for message in messages:
            values = self._contents.offload(it.message_item(message, it.new_message_key()) | ttl)
            puts.append({"Put": {"Item": it.to_attributes(values)}})
        return puts

    @in_worker_thread
    @holding_guests_day
    def start_turn(
        self,
        conversation_id: str,
        caller_id: str,
        user_message: ConversationMessage,
        client_message_id: str | None,
        lease_seconds: int,
        spend: Spend | None = None,
    ) -> Resolution | None:
        """A held call that expired is answered as denied first, in the same write (one more request)."""
        expired: Resolution | None = None
        while True:
            now = int(time.time())
            actions = self._start_actions(
                conversation_id, caller_id, user_message, client_message_id, lease_seconds, now, expired
            )
            checked = len(actions)
            if spend is not None and spend.limited:
                actions.append({"Update": reservation(spend)})
            try:
                self._table.transact(actions)
                return expired
            except ConditionFailed as failed:
                refusal = _refusal(failed, conversation_id, caller_id, client_message_id)
                if not isinstance(refusal, (ConversationNotFound, DuplicateClientMessage)):
                    refusal = refused_budget(failed, checked, spend) or refusal
                    if expired is None and failed.code(0) == "ConditionalCheckFailed":
                        pending, held = refused_start(failed.old(0), now)
                        if held is not None and not isinstance(refusal, BudgetExhausted):
                            expired = Resolution(held, "expired")
                            continue
                        refusal = pending or refusal
                raise refusal from None

    def _start_actions(
        self,
        conversation_id: str,
        caller_id: str,
        user_message: ConversationMessage,
        client_message_id: str | None,
        lease_seconds: int,
        now: int,
        expired: Resolution | None,
    ) -> list[dict[str, Any]]:
        """META (the lock), the marker at index 2 when asked, the messages; for an expired held call
        its refusal goes in before the user message, and its APPROVAL item is marked."""
        expires = self._expiry(caller_id)
        values = {":caller": caller_id, ":deleted": DELETED, ":epoch": now, ":until": now + lease_seconds}
        if expired is None:
            held_condition = f"attribute_not_exists({PENDING_FIELD})"
            refusals = []
        else:
            held_condition = f"{PENDING_FIELD}.approvalId = :aid"
            values[":aid"] = expired.held.approval_id
            refusals = [ConversationMessage.of(conversation_id, expired.tool_message())]
        update = meta_update(
            conversation_id,
            counts=(1 + len(refusals), user_message.token_count or 0, 0),
            condition=f"{OWNED} AND {LOCK_FREE} AND {held_condition}",
            values=values,
            lock="SET turnLockUntil = :until",
            reactivate=it.EXPIRE_PREFIX if expires else it.ARCHIVE_PREFIX,
            expires_at=expires,
            removes=(PENDING_FIELD,) if expired else (),
        )
        actions = [update, *self._message_puts([*refusals, user_message], expires)]
        if client_message_id:
            marker = it.marker_item(conversation_id, client_message_id, user_message)
            marker |= {"expiresAt": expires} if expires else {}
            actions.insert(
                2,
                {
                    "Put": {
                        "Item": it.to_attributes(marker),
                        "ConditionExpression": "attribute_not_exists(PK)",
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                },
            )
        if expired is not None:
            actions.append(outcome_update(expired))
        return actions

    @in_worker_thread
    def finish_turn(
        self,
        conversation_id: str,
        messages: Sequence[ConversationMessage],
        *,
        tool_calls: int,
        tokens: int,
        interrupted: bool = False,
        audit: dict[str, Any] | None = None,
        context: TurnContext | None = None,
        supersede: Sequence[Superseded] = (),
        held: HeldCall | None = None,
        decided: Resolution | None = None,
        spend: Spend | None = None,
    ) -> None:
        """Without a context (the turn failed before reading its window) the record is first sealed
        onto GENESIS: a refused condition returns META, whose head it is then sealed onto."""
        expires = self._expiry(context.owner if context else None)
        puts = self._message_puts(turn_messages(messages, interrupted), expires)
        # The held call, the decision acted on, the caller's day: actions of this same transaction.
        extra_actions = [held_put(held)] if held else []
        extra_actions += [outcome_update(decided)] if decided else []
        extra_actions += [settlement(spend, tokens)] if spend and (tokens or spend.reserve) else []
        head = (context.audit_head if context else None) or GENESIS
        for _ in range(CHAIN_ATTEMPTS):
            record = seal(audit, head) if audit is not None else None
            update = meta_update(
                conversation_id,
                counts=(len(messages) - len(supersede), tokens, tool_calls),
                condition="attribute_exists(PK)",
                values={},
                lock="REMOVE turnLockUntil",
                expires_at=expires,
                chain=(head, record["hash"]) if record else None,
                sets={PENDING_FIELD: held.to_item()} if held else None,
            )
            extra = (
                [{"Put": {"Item": it.to_attributes(audit_item(conversation_id, record))}}] if record else []
            ) + extra_actions
            try:
                self._write([update, *extra, *(_supersede(conversation_id, s) for s in supersede)], puts)
                if pooled(spend) and (tokens or spend.reserve):
                    GuestPool(self._table).settle(spend, tokens)
                return
            except ConditionFailed as failed:
                found = failed.old(0)
                if not found or record is None or head_of(found) == head:
                    raise ConversationNotFound(conversation_id) from None
                head = head_of(found)
        raise Conflict("The conversation's audit chain kept moving")

    @in_worker_thread
    def abort_turn(self, conversation_id: str) -> None:
        self._release_lock(conversation_id)

    def _release_lock(self, conversation_id: str) -> None:
        try:
            self._table.call(
                "update_item",
                Key=meta_key(conversation_id),
                UpdateExpression="REMOVE turnLockUntil",
                ConditionExpression="attribute_exists(PK)",
            )
        except ConditionFailed:
            return  # no conversation, no lock to release

    def _write(self, head: list[dict[str, Any]], puts: list[dict[str, Any]]) -> None:
        """`head` (the META update first) and the message puts in one transaction. Past a
        transaction's limits (100 actions, 4 MB) the oldest messages go ahead by BatchWriteItem
        (again, unchanged, if the transaction is retried)."""
        split, size = len(puts), sum(len(str(action)) for action in head)
        while split > 0 and len(puts) - split < TRANSACT_MAX_ITEMS - len(head):
            size += len(str(puts[split - 1]))
            if size > TRANSACT_MAX_BYTES:
                break
            split -= 1
        self._table.batch_put([p["Put"]["Item"] for p in puts[:split]])
        self._table.transact([*head, *puts[split:]])


def _supersede(conversation_id: str, superseded: Superseded) -> dict[str, Any]:
    """Mark a message an earlier version, in the transaction that stores what replaced it."""
    return {
        "Update": {
            "Key": it.to_attributes({"PK": it.pk(conversation_id), "SK": superseded.ref}),
            "UpdateExpression": "SET supersededBy = :by",
            "ConditionExpression": "attribute_exists(PK) AND attribute_not_exists(supersededBy)",
            "ExpressionAttributeValues": it.to_attributes({":by": superseded.superseded_by}),
        }
    }


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

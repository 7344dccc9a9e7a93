"""The writes that add messages to a conversation: the two ends of a turn (and its lock), a part of the
DynamoDB store.

Each is one TransactWriteItems: the META update (condition, counters by atomic ADD, index sort
keys, the turn lock) together with the message items; finish_turn adds the turn's audit record and
moves the chain's head on META (`lastAuditHash`), on condition that it is still the head the
turn's window read. A guest's conversation gets a TTL on every item it writes.
"""

from __future__ import annotations

import time
from typing import Any

from rag_orchestrator.conversations import items as it
from rag_orchestrator.conversations.approvals import PENDING_FIELD, held_put, outcome_update, refused_start
from rag_orchestrator.conversations.audit_trail import audit_item, head_of
from rag_orchestrator.conversations.ledger import ledger_update
from rag_orchestrator.conversations.message_items import MessageItems
from rag_orchestrator.conversations.meta_update import LOCK_FREE, OWNED, MetaUpdate, meta_key
from rag_orchestrator.conversations.table import (
    TRANSACT_MAX_BYTES,
    TRANSACT_MAX_ITEMS,
    ConditionFailed,
    Table,
)
from rag_orchestrator.conversations.turn_data import LOCK_HELD, Claim, TurnOutcome
from rag_orchestrator.conversations.usage import (
    GuestPool,
    holding_guests_day,
    pooled,
    refused_budget,
    reservation,
    settlement,
)
from rag_orchestrator.conversations.versions import Superseded
from rag_orchestrator.domain.approvals import Resolution
from rag_orchestrator.domain.audit import GENESIS, seal
from rag_orchestrator.domain.budgets import Spend
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
    def __init__(self, table: Table, items: MessageItems, actor_key: bytes) -> None:
        self._table = table
        self._items = items
        self._actor_key = actor_key

    @holding_guests_day
    def start_turn(
        self,
        claim: Claim,
        user_message: ConversationMessage,
        client_message_id: str | None = None,
        spend: Spend | None = None,
    ) -> Resolution | None:
        """A held call that expired is answered as denied first, in the same write (one more request)."""
        expired: Resolution | None = None
        while True:
            now = int(time.time())
            actions = self._start_actions(claim, user_message, client_message_id, now, expired)
            checked = len(actions)
            if spend is not None and spend.limited:
                actions.append({"Update": reservation(spend)})
            try:
                self._table.transact(actions)
                return expired
            except ConditionFailed as failed:
                refusal = _refusal(failed, claim, client_message_id)
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
        claim: Claim,
        user_message: ConversationMessage,
        client_message_id: str | None,
        now: int,
        expired: Resolution | None,
    ) -> list[dict[str, Any]]:
        """META (the lock), the marker at index 2 when asked, the messages; for an expired held call
        its refusal goes in before the user message, and its APPROVAL item is marked."""
        conversation_id, caller_id = claim.conversation_id, claim.caller_id
        expires = self._items.expiry(caller_id)
        until = now + claim.lease_seconds
        values = {":caller": caller_id, ":deleted": DELETED, ":epoch": now, ":until": until}
        if expired is None:
            held_condition = f"attribute_not_exists({PENDING_FIELD})"
            refusals = []
        else:
            held_condition = f"{PENDING_FIELD}.approvalId = :aid"
            values[":aid"] = expired.held.approval_id
            refusals = [ConversationMessage.of(conversation_id, expired.tool_message())]
        update = MetaUpdate(
            conversation_id,
            counts=(1 + len(refusals), user_message.token_count or 0, 0),
            condition=f"{OWNED} AND {LOCK_FREE} AND {held_condition}",
            values=values,
            lock="SET turnLockUntil = :until",
            reactivate=it.EXPIRE_PREFIX if expires else it.ARCHIVE_PREFIX,
            expires_at=expires,
            removes=(PENDING_FIELD,) if expired else (),
        ).action()
        actions = [update, *self._items.puts([*refusals, user_message], expires)]
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

    def finish_turn(self, conversation_id: str, outcome: TurnOutcome) -> None:
        """Without a context (the turn failed before reading its window) the record is first sealed
        onto GENESIS: a refused condition returns META, whose head it is then sealed onto."""
        context, held, audit, supersede = outcome.context, outcome.held, outcome.audit, outcome.supersede
        expires = self._items.expiry(context.owner if context else None)
        puts = self._items.puts(outcome.stored(), expires)
        # The held call, the decision acted on, the caller's day: actions of this same transaction.
        spend, tokens = outcome.spend, outcome.tokens
        extra_actions = [held_put(held)] if held else []
        extra_actions += [outcome_update(outcome.decided)] if outcome.decided else []
        extra_actions += [settlement(spend, tokens)] if spend and (tokens or spend.reserve) else []
        extra_actions += [ledger_update(outcome.usage)] if outcome.usage else []
        head = (context.audit_head if context else None) or GENESIS
        for _ in range(CHAIN_ATTEMPTS):
            record = seal(audit, head, self._actor_key) if audit is not None else None
            update = MetaUpdate(
                conversation_id,
                counts=(len(outcome.messages) - len(supersede), tokens, outcome.tool_calls),
                condition="attribute_exists(PK)",
                values={},
                lock="REMOVE turnLockUntil",
                expires_at=expires,
                chain=(head, record["hash"]) if record else None,
                sets={PENDING_FIELD: held.to_item()} if held else None,
            ).action()
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

    def abort_turn(self, conversation_id: str) -> None:
        """Release the turn lock only."""
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


def _refusal(failed: ConditionFailed, claim: Claim, client_message_id: str | None) -> RagError:
    """Why start_turn's transaction was cancelled; a missing or foreign conversation wins over the rest."""
    if failed.code(0) == "ConditionalCheckFailed":
        old = failed.old(0)
        if not old or old.get("callerId") != claim.caller_id or old.get("status") == DELETED:
            return ConversationNotFound(claim.conversation_id)
    if client_message_id and failed.code(2) == "ConditionalCheckFailed":
        marker = failed.old(2)
        return DuplicateClientMessage(client_message_id, marker.get("messageId"), marker.get("createdAt"))
    if failed.code(0) == "ConditionalCheckFailed" or failed.only_conflicts:
        return Conflict(LOCK_HELD)
    return StorageUnavailable()

"""A turn's writes in process memory: the turn lock taken by a start, a decision or a revision, the
turn's messages and audit record stored by its finish, held calls, and callers' days (the DynamoDB
store's dynamo_writes, approvals, dynamo_versions and usage)."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from rag_orchestrator.conversations.approvals import DECIDED, EXPIRED
from rag_orchestrator.conversations.in_process_records import Shelf, StoredConversation
from rag_orchestrator.conversations.keys import iso
from rag_orchestrator.conversations.turn_data import LOCK_HELD, Claim, TurnOutcome
from rag_orchestrator.conversations.versions import Revision, StoredMessage, last_exchange, revision
from rag_orchestrator.domain.approvals import OUTCOMES, PENDING, Decision, Resolution
from rag_orchestrator.domain.audit import sealed
from rag_orchestrator.domain.budgets import Spend, exhausted
from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.domain.usage import UsageLine, days
from rag_orchestrator.errors import (
    ApprovalClosed,
    ApprovalNotFound,
    ApprovalPending,
    Conflict,
    ConversationNotFound,
    DuplicateClientMessage,
    MessageNotFound,
    NotLastExchange,
)


class InProcessTurns:
    def __init__(self, shelf: Shelf) -> None:
        self._shelf = shelf

    def start_turn(
        self,
        claim: Claim,
        user_message: ConversationMessage,
        client_message_id: str | None,
        spend: Spend | None,
    ) -> Resolution | None:
        shelf = self._shelf
        now = shelf.clock()
        with shelf.lock:
            record = shelf.owned(claim.conversation_id, claim.caller_id)
            if client_message_id and client_message_id in record.markers:
                raise DuplicateClientMessage(client_message_id, *record.markers[client_message_id])
            if spend is not None and spend.limited:
                self._check_budget(spend)
            expired = None
            if record.held is not None:
                if record.held.decide_by > now:
                    raise ApprovalPending(record.held.approval_id)
                expired = Resolution(record.held, "expired")
            if record.lock_until > now:
                raise Conflict(LOCK_HELD)
            record.lock_until = now + claim.lease_seconds
            if client_message_id:
                record.markers[client_message_id] = (user_message.message_id, iso(user_message.created_at))
            if spend is not None and spend.limited:
                shelf.settle(spend, 0, spend.reserve)
            if expired is not None:
                _resolve(record, expired)
                refusal = ConversationMessage.of(claim.conversation_id, expired.tool_message())
                record.add([refusal], tokens=0, tool_calls=0)
            record.add([user_message], tokens=user_message.token_count or 0, tool_calls=0)
        return expired

    def finish_turn(self, conversation_id: str, outcome: TurnOutcome) -> None:
        """The chain's head is this store's own: the outcome's context is not needed to seal the record."""
        shelf = self._shelf
        with shelf.lock:
            record = shelf.records.get(conversation_id)
            if record is None:
                raise ConversationNotFound(conversation_id)
            record.lock_until = 0.0
            by = {s.message_id: s.superseded_by for s in outcome.supersede}
            if by:
                record.messages = [
                    m.model_copy(update={"superseded_by": by[m.message_id]}) if m.message_id in by else m
                    for m in record.messages
                ]
            tokens = outcome.tokens
            record.add(outcome.stored(), tokens=tokens, tool_calls=outcome.tool_calls, gone=len(by))
            if outcome.audit is not None:  # kept as its text: isolated from the caller's entry
                record.audits.append(sealed(outcome.audit, record.audit_head, shelf.actor_key))
            if outcome.decided is not None:
                _resolve(record, outcome.decided)
            if outcome.held is not None:
                record.held, record.approvals[outcome.held.approval_id] = outcome.held, PENDING
            _spent(shelf, outcome.spend, tokens, outcome.usage)

    def abort_turn(self, conversation_id: str) -> None:
        with self._shelf.lock:
            record = self._shelf.records.get(conversation_id)
            if record is not None:
                record.lock_until = 0.0

    def decide_approval(
        self, claim: Claim, approval_id: str, decision: Decision, reason: str | None
    ) -> Resolution:
        shelf = self._shelf
        now = shelf.clock()
        with shelf.lock:
            try:
                record = shelf.owned(claim.conversation_id, claim.caller_id)
            except ConversationNotFound:
                raise ApprovalNotFound(approval_id) from None
            held = record.held
            if held is None or held.approval_id != approval_id:
                if approval_id in record.approvals:
                    raise ApprovalClosed(DECIDED)
                raise ApprovalNotFound(approval_id)
            if held.decide_by <= now:
                raise ApprovalClosed(EXPIRED)
            if record.lock_until > now:
                raise Conflict(LOCK_HELD)
            record.lock_until, record.held = now + claim.lease_seconds, None
        return Resolution(held, OUTCOMES[decision], reason)

    def start_revision(self, claim: Claim, message_id: str, edit: ConversationMessage | None) -> Revision:
        shelf = self._shelf
        now = shelf.clock()
        with shelf.lock:
            record = shelf.owned(claim.conversation_id, claim.caller_id)
            if record.lock_until > now:
                raise Conflict(LOCK_HELD)
            if record.held is not None:  # the exchange ends in a held call: decide it first
                raise ApprovalPending(record.held.approval_id)
            current = [StoredMessage(m) for m in reversed(record.messages) if m.superseded_by is None]
            found = revision(last_exchange(current) or [], message_id, edit)
            if found is None:
                if any(m.message_id == message_id for m in record.messages):
                    raise NotLastExchange(message_id)
                raise MessageNotFound(message_id)
            record.lock_until = now + claim.lease_seconds
        return found

    def usage(self, caller_id: str, day: str) -> int:
        with self._shelf.lock:
            return self._shelf.days.get((caller_id, day), [0, 0])[0]

    def usage_lines(self, first: date, last: date) -> list[UsageLine]:
        wanted = set(days(first, last))
        with self._shelf.lock:
            return [replace(line) for key, line in self._shelf.ledger.items() if key[0] in wanted]

    def reserve(self, spend: Spend) -> None:
        with self._shelf.lock:
            self._check_budget(spend)
            self._shelf.settle(spend, 0, spend.reserve)

    def release(self, spend: Spend) -> None:
        with self._shelf.lock:
            self._shelf.settle(spend, 0, -spend.reserve)

    def count_answer(self, spend: Spend | None, line: UsageLine) -> None:
        with self._shelf.lock:
            _spent(self._shelf, spend, line.input_tokens + line.output_tokens, line)

    def _check_budget(self, spend: Spend) -> None:
        for meter in spend.meters():
            used, committed = self._shelf.days.get((meter.owner, spend.day), [0, 0])
            if committed >= (meter.limit or 0):
                raise exhausted(spend, used, meter)


def _resolve(record: StoredConversation, resolution: Resolution) -> None:
    record.held = None
    record.approvals[resolution.held.approval_id] = resolution.outcome


def _spent(shelf: Shelf, spend: Spend | None, tokens: int, line: UsageLine | None) -> None:
    """A turn's or an answer's tokens on its caller's day (its hold let go) and its report line (the
    lock held)."""
    if spend is not None:
        shelf.settle(spend, tokens, tokens - spend.reserve)
    if line is not None:
        _count(shelf, line)


def _count(shelf: Shelf, spent: UsageLine) -> None:
    """Add a turn's spending to its day, caller and model (the lock held)."""
    line = shelf.ledger.setdefault(
        (spent.day, spent.caller_id, spent.model), UsageLine(spent.day, spent.caller_id, spent.model)
    )
    line.turns += spent.turns
    line.tool_calls += spent.tool_calls
    line.input_tokens += spent.input_tokens
    line.output_tokens += spent.output_tokens

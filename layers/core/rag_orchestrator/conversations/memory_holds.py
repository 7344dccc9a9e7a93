"""The memory store's held tool calls and token budgets (the DynamoDB store's in approvals.py, usage.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from rag_orchestrator.conversations.approvals import DECIDED, EXPIRED
from rag_orchestrator.conversations.store import LOCK_HELD
from rag_orchestrator.domain.approvals import OUTCOMES, Decision, Resolution
from rag_orchestrator.domain.budgets import Spend, exhausted
from rag_orchestrator.errors import ApprovalClosed, ApprovalNotFound, Conflict, ConversationNotFound

if TYPE_CHECKING:  # the records this is a part of
    from rag_orchestrator.conversations.memory import _Record


class MemoryHolds:
    """decide_approval, usage, reserve and release of MemoryConversationStore, which sets the attributes."""

    _lock: threading.Lock
    _clock: Callable[[], float]
    _usage: dict[tuple[str, str], list[int]]  # (meter's owner, day) -> [used, committed]

    if TYPE_CHECKING:

        def _owned(self, conversation_id: str, caller_id: str) -> _Record: ...

    async def decide_approval(
        self,
        conversation_id: str,
        approval_id: str,
        caller_id: str,
        decision: Decision,
        reason: str | None,
        lease_seconds: int,
    ) -> Resolution:
        now = self._clock()
        with self._lock:
            try:
                record = self._owned(conversation_id, caller_id)
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
            record.lock_until, record.held = now + lease_seconds, None
        return Resolution(held, OUTCOMES[decision], reason)

    async def usage(self, caller_id: str, day: str) -> int:
        with self._lock:
            return self._usage.get((caller_id, day), [0, 0])[0]

    async def reserve(self, spend: Spend) -> None:
        with self._lock:
            self._check_budget(spend)
            self._settle(spend, 0, spend.reserve)

    async def release(self, spend: Spend) -> None:
        with self._lock:
            self._settle(spend, 0, -spend.reserve)

    def _settle(self, spend: Spend, used: int, committed: int) -> None:
        """Add to each of the spend's meters' days (the caller's; all guests' for a guest)."""
        for meter in spend.meters():
            day = self._usage.setdefault((meter.owner, spend.day), [0, 0])
            day[0] += used
            day[1] += committed

    def _check_budget(self, spend: Spend) -> None:
        for meter in spend.meters():
            used, committed = self._usage.get((meter.owner, spend.day), [0, 0])
            if committed >= (meter.limit or 0):
                raise exhausted(spend, used, meter)

    @staticmethod
    def _resolve(record: _Record, resolution: Resolution) -> None:
        record.held = None
        record.approvals[resolution.held.approval_id] = resolution.outcome

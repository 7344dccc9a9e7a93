"""What a generated answer spends (POST /api/v1/query/answer, its stream, MCP's `ask`), counted as a
turn's is (docs/usage.md).

An answer has an asker (api/auth.py `get_asker`: never the shared anonymous caller). Before anything
is searched, a limited asker's answer holds `BUDGET_TURN_RESERVE_TOKENS` of their day, on condition
that the day is under its limit (429 with Retry-After when it is not, as for a turn). Once the model
has answered, its tokens go on the asker's day (the hold let go) and on the usage report's line of the
day, asker and model, in one write; an answer counts no turn. An answer the model never wrote (no
passage found, a failure, a client gone before the end) counts nothing and lets its hold go.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Protocol

from rag_orchestrator.domain.base import utcnow
from rag_orchestrator.domain.budgets import Budgets, Spend
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.usage import UsageLine
from rag_orchestrator.observability import logger
from rag_orchestrator.retrieval.answers import Answerer, AnswerEvent, AnswerQuery, AnswerResponse, DoneEvent


class AnswerCounts(Protocol):
    """The store's side (both stores provide it)."""

    async def reserve(self, spend: Spend) -> None: ...  # BudgetExhausted at the limit

    async def release(self, spend: Spend) -> None: ...

    async def count_answer(self, spend: Spend | None, line: UsageLine, started: int) -> None:
        """ConditionFailed (counting nothing) when the caller's erasure ran since `started` (epoch ms)."""
        ...


class MeteredAnswers:
    """The answerer's answers, metered: built once by the composition root (api/deps.py)."""

    def __init__(
        self, answerer: Answerer, store: AnswerCounts, budgets: Budgets, reserve_tokens: int
    ) -> None:
        self._answerer = answerer
        self._store = store
        self._budgets = budgets
        self._reserve = reserve_tokens

    def events(self, asker: Caller, query: AnswerQuery) -> AsyncGenerator[AnswerEvent, None]:
        """The answer's events (retrieval/answers.py), metered for `asker`."""
        return self.metered(asker, self._answerer.events(query))

    async def metered(
        self, asker: Caller, events: AsyncGenerator[AnswerEvent, None]
    ) -> AsyncGenerator[AnswerEvent, None]:
        """`events`, once a limited asker's hold is taken (BudgetExhausted before the first event
        otherwise), with the answer's tokens counted just before its `done` event is passed on."""
        started = time.time_ns() // 1_000_000
        spend = Spend.counted(asker, self._budgets, self._reserve)
        held = spend if spend is not None and spend.limited else None
        if held is not None:
            await self._store.reserve(held)
        counted = False
        try:
            async with aclosing(events) as answer:
                async for event in answer:
                    if isinstance(event, DoneEvent):
                        counted = await self._count(asker, spend, event.answer, started)
                    yield event
        finally:
            if held is not None and not counted:
                # Let go even when the request is being cancelled (its client gone).
                await asyncio.shield(self._release(held))

    async def _count(self, asker: Caller, spend: Spend | None, answer: AnswerResponse, started: int) -> bool:
        """Count a written answer; False when there is nothing to count (no model call) or the write
        failed (logged: the answer is the asker's all the same)."""
        if not (answer.prompt_tokens or answer.completion_tokens):
            return False
        line = UsageLine(
            day=spend.day if spend is not None else utcnow().date().isoformat(),
            caller_id=asker.caller_id,
            model=self._answerer.strategy.metadata.model,
            input_tokens=answer.prompt_tokens,
            output_tokens=answer.completion_tokens,
        )
        try:
            await self._store.count_answer(spend, line, started)
        except Exception as exc:
            logger.warning("answer usage not counted", extra={"error_type": type(exc).__name__})
            return False
        return True

    async def _release(self, spend: Spend) -> None:
        try:
            await self._store.release(spend)
        except Exception as exc:
            logger.warning("answer's hold not let go", extra={"error_type": type(exc).__name__})

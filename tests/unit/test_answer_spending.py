"""MeteredAnswers' bookkeeping when an answer does not end with `done` (integration tests cover the
routes): a client gone mid-answer, a cancelled request, a count that could not be written. Whatever
happens, a limited asker's hold is let go once, and a written answer is counted once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing
from types import SimpleNamespace

import anyio
import pytest

from rag_orchestrator.api.answer_spending import MeteredAnswers
from rag_orchestrator.domain.budgets import Budgets, Spend
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.usage import UsageLine
from rag_orchestrator.retrieval.answers import (
    AnswerEvent,
    AnswerResponse,
    DeltaEvent,
    DoneEvent,
    SourcesEvent,
)

ASKER = Caller("ann")


class Store:
    def __init__(self, fail_count: bool = False) -> None:
        self.calls: list[tuple[str, object]] = []
        self.fail_count = fail_count

    async def reserve(self, spend: Spend) -> None:
        self.calls.append(("reserve", spend.reserve))

    async def release(self, spend: Spend) -> None:
        await asyncio.sleep(0)  # a request: a point where a cancellation is delivered
        self.calls.append(("release", spend.reserve))

    async def count_answer(self, spend: Spend | None, line: UsageLine, started: int) -> None:
        if self.fail_count:
            raise ConnectionError("the table is away")
        self.calls.append(("count", (line.caller_id, line.model, line.input_tokens, line.output_tokens)))


def answered(prompt: int, completion: int) -> AnswerResponse:
    return AnswerResponse(
        answer="Yes.",
        sources=[],
        context_used=[],
        latency_ms=1,
        prompt_tokens=prompt,
        completion_tokens=completion,
    )


class Answerer:
    """Yields sources, a delta, then done; `gate` (when given) holds it before the delta."""

    strategy = SimpleNamespace(metadata=SimpleNamespace(model="m-1"))

    def __init__(self, done: AnswerResponse, gate: asyncio.Event | None = None) -> None:
        self.done, self.gate = done, gate

    async def events(self, query: object) -> AsyncGenerator[AnswerEvent, None]:
        yield SourcesEvent([])
        if self.gate is not None:
            await self.gate.wait()
        yield DeltaEvent("Yes.")
        yield DoneEvent(self.done)


def metered(store: Store, answerer: Answerer, limit: str | None = "100") -> MeteredAnswers:
    return MeteredAnswers(answerer, store, Budgets.parse(limit), reserve_tokens=40)


async def test_a_written_answer_is_counted_once_and_its_hold_not_let_go_again():
    store = Store()
    async with aclosing(metered(store, Answerer(answered(11, 7))).events(ASKER, None)) as events:
        kinds = [event.type async for event in events]
    assert kinds == ["sources", "delta", "done"]
    assert store.calls == [("reserve", 40), ("count", ("ann", "m-1", 11, 7))]


async def test_a_client_gone_mid_answer_lets_the_hold_go():
    store = Store()
    events = metered(store, Answerer(answered(11, 7))).events(ASKER, None)
    assert (await anext(events)).type == "sources"
    await events.aclose()
    assert store.calls == [("reserve", 40), ("release", 40)]


async def test_a_cancelled_request_still_lets_the_hold_go():
    store, gate = Store(), asyncio.Event()

    async def consume() -> None:
        async with aclosing(metered(store, Answerer(answered(11, 7), gate)).events(ASKER, None)) as events:
            async for _ in events:
                pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.01)  # held, waiting on the model
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)  # the shielded release's own task
    assert store.calls == [("reserve", 40), ("release", 40)]


async def test_a_request_cancelled_by_its_server_still_lets_the_hold_go():
    """Starlette cancels a request whose client left with an anyio cancel scope, which cancels every
    await after it, those of the clean-up included."""
    store, gate = Store(), asyncio.Event()

    async def consume() -> None:
        async with aclosing(metered(store, Answerer(answered(11, 7), gate)).events(ASKER, None)) as events:
            async for _ in events:
                pass

    async with anyio.create_task_group() as group:
        group.start_soon(consume)
        await asyncio.sleep(0.01)
        group.cancel_scope.cancel()
    await asyncio.sleep(0.01)
    assert store.calls == [("reserve", 40), ("release", 40)]


async def test_a_count_that_cannot_be_written_is_logged_and_the_hold_let_go(caplog):
    store = Store(fail_count=True)
    async with aclosing(metered(store, Answerer(answered(11, 7))).events(ASKER, None)) as events:
        assert [event.type async for event in events][-1] == "done"  # the asker has their answer
    assert store.calls == [("reserve", 40), ("release", 40)]
    assert "answer usage not counted" in caplog.text


async def test_an_answer_without_a_model_call_counts_nothing():
    store = Store()
    async with aclosing(metered(store, Answerer(answered(0, 0))).events(ASKER, None)) as events:
        [_ async for _ in events]
    assert store.calls == [("reserve", 40), ("release", 40)]


async def test_an_unlimited_asker_holds_nothing_and_is_counted():
    store = Store()
    async with aclosing(metered(store, Answerer(answered(3, 2)), None).events(ASKER, None)) as events:
        [_ async for _ in events]
    assert store.calls == [("count", ("ann", "m-1", 3, 2))]

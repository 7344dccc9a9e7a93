"""Stopping a turn's steps — cancel, deadline — and the hand-over with keep-alive ticks (no network)."""

from __future__ import annotations

import asyncio
import time
import warnings

import pytest

from rag_orchestrator.loop.control import RunningTurns, TurnControl, TurnStopped
from rag_orchestrator.loop.relay import Relay


async def test_a_step_within_the_deadline_returns_its_result():
    control = TurnControl(time.time() + 30)
    assert await control.wait(asyncio.sleep(0, result="done")) == "done"
    assert control.reason is None


async def test_a_cancel_ends_the_awaited_step_at_once_and_every_later_one():
    control = TurnControl(time.time() + 30)
    step = asyncio.Event()
    waiting = asyncio.create_task(control.wait(step.wait()))
    await asyncio.sleep(0)
    control.cancel()
    with pytest.raises(TurnStopped) as stopped:
        await waiting
    assert stopped.value.reason == "cancelled"
    with pytest.raises(TurnStopped):
        await control.wait(asyncio.sleep(0))
    assert not asyncio.current_task().cancelling()  # the timeout's cancellation was taken back


async def test_the_deadline_cuts_a_slow_step_and_a_passed_one_starts_nothing():
    control = TurnControl(time.time() + 0.05)
    with pytest.raises(TurnStopped) as stopped:
        await control.wait(asyncio.sleep(10))
    assert stopped.value.reason == "deadline"

    late = TurnControl(time.time() - 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a step never started is closed: no "never awaited" warning
        with pytest.raises(TurnStopped):
            await late.wait(asyncio.sleep(0))
    assert late.reason == "deadline"


async def test_a_cancel_after_the_deadline_keeps_the_first_reason():
    control = TurnControl(time.time() - 1)
    with pytest.raises(TurnStopped):
        control.check()
    control.cancel()
    assert control.reason == "deadline"


async def test_running_turns_cancel_only_the_callers_own_turn_in_its_conversation():
    running, control = RunningTurns(), TurnControl(time.time() + 30)
    running.add("T1", "conv-1", "alice", control)
    assert not running.cancel("conv-1", "T1", "bob")
    assert not running.cancel("conv-2", "T1", "alice")
    assert not running.cancel("conv-1", "T2", "alice")
    assert running.cancel("conv-1", "T1", "alice")
    await asyncio.sleep(0)  # delivered on the turn's own loop
    assert control.reason == "cancelled"
    running.remove("T1")
    assert not running.cancel("conv-1", "T1", "alice")


async def test_a_relay_hands_over_in_order_with_a_tick_after_each_quiet_spell():
    relay: Relay[int] = Relay(idle_seconds=0.05)
    got: list[int | None] = []

    async def produce() -> None:
        relay.put(1)
        relay.put(2)
        await asyncio.sleep(0.13)  # quiet: two ticks
        relay.put(3)
        relay.end()

    producer = asyncio.create_task(produce())
    async for item in relay.items():
        got.append(item)
    await producer
    assert [g for g in got if g is not None] == [1, 2, 3]
    assert got[:2] == [1, 2] and got[-1] == 3 and got.count(None) >= 1
    assert not relay.detached


async def test_a_reader_that_leaves_early_detaches_and_later_items_are_dropped():
    relay: Relay[int] = Relay(idle_seconds=10)
    relay.put(1)
    relay.put(2)
    items = relay.items()
    assert await anext(items) == 1
    await items.aclose()
    assert relay.detached
    relay.put(3)  # nobody reads: not kept
    assert list(relay._items) == [2]  # only what was there already

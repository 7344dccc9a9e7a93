"""The answer stream's deadline: a TimeoutError where asyncio.timeout would raise one, never a
cancellation of the consumer between reads, and other cancellations left alone."""

from __future__ import annotations

import asyncio

import pytest

from rag_orchestrator.providers.deadline import IdleTimeout, StreamDeadline


def soon(seconds: float) -> float:
    return asyncio.get_running_loop().time() + seconds


async def test_a_wait_still_running_at_the_deadline_raises_timeout_error():
    deadline = StreamDeadline(soon(0.05))
    with pytest.raises(TimeoutError), deadline:
        await asyncio.sleep(5)
    assert asyncio.current_task().cancelling() == 0  # the cancellation it used is undone


async def test_waits_that_finish_in_time_return_their_result():
    deadline = StreamDeadline(soon(5))
    with deadline:
        assert await asyncio.sleep(0, "first") == "first"
    with deadline:
        assert await asyncio.sleep(0, "second") == "second"
    deadline.cancel()


async def test_the_deadline_passing_between_waits_does_not_touch_the_consumer():
    deadline = StreamDeadline(soon(0.02))
    with deadline:
        await asyncio.sleep(0)
    await asyncio.sleep(0.05)  # the consumer's own work, past the deadline: not cancelled
    assert deadline.expired
    with pytest.raises(TimeoutError), deadline:
        pytest.fail("the body of a wait begun after the deadline does not run")


async def test_a_cancellation_from_elsewhere_propagates():
    started = asyncio.Event()

    async def reader() -> None:
        deadline = StreamDeadline(soon(5))
        started.set()
        with deadline:
            await asyncio.sleep(5)

    task = asyncio.create_task(reader())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_an_outer_cancellation_at_the_same_moment_is_not_swallowed():
    async def reader(deadline: StreamDeadline) -> None:
        with deadline:
            await asyncio.sleep(5)

    when = soon(0.02)
    deadline = StreamDeadline(when)
    task = asyncio.create_task(reader(deadline))
    asyncio.get_running_loop().call_at(when, task.cancel)  # both fire before the task runs again
    with pytest.raises(asyncio.CancelledError):
        await task
    assert deadline.expired


async def test_a_cancelled_deadline_never_fires():
    deadline = StreamDeadline(soon(0.01))
    deadline.cancel()
    await asyncio.sleep(0.03)
    assert not deadline.expired
    with deadline:
        assert await asyncio.sleep(0, "ok") == "ok"


# --- the idle limit: one wait, not the sum of them --------------------------------------------


async def test_one_wait_longer_than_the_idle_limit_raises_idle_timeout():
    deadline = StreamDeadline(soon(5), idle=0.05)
    with pytest.raises(IdleTimeout), deadline:
        await asyncio.sleep(5)
    assert not deadline.expired  # the stream's own deadline has not passed
    assert asyncio.current_task().cancelling() == 0
    deadline.cancel()


async def test_short_waits_adding_up_past_the_idle_limit_do_not_time_out():
    deadline = StreamDeadline(soon(5), idle=0.05)
    for _ in range(8):  # 8 × 0.02 s waits, with the consumer's own work between them
        with deadline:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.02)
    deadline.cancel()


async def test_the_stream_deadline_still_wins_over_a_longer_idle_limit():
    deadline = StreamDeadline(soon(0.05), idle=1.0)
    with pytest.raises(TimeoutError) as raised, deadline:
        await asyncio.sleep(5)
    assert not isinstance(raised.value, IdleTimeout) and deadline.expired

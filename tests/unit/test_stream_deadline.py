"""The answer stream's deadline: a TimeoutError where asyncio.timeout would raise one, never a
cancellation of the consumer between reads, and other cancellations left alone."""

from __future__ import annotations

import asyncio

import pytest

from rag_orchestrator.providers.deadline import StreamDeadline


def soon(seconds: float) -> float:
    return asyncio.get_running_loop().time() + seconds


async def test_a_wait_still_running_at_the_deadline_raises_timeout_error():
    deadline = StreamDeadline(soon(0.05))
    with pytest.raises(TimeoutError):
        await deadline.wait(asyncio.sleep(5))
    assert asyncio.current_task().cancelling() == 0  # the cancellation it used is undone


async def test_waits_that_finish_in_time_return_their_result():
    deadline = StreamDeadline(soon(5))
    assert await deadline.wait(asyncio.sleep(0, "first")) == "first"
    assert await deadline.wait(asyncio.sleep(0, "second")) == "second"
    deadline.cancel()


async def test_the_deadline_passing_between_waits_does_not_touch_the_consumer():
    deadline = StreamDeadline(soon(0.02))
    await deadline.wait(asyncio.sleep(0))
    await asyncio.sleep(0.05)  # the consumer's own work, past the deadline: not cancelled
    assert deadline.expired
    with pytest.raises(TimeoutError):
        await deadline.wait(asyncio.sleep(5))


async def test_the_awaitable_refused_after_the_deadline_is_closed():
    deadline = StreamDeadline(soon(0))
    await asyncio.sleep(0.01)
    coroutine = asyncio.sleep(5)
    with pytest.raises(TimeoutError):
        await deadline.wait(coroutine)
    assert coroutine.cr_frame is None  # closed, so never "never awaited"


async def test_a_cancellation_from_elsewhere_propagates():
    started = asyncio.Event()

    async def reader() -> None:
        deadline = StreamDeadline(soon(5))
        started.set()
        await deadline.wait(asyncio.sleep(5))

    task = asyncio.create_task(reader())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_an_outer_cancellation_at_the_same_moment_is_not_swallowed():
    async def reader(deadline: StreamDeadline) -> None:
        await deadline.wait(asyncio.sleep(5))

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
    assert await deadline.wait(asyncio.sleep(0, "ok")) == "ok"

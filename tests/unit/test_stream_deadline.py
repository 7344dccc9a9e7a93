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

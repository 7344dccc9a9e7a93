"""One deadline for a whole answer stream, enforced only while the stream waits on the network.

`asyncio.timeout_at` around each read schedules and cancels a timer per streamed token (~4 µs
each here); this schedules one timer per stream. It cancels the waiting task exactly as
`asyncio.timeout` does (and undoes that cancellation the same way), so a cancellation from
elsewhere still propagates; between waits, while the consumer handles an event, it never fires
into the consumer's code: the next wait raises instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


class StreamDeadline:
    def __init__(self, when: float) -> None:
        self.when = when  # on the running loop's clock
        self._handle = asyncio.get_running_loop().call_at(when, self._expire)
        self.expired = False
        self._waiting: asyncio.Task[object] | None = None  # the task inside wait(), if any
        self._cancelled: asyncio.Task[object] | None = None  # the task this deadline cancelled

    def _expire(self) -> None:
        self.expired = True
        if self._waiting is not None:
            self._cancelled = self._waiting
            self._waiting.cancel()

    async def wait(self, awaitable: Awaitable[T]) -> T:
        """Awaits `awaitable`; raises TimeoutError once the deadline has passed."""
        if self.expired:
            _discard(awaitable)
            raise TimeoutError
        task = asyncio.current_task()
        assert task is not None
        cancelling = task.cancelling()
        self._waiting = task
        try:
            return await awaitable
        except asyncio.CancelledError:
            if self._cancelled is task:
                self._cancelled = None
                if task.uncancel() <= cancelling:
                    raise TimeoutError from None
            raise
        finally:
            self._waiting = None

    def cancel(self) -> None:
        """The stream is over: drop the timer."""
        self._handle.cancel()


def _discard(awaitable: Awaitable[object]) -> None:
    close = getattr(awaitable, "close", None)  # a coroutine never awaited would warn
    if close is not None:
        close()

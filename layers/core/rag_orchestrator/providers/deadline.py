"""One deadline for a whole answer stream, enforced only while the stream waits on the network.

`asyncio.timeout_at` around each read schedules and cancels a timer per streamed token (~3 µs
each here); this schedules one timer per stream and is entered around each wait with `with`.
While entered, the deadline cancels the waiting task and turns that cancellation into a
TimeoutError exactly as `asyncio.timeout` does (a cancellation from elsewhere still propagates);
between waits, while the consumer handles an event, it never fires into the consumer's code: the
next `with` raises instead.
"""

from __future__ import annotations

import asyncio
from types import TracebackType


class StreamDeadline:
    """`with deadline: await …` raises TimeoutError once the loop's clock reaches `when`; one wait
    at a time."""

    def __init__(self, when: float) -> None:
        self.when = when  # on the running loop's clock
        self.expired = False
        self._handle = asyncio.get_running_loop().call_at(when, self._expire)
        self._waiting: asyncio.Task[object] | None = None  # the task inside `with`, if any
        self._cancelling = 0  # its cancellation requests when it entered
        self._cancelled: asyncio.Task[object] | None = None  # the task this deadline cancelled

    def _expire(self) -> None:
        self.expired = True
        if self._waiting is not None:
            self._cancelled = self._waiting
            self._waiting.cancel()

    def __enter__(self) -> None:
        if self.expired:
            raise TimeoutError
        task = asyncio.current_task()
        assert task is not None
        self._waiting, self._cancelling = task, task.cancelling()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        task, self._waiting = self._waiting, None
        if kind is asyncio.CancelledError and task is not None and self._cancelled is task:
            self._cancelled = None
            if task.uncancel() <= self._cancelling:
                raise TimeoutError from error

    def cancel(self) -> None:
        """The stream is over: drop the timer."""
        self._handle.cancel()

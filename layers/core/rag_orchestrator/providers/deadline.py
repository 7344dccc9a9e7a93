"""One deadline for a whole answer stream, and a limit on each wait, enforced only while it waits.

`asyncio.timeout_at` around each read schedules and cancels a timer per streamed token (~3 µs
each here); this schedules one timer per stream (re-armed once per `idle` seconds at most) and is
entered around each wait with `with`. While entered, the deadline cancels the waiting task and
turns that cancellation into a TimeoutError exactly as `asyncio.timeout` does — `IdleTimeout` when
the one wait outlasted `idle` (no data for that long) — while a cancellation from elsewhere still
propagates. Between waits, while the consumer handles an event, it never fires into the consumer's
code: the next `with` raises instead.
"""

from __future__ import annotations

import asyncio
from types import TracebackType

_EARLY = 0.001  # the loop runs a timer up to its clock's resolution early


class IdleTimeout(TimeoutError):
    """One wait outlasted the idle limit: no data for that long."""


class StreamDeadline:
    """`with deadline: await …` raises TimeoutError once the loop's clock reaches `when`, and
    IdleTimeout once one wait has lasted `idle` seconds; one wait at a time."""

    def __init__(self, when: float, idle: float | None = None) -> None:
        self.when = when  # on the running loop's clock
        self.idle = idle
        self.expired = False
        self._loop = asyncio.get_running_loop()
        self._since = 0.0  # when the current wait began
        self._idled = False
        self._waiting: asyncio.Task[object] | None = None  # the task inside `with`, if any
        self._cancelling = 0  # its cancellation requests when it entered
        self._cancelled: asyncio.Task[object] | None = None  # the task this deadline cancelled
        self._handle = self._loop.call_at(self._next_check(self._loop.time()), self._check)

    def _next_check(self, start: float) -> float:
        return self.when if self.idle is None else min(self.when, start + self.idle)

    def _check(self) -> None:
        now = self._loop.time()
        if now >= self.when - _EARLY:
            self.expired = True
            self._cut()
            return
        if self._waiting is not None and self.idle is not None and now - self._since >= self.idle - _EARLY:
            self._idled = True
            self._cut()
        self._handle = self._loop.call_at(
            self._next_check(self._since if self._waiting is not None and not self._idled else now),
            self._check,
        )

    def _cut(self) -> None:
        if self._waiting is not None:
            self._cancelled = self._waiting
            self._waiting.cancel()

    def __enter__(self) -> None:
        if self.expired:
            raise TimeoutError
        task = asyncio.current_task()
        assert task is not None
        self._waiting, self._cancelling = task, task.cancelling()
        self._since = self._loop.time()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        task, self._waiting = self._waiting, None
        if kind is asyncio.CancelledError and task is not None and self._cancelled is task:
            self._cancelled = None
            if task.uncancel() <= self._cancelling:
                if self._idled and not self.expired:
                    self._idled = False
                    raise IdleTimeout from error
                raise TimeoutError from error

    def cancel(self) -> None:
        """The stream is over: drop the timer."""
        self._handle.cancel()

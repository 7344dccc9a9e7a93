"""A hand-over from one task to one reader that also says when the line has been quiet.

The reader gets the items in order and, whenever nothing has passed for `idle_seconds`, a None: the
moment for an SSE keep-alive comment. A timer task makes the Nones. An item costs a deque append and
at most one wake-up of the reader, which then takes everything that has come.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator

_END = object()


class Relay[T]:
    def __init__(self, idle_seconds: float) -> None:
        self.idle_seconds = idle_seconds
        self.detached = False  # the reader went away before the end
        self._items: deque[object] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._last = 0.0

    def put(self, item: T) -> bool:
        """Hand `item` over; True when this woke the reader (the putter may then let it run first)."""
        return not self.detached and self._push(item)

    def end(self) -> None:
        self._push(_END)

    def _push(self, item: object) -> bool:
        self._items.append(item)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
            return True
        return False

    async def items(self) -> AsyncGenerator[T | None, None]:
        """The items until end(), with None after each quiet `idle_seconds`; once only."""
        loop = asyncio.get_running_loop()
        self._last = loop.time()
        ticker = asyncio.create_task(self._tick(loop))
        finished = False
        try:
            while True:
                while not self._items:
                    self._waiter = loop.create_future()
                    await self._waiter
                item = self._items.popleft()
                if item is _END:
                    finished = True
                    return
                self._last = loop.time()
                yield item  # type: ignore[misc]  # T or None (a tick), as pushed
        finally:
            ticker.cancel()
            self.detached = not finished

    async def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        while True:
            wait = self._last + self.idle_seconds - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            self._last = loop.time()
            self._push(None)

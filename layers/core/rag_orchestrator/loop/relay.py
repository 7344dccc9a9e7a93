"""A hand-over from one task to one reader that also says when the line has been quiet.

The reader gets the items in order and, whenever nothing has passed for `idle_seconds`, a None: the
moment for an SSE keep-alive comment. A timer task makes the Nones; an item costs a queue hand-over
and a clock read, nothing more.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

_END = object()


class Relay[T]:
    def __init__(self, idle_seconds: float) -> None:
        self.idle_seconds = idle_seconds
        self.reading = False  # a reader is attached
        self.detached = False  # the reader went away before the end
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._last = 0.0

    def put(self, item: T) -> None:
        if not self.detached:
            self._queue.put_nowait(item)

    def end(self) -> None:
        self._queue.put_nowait(_END)

    async def items(self) -> AsyncGenerator[T | None, None]:
        """The items until end(), with None after each quiet `idle_seconds`; once only."""
        loop = asyncio.get_running_loop()
        self.reading, self._last = True, loop.time()
        ticker = asyncio.create_task(self._tick(loop))
        finished = False
        try:
            while True:
                item = await self._queue.get()
                if item is _END:
                    finished = True
                    return
                self._last = loop.time()
                yield item  # type: ignore[misc]  # T or None (a tick), as put
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
            self._queue.put_nowait(None)

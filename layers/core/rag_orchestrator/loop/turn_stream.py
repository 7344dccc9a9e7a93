"""A streamed turn run as its own task: its events numbered, logged in batches, handed to the reader.

The turn no longer belongs to the HTTP response: when the client goes away the task runs on to the
turn's end (or its deadline), and the event log keeps what a reconnecting client replays
(docs/streams.md). TURN_STOP_ON_DISCONNECT=true cancels the turn instead. A flusher task writes the
log at most once per STREAM_LOG_FLUSH_MS, and at once when the reader leaves (what it was sent is then
logged for its reconnect); it asks about a cancel every CHECK_SECONDS, whatever the flush interval (a
read of the log's entry), so a cancel made in another process stops the turn within a second. Failures of the log are logged and
never stop the turn.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing, suppress

from rag_orchestrator.errors import ConversationNotFound
from rag_orchestrator.loop.configuration import StreamConfig
from rag_orchestrator.loop.control import RunningTurns
from rag_orchestrator.loop.relay import Relay
from rag_orchestrator.loop.turn import Turn
from rag_orchestrator.observability import logger
from rag_orchestrator.stream_log.log import EventLog, LoggedEvent, TurnEntry

CHECK_SECONDS = 0.5  # how often a running turn asks the log whether it was cancelled
YIELD_SECONDS = 0.001  # the longest an event waits for the reader while the turn works on
_detached: set[asyncio.Task[None]] = set()  # turns whose reader left: kept referenced until they end


class TurnStream:
    def __init__(self, turn: Turn, *, log: EventLog, running: RunningTurns, config: StreamConfig) -> None:
        self.turn = turn
        self.turn_id = turn.turn_id
        self._log: EventLog | None = log  # None after it failed to open
        self._running = running
        self._flush_seconds = config.flush_seconds
        self._stop_on_disconnect = config.stop_on_disconnect
        self._relay: Relay[LoggedEvent] = Relay(config.keepalive_seconds)
        request = turn.request
        self._entry = TurnEntry(
            request.conversation_id, turn.turn_id, request.caller.caller_id, turn.control.deadline
        )
        self._pending: list[LoggedEvent] = []
        self._seq = 0
        self._ended = asyncio.Event()
        self._flush_now = asyncio.Event()  # the turn ended or its reader left: write what is pending
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Run the turn; its events wait for `frames()`."""
        self._running.add(self.turn_id, self._entry.conversation_id, self._entry.caller_id, self.turn.control)
        self._task = asyncio.create_task(self._run(), name=f"turn-{self.turn_id}")

    async def finished(self) -> None:
        """Wait until the turn has ended, its last events are logged and its after-turn work is done."""
        assert self._task is not None
        await asyncio.shield(self._task)

    async def frames(self) -> AsyncIterator[LoggedEvent | None]:
        """The turn's events as sent, and None when a keep-alive is due; the reader may leave early."""
        try:
            async with aclosing(self._relay.items()) as items:
                async for item in items:
                    yield item
        finally:
            if self._relay.detached and self._task is not None and not self._task.done():
                self._flush_now.set()
                if self._stop_on_disconnect:
                    self.turn.control.cancel()
                _detached.add(self._task)
                self._task.add_done_callback(_detached.discard)

    async def _run(self) -> None:
        flusher = asyncio.create_task(self._flush())
        loop, yielded = asyncio.get_running_loop(), 0.0
        try:
            async with aclosing(self.turn.events()) as events:
                async for event in events:
                    self._seq += 1
                    # model_dump_json() without its wrapper (~1 µs of every streamed token)
                    data = event.__pydantic_serializer__.to_json(event).decode()
                    logged = LoggedEvent(self._seq, event.type, data, event)
                    self._pending.append(logged)
                    # Let a waiting reader send it now: chunks that came in one read would otherwise
                    # all be worked through before the first of them leaves. In a burst, once a ms.
                    if self._relay.put(logged) and loop.time() - yielded >= YIELD_SECONDS:
                        yielded = loop.time()
                        await asyncio.sleep(0)
        finally:
            self._running.remove(self.turn_id)
            self._relay.end()
            self._ended.set()
            self._flush_now.set()
            await asyncio.shield(flusher)
            if isinstance(self.turn.record.failure, ConversationNotFound) and self._log is not None:
                # Deleted or erased while the turn ran: its log must not outlive it (docs/privacy.md).
                await self._safely(self._log.discard, self._entry)
            await self.turn.after()  # the after-turn hooks, once the log has the terminal event

    async def _flush(self) -> None:
        """Open the log entry, then write what came at most every flush interval, and the rest at the end."""
        if self._log is None:
            return
        try:
            await self._log.open(self._entry)
        except Exception:
            logger.exception(
                "event log unavailable: this turn cannot be resumed", extra={"turn_id": self.turn_id}
            )
            self._log = None
            return
        tick_seconds = min(self._flush_seconds, CHECK_SECONDS)
        writes_every = max(1, round(self._flush_seconds / tick_seconds))  # ticks between two writes
        reports_every = max(1, round(CHECK_SECONDS / tick_seconds))  # ticks between two cancel checks
        for tick in itertools.count(1):
            with suppress(TimeoutError):
                await asyncio.wait_for(self._flush_now.wait(), tick_seconds)
            ended = self._ended.is_set()  # as of now: events that come during the writes go next round
            now = self._flush_now.is_set()
            if not ended:
                self._flush_now.clear()
            if now or tick % writes_every == 0:
                await self._safely(self._write)
            if ended or tick % reports_every == 0:
                await self._safely(self._report, ended)
            if ended:
                return

    async def _write(self) -> None:
        batch, self._pending = self._pending, []
        if batch and self._log is not None:
            try:
                await self._log.append(self._entry, batch)
            except Exception:
                self._pending[:0] = batch  # tried again with the next
                raise

    async def _report(self, ended: bool = False) -> None:
        if self._log is not None and await self._log.report(self._entry, self._seq, ended=ended):
            self.turn.control.cancel()

    async def _safely(self, step: Callable[..., Awaitable[None]], *args: object) -> None:
        try:
            await step(*args)
        except Exception:
            logger.exception("event log write failed", extra={"turn_id": self.turn_id})

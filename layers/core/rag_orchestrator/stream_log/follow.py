"""Replay a turn's logged events after the one a client saw, then follow it live until it ends.

Reads only the log, so any process can serve a reconnect. A running turn is polled at a short interval,
each poll reading only the batches written since the last. A turn whose terminal event never comes
(its function was killed) is given up once its deadline and the margin have passed: the follower then
ends the stream with an Error of its own, numbered after the last logged event.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from rag_orchestrator.domain.events import TERMINAL_TYPES, Error
from rag_orchestrator.stream_log.log import EventLog, LoggedEvent, TurnEntry

LOST = "The turn ended without an answer. Please try again."


async def follow(
    log: EventLog, entry: TurnEntry, after: int, *, poll_seconds: float, margin_seconds: float
) -> AsyncIterator[LoggedEvent]:
    """The events numbered above `after`, in order, ending with exactly one terminal event."""
    next_batch, last = 1, 0
    give_up = entry.deadline + margin_seconds + 2 * poll_seconds
    ended = entry.status == "ended"
    while True:
        for event in await log.events(entry.conversation_id, entry.turn_id, next_batch):
            last = event.seq
            next_batch = last + 1
            if event.seq > after:
                yield event
            if event.type in TERMINAL_TYPES:
                return
        if ended or time.time() > give_up:
            yield _lost(entry, max(last, after) + 1)
            return
        await asyncio.sleep(poll_seconds)


def _lost(entry: TurnEntry, seq: int) -> LoggedEvent:
    error = Error(conversation_id=entry.conversation_id, turn_id=entry.turn_id, error=LOST)
    return LoggedEvent(seq, error.type, error.model_dump_json())

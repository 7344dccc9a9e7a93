"""A streamed turn after the fact: resume its events (SSE, the streaming app) and cancel it (JSON).

Both read the event log (docs/streams.md), so they work from any function instance; every turn is in
it, a REST one too. A turn not in the log — unknown, expired an hour after its deadline, another
caller's — is 404; so is a resume of a turn whose conversation was deleted since.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import anyio
from starlette.responses import StreamingResponse

from rag_orchestrator.api.auth import get_caller
from rag_orchestrator.api.deps import get_event_log, get_running_turns, get_settings, get_store
from rag_orchestrator.api.routing import Depends, Header, Path, Query, Router
from rag_orchestrator.api.sse import SSE_HEADERS, comment, frame
from rag_orchestrator.config import Settings
from rag_orchestrator.conversations.store import ConversationStore
from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.errors import BadRequest, TurnNotFound
from rag_orchestrator.loop.control import RunningTurns
from rag_orchestrator.loop.relay import Relay
from rag_orchestrator.stream_log.follow import follow
from rag_orchestrator.stream_log.log import EventLog, LoggedEvent

CONVERSATION_ID = Path(..., min_length=1, max_length=100)
TURN_ID = Path(..., min_length=1, max_length=64)
_EVENT_ID = re.compile(r"(?P<turn>[^:\s]{1,64}):(?P<seq>\d{1,9})")

router = Router(prefix="/api/v1/chat/conversations", tags=["chat"])
stream_router = Router(prefix="/api/v1/chat/conversations", tags=["chat"])


def last_seen(turn_id: str, last_event_id: str | None, after: int | None) -> int:
    """The number of the last event the client has: `Last-Event-ID` (`<turnId>:<seq>`) wins over `?after=`."""
    if last_event_id is None:
        return after or 0
    match = _EVENT_ID.fullmatch(last_event_id.strip())
    if match is None:
        raise BadRequest("Last-Event-ID must be <turnId>:<seq>")
    if match["turn"] != turn_id:
        raise BadRequest("Last-Event-ID belongs to another turn")
    return int(match["seq"])


@stream_router.get(
    "/{conversation_id}/turns/{turn_id}/events",
    summary="Replay a turn's events after the last one seen, then follow it until it ends",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/event-stream": {}}},
        400: {"description": "Last-Event-ID is not `<turnId>:<seq>`, or names another turn"},
    },
)
async def resume_turn(
    conversation_id: str = CONVERSATION_ID,
    turn_id: str = TURN_ID,
    after: int | None = Query(None, ge=0, description="the last event number seen; Last-Event-ID wins"),
    last_event_id: str | None = Header(None),  # any malformed one, a long one too, is last_seen's 400
    caller: Caller = Depends(get_caller),
    log: EventLog = Depends(get_event_log),
    store: ConversationStore = Depends(get_store),
    settings: Settings = Depends(get_settings),
) -> StreamingResponse:
    seen = last_seen(turn_id, last_event_id, after)
    entry = await log.get(conversation_id, turn_id, caller.caller_id)  # 404 before the stream starts
    # The log outlives a delete by up to an hour; what was said in a deleted conversation is not replayed.
    await store.get(conversation_id, caller.caller_id)
    events = follow(
        log,
        entry,
        seen,
        poll_seconds=settings.stream_log_flush_ms / 1000,
        margin_seconds=settings.turn_deadline_margin_seconds,
    )
    return StreamingResponse(
        _sse(turn_id, events, settings.sse_keepalive_seconds),
        media_type="text/event-stream",
        headers=SSE_HEADERS,
    )


async def _sse(
    turn_id: str, events: AsyncIterator[LoggedEvent], keepalive_seconds: float
) -> AsyncIterator[bytes]:
    async for item in relayed(events, keepalive_seconds):
        yield comment() if item is None else frame(item.type, item.data, f"{turn_id}:{item.seq}")


async def relayed[T](events: AsyncIterator[T], keepalive_seconds: float) -> AsyncIterator[T | None]:
    """`events` through a relay, so a quiet stream still gets its keep-alives (None). A reader that
    leaves stops them, and waits until they have stopped (a turn stores what it had)."""
    relay: Relay[T] = Relay(keepalive_seconds)

    async def pump() -> None:
        try:
            async for event in events:
                relay.put(event)
        finally:
            relay.end()

    task = asyncio.create_task(pump())
    try:
        async for item in relay.items():
            yield item
    finally:
        task.cancel()
        with anyio.CancelScope(shield=True):
            await asyncio.wait([task])


class CancelResponse(CamelModel):
    conversation_id: str
    turn_id: str
    cancel_requested: bool = True


@router.post(
    "/{conversation_id}/turns/{turn_id}/cancel",
    status_code=202,
    response_model=CancelResponse,
    summary="Stop a running turn: it keeps what it answered so far and ends with Completed (cancelled)",
    responses={409: {"description": "The turn has already ended"}},
)
async def cancel_turn(
    conversation_id: str = CONVERSATION_ID,
    turn_id: str = TURN_ID,
    caller: Caller = Depends(get_caller),
    log: EventLog = Depends(get_event_log),
    running: RunningTurns = Depends(get_running_turns),
) -> CancelResponse:
    """202 once asked; 404 for a turn not in the log, 409 for one that has already ended."""
    # A turn running in this process stops at once; elsewhere it reads the flag within a second.
    here = running.cancel(conversation_id, turn_id, caller.caller_id)
    try:
        await log.request_cancel(conversation_id, turn_id, caller.caller_id)
    except TurnNotFound:
        if not here:  # else: so young its log entry is still being written
            raise
    return CancelResponse(conversation_id=conversation_id, turn_id=turn_id)

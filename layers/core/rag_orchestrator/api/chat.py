"""Chat turns: answered whole (REST) or streamed as SSE (docs/streams.md).

Either kind runs as its own task (loop/turn_stream.py), its events in the event log, so any instance
resumes or cancels it: the response reads it, and a client that goes away leaves a streamed one
running to its end. Both kinds end by their function's deadline (api/deadlines.py).
The body is a chat request, which may also carry the fields older clients send (ChatBody).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from pydantic import Field, field_validator
from starlette.background import BackgroundTasks
from starlette.requests import Request
from starlette.responses import StreamingResponse

from rag_orchestrator.api.auth import FOR_ANOTHER_CALLER, check_claimed, get_owner
from rag_orchestrator.api.deadlines import turn_deadline
from rag_orchestrator.api.deps import Services, get_orchestrator, get_settings, services
from rag_orchestrator.api.routing import Depends, Path, Router
from rag_orchestrator.api.sse import SSE_HEADERS, comment, frame
from rag_orchestrator.config import Settings
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import MAX_ID_LENGTH, ChatRequest, ChatResponse, joined_context
from rag_orchestrator.domain.passages import SourceWithSnippet
from rag_orchestrator.domain.text import plain_optional
from rag_orchestrator.loop.approvals import approval_requested
from rag_orchestrator.loop.orchestrator import Orchestrator
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.loop.turn import Turn
from rag_orchestrator.loop.turn_stream import TurnStream
from rag_orchestrator.observability import metrics, since
from rag_orchestrator.providers.events import StreamingMode

CONVERSATION_ID = Path(..., min_length=1, max_length=100)

router = Router(prefix="/api/v1/chat/conversations", tags=["chat"])
stream_router = Router(prefix="/api/v1/chat/conversations", tags=["chat"])


def check(services: Services) -> None:
    """Validate the tool catalogue at start: a bad one stops the function, not its first turn."""
    _ = services.toolbox  # building it validates the catalogue


class ChatBody(ChatRequest):
    """A chat request, also as older clients send it: `callerId` (the authenticated caller's, else
    403), `userId` and `accountId` (they join the turn's context, under those names, unless the
    context has them), `conversationId` (the path's names the conversation)."""

    caller_id: str | None = Field(None, max_length=MAX_ID_LENGTH)
    user_id: str | None = Field(None, max_length=MAX_ID_LENGTH)
    account_id: str | None = Field(None, max_length=MAX_ID_LENGTH)
    conversation_id: str | None = Field(None, max_length=MAX_ID_LENGTH, description="Ignored")

    _ids = field_validator("caller_id", "user_id", "account_id", "conversation_id")(plain_optional)

    def for_caller(self, caller: Caller) -> ChatRequest:
        check_claimed(self.caller_id, caller)
        context = joined_context(self.context, self.user_id, self.account_id)
        return self.model_copy(update={"context": context}) if context is not self.context else self


def turn_request(
    conversation_id: str,
    body: ChatRequest,
    caller: Caller,
    mode: StreamingMode,
    request: Request,
    settings: Settings,
) -> TurnRequest:
    return TurnRequest(
        request_id=getattr(request.state, "request_id", None),
        client_request_id=getattr(request.state, "client_request_id", None),
        conversation_id=conversation_id,
        caller=caller,
        message=body.message,
        client_message_id=body.client_message_id,
        context_type=body.context_type,
        context=body.context or {},
        metadata=body.metadata,
        mode=mode,
        deadline=turn_deadline(request, settings),
        attachment_ids=tuple(body.attachment_ids),
    )


@router.post(
    "/{conversation_id}/messages",
    response_model=ChatResponse,
    summary="One turn, answered whole",
    responses=FOR_ANOTHER_CALLER,
)
async def send_message(
    body: ChatBody,
    request: Request,
    background: BackgroundTasks,
    conversation_id: str = CONVERSATION_ID,
    caller: Caller = Depends(get_owner),
    orchestrator: Orchestrator = Depends(get_orchestrator),
    settings: Settings = Depends(get_settings),
) -> ChatResponse:
    asked = body.for_caller(caller)
    # Its chunks are made as a streamed turn's are, for whoever follows it (the response waits for the end).
    turn = await orchestrator.begin(
        turn_request(conversation_id, asked, caller, StreamingMode.PROGRESSIVE, request, settings)
    )
    # Run as a streamed turn is, with its events in the event log: a reload's GET …/ui-stream or
    # …/turns/{turnId}/events follows it, and a cancel reaches it, from any instance.
    stream = services(request).turn_stream(turn)
    stream.start()
    async for _ in stream.frames():
        pass
    record = turn.record
    if record.failure is not None:
        await stream.finished()  # its last log write (a failed turn has no after-turn work)
        raise record.failure
    # The last log write and the after-turn work: after the response under uvicorn; under Mangum before
    # the invocation returns (never frozen mid-way).
    background.add_task(stream.finished)
    return ChatResponse(
        conversation_id=conversation_id,
        turn_id=turn.turn_id,
        message=record.content,
        message_id=record.message_id,
        tool_calls_count=record.tool_calls,
        iterations_used=record.iterations,
        tokens_used=record.tokens,
        finish_reason=record.finish_reason,
        sources=[SourceWithSnippet.of(p) for p in record.sources],
        approval=approval_requested(record.held, turn.turn_id) if record.held else None,
    )


async def _sse(stream: TurnStream, started: float) -> AsyncIterator[bytes]:
    turn_id = stream.turn_id
    async for item in stream.frames():
        if item is None:
            yield comment()
            continue
        if started and item.type == "ResponseChunk":
            metrics.add_metric(name="TimeToFirstToken", unit="Milliseconds", value=since(started))
            started = 0.0
        yield frame(item.type, item.data, f"{turn_id}:{item.seq}")
    # The client has the terminal event; the body ends (and a Lambda invocation with it) only once
    # the turn's log is written and its after-turn work done, so neither is frozen half-way.
    await stream.finished()


@stream_router.post(
    "/{conversation_id}/messages/stream",
    summary="One turn as server-sent events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}, **FOR_ANOTHER_CALLER},
)
async def stream_message(
    body: ChatBody,
    request: Request,
    conversation_id: str = CONVERSATION_ID,
    caller: Caller = Depends(get_owner),
    orchestrator: Orchestrator = Depends(get_orchestrator),
    settings: Settings = Depends(get_settings),
) -> StreamingResponse:
    started = time.perf_counter()
    # begin() raises 404/409 as plain HTTP errors before the stream starts.
    asked = body.for_caller(caller)
    turn = await orchestrator.begin(
        turn_request(conversation_id, asked, caller, StreamingMode.PROGRESSIVE, request, settings)
    )
    return stream_turn(turn, request, started)


def stream_turn(turn: Turn, request: Request, started: float) -> StreamingResponse:
    """Run a claimed turn as its own task (a TurnStream) and answer with its events as SSE."""
    stream = services(request).turn_stream(turn)
    stream.start()
    return StreamingResponse(_sse(stream, started), media_type="text/event-stream", headers=SSE_HEADERS)

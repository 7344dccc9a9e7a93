"""Chat turns: answered whole (FINAL_ONLY, REST) or streamed as SSE (PROGRESSIVE)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from fastapi import APIRouter, BackgroundTasks, Depends, Path, Request
from fastapi.responses import StreamingResponse

from rag_orchestrator.api.auth import get_owner
from rag_orchestrator.api.deps import Services, get_orchestrator
from rag_orchestrator.api.sse import SSE_HEADERS, encode
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import ChatRequest, ChatResponse
from rag_orchestrator.domain.passages import SourceWithSnippet
from rag_orchestrator.loop.orchestrator import ActiveTurn, Orchestrator
from rag_orchestrator.loop.ports import TurnRequest
from rag_orchestrator.observability import metrics, since
from rag_orchestrator.providers.events import StreamingMode

CONVERSATION_ID = Path(..., min_length=1, max_length=100)

router = APIRouter(prefix="/api/v1/chat/conversations", tags=["chat"])
stream_router = APIRouter(prefix="/api/v1/chat/conversations", tags=["chat"])


def check(services: Services) -> None:
    """Validate the tool catalogue at start: a bad one stops the function, not its first turn."""
    _ = services.toolbox  # building it validates the catalogue


def turn_request(
    conversation_id: str, body: ChatRequest, caller: Caller, mode: StreamingMode, request: Request
) -> TurnRequest:
    return TurnRequest(
        request_id=getattr(request.state, "request_id", None),
        conversation_id=conversation_id,
        caller=caller,
        message=body.message,
        client_message_id=body.client_message_id,
        context_type=body.context_type,
        context=body.context or {},
        metadata=body.metadata,
        mode=mode,
        attachment_ids=tuple(body.attachment_ids),
    )


@router.post("/{conversation_id}/messages", response_model=ChatResponse, summary="One turn, answered whole")
async def send_message(
    body: ChatRequest,
    request: Request,
    background: BackgroundTasks,
    conversation_id: str = CONVERSATION_ID,
    caller: Caller = Depends(get_owner),
    orchestrator: Orchestrator = Depends(get_orchestrator),
) -> ChatResponse:
    turn = await orchestrator.begin(
        turn_request(conversation_id, body, caller, StreamingMode.FINAL_ONLY, request)
    )
    async for _ in turn.events():
        pass
    record = turn.record
    if record.failure is not None:
        raise record.failure
    # After the response under uvicorn; under Mangum before the invocation returns (never frozen mid-way).
    background.add_task(turn.after)
    return ChatResponse(
        conversation_id=conversation_id,
        message=record.content,
        message_id=record.message_id,
        tool_calls_count=record.tool_calls,
        iterations_used=record.iterations,
        tokens_used=record.tokens,
        finish_reason=record.finish_reason,
        sources=[SourceWithSnippet.of(p) for p in record.sources],
    )


async def _sse(turn: ActiveTurn, started: float = 0.0) -> AsyncIterator[bytes]:
    seq = 0
    async for event in turn.events():
        seq += 1
        if event.type == "ResponseChunk" and started:
            metrics.add_metric(name="TimeToFirstToken", unit="Milliseconds", value=since(started))
            started = 0.0
        yield encode(event.type, event, seq)
    # The client has the terminal event; the body ends (and Lambda's invocation with it) after this.
    await turn.after()


@stream_router.post(
    "/{conversation_id}/messages/stream",
    summary="One turn as server-sent events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def stream_message(
    body: ChatRequest,
    request: Request,
    conversation_id: str = CONVERSATION_ID,
    caller: Caller = Depends(get_owner),
    orchestrator: Orchestrator = Depends(get_orchestrator),
) -> StreamingResponse:
    started = time.perf_counter()
    # begin() raises 404/409 as plain HTTP errors before the stream starts.
    turn = await orchestrator.begin(
        turn_request(conversation_id, body, caller, StreamingMode.PROGRESSIVE, request)
    )
    return StreamingResponse(_sse(turn, started), media_type="text/event-stream", headers=SSE_HEADERS)

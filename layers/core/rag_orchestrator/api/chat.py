"""Chat turns: answered whole (FINAL_ONLY, REST) or streamed as SSE (PROGRESSIVE)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from fastapi import APIRouter, Depends, Path
from fastapi.responses import StreamingResponse

from rag_orchestrator.api.auth import Caller, get_caller
from rag_orchestrator.api.sse import SSE_HEADERS, encode
from rag_orchestrator.config import Settings
from rag_orchestrator.domain.conversations import ChatRequest, ChatResponse
from rag_orchestrator.loop.orchestrator import ActiveTurn, Orchestrator, TurnRequest
from rag_orchestrator.loop.service import get_orchestrator, toolbox_for
from rag_orchestrator.observability import metrics, since
from rag_orchestrator.providers.events import StreamingMode

CONVERSATION_ID = Path(..., min_length=1, max_length=100)

router = APIRouter(prefix="/api/v1/chat/conversations", tags=["chat"])
stream_router = APIRouter(prefix="/api/v1/chat/conversations", tags=["chat"])


def check_settings(settings: Settings) -> None:
    """Validate the tool catalogue at start: a bad one stops the function, not its first turn."""
    toolbox_for(settings)


def _turn_request(
    conversation_id: str, body: ChatRequest, caller: Caller, mode: StreamingMode
) -> TurnRequest:
    return TurnRequest(
        conversation_id=conversation_id,
        caller=caller,
        message=body.message,
        client_message_id=body.client_message_id,
        context_type=body.context_type,
        context=body.context or {},
        mode=mode,
    )


@router.post("/{conversation_id}/messages", response_model=ChatResponse, summary="One turn, answered whole")
async def send_message(
    body: ChatRequest,
    conversation_id: str = CONVERSATION_ID,
    caller: Caller = Depends(get_caller),
    orchestrator: Orchestrator = Depends(get_orchestrator),
) -> ChatResponse:
    turn = await orchestrator.begin(_turn_request(conversation_id, body, caller, StreamingMode.FINAL_ONLY))
    async for _ in turn.events():
        pass
    outcome = turn.outcome
    if outcome.failure is not None:
        raise outcome.failure
    return ChatResponse(
        conversation_id=conversation_id,
        message=outcome.content,
        message_id=outcome.message_id,
        tool_calls_count=outcome.tool_calls,
        iterations_used=outcome.iterations,
        tokens_used=outcome.tokens,
        sources=outcome.sources,
    )


async def _sse(turn: ActiveTurn, started: float) -> AsyncIterator[bytes]:
    seq = 0
    async for event in turn.events():
        seq += 1
        if event.type == "ResponseChunk" and started:
            metrics.add_metric(name="TimeToFirstToken", unit="Milliseconds", value=since(started))
            started = 0.0
        yield encode(event.type, event, seq)


@stream_router.post(
    "/{conversation_id}/messages/stream",
    summary="One turn as server-sent events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def stream_message(
    body: ChatRequest,
    conversation_id: str = CONVERSATION_ID,
    caller: Caller = Depends(get_caller),
    orchestrator: Orchestrator = Depends(get_orchestrator),
) -> StreamingResponse:
    started = time.perf_counter()
    # begin() raises 404/409 as plain HTTP errors before the stream starts.
    turn = await orchestrator.begin(_turn_request(conversation_id, body, caller, StreamingMode.PROGRESSIVE))
    return StreamingResponse(_sse(turn, started), media_type="text/event-stream", headers=SSE_HEADERS)

"""Regenerate and edit the last exchange, streamed as SSE like any turn (docs/conversations.md).

`POST …/messages/{messageId}/regenerate` answers the last user message again; `…/edit` `{message}`
replaces it and answers that. `messageId` is any message of the last exchange (its user message or
what followed it): an earlier message answers 409, another caller's or a missing one 404, both before
the stream starts. The replaced messages stay as earlier versions (`GET …/messages?versions=all`).
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import APIRouter, Body, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import Field

from rag_orchestrator.api.auth import get_owner
from rag_orchestrator.api.chat import stream_turn
from rag_orchestrator.api.conversations import conversation_id
from rag_orchestrator.api.deadlines import turn_deadline
from rag_orchestrator.api.deps import get_orchestrator, get_settings
from rag_orchestrator.api.feedback import message_id
from rag_orchestrator.config import Settings
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import ChatRequest
from rag_orchestrator.domain.text import ClientBody
from rag_orchestrator.loop.orchestrator import Orchestrator
from rag_orchestrator.loop.ports import TurnRequest
from rag_orchestrator.loop.revisions import begin_revision

stream_router = APIRouter(prefix="/api/v1/chat/conversations", tags=["chat"])
STREAMED: dict[int | str, dict[str, Any]] = {200: {"content": {"text/event-stream": {}}}}


class RegenerateRequest(ClientBody):
    """Optional: the tool context of the new answer (as on a chat request)."""

    model_config = ClientBody.model_config | {"extra": "forbid"}

    context_type: str | None = Field(None, max_length=64)
    context: dict[str, Any] | None = None


class EditRequest(ChatRequest):
    """A chat request's body (`message` required, not blank), without clientMessageId."""

    client_message_id: None = Field(None, exclude=True)


def _turn_request(
    conversation: str,
    caller: Caller,
    request: Request,
    settings: Settings,
    body: RegenerateRequest | EditRequest,
) -> TurnRequest:
    edited = body if isinstance(body, EditRequest) else None
    return TurnRequest(
        request_id=getattr(request.state, "request_id", None),
        conversation_id=conversation,
        caller=caller,
        message=edited.message if edited else "",  # a regenerate's: the question, once read
        context_type=body.context_type,
        context=body.context or {},
        metadata=edited.metadata if edited else {},
        deadline=turn_deadline(request, settings),
    )


@stream_router.post(
    "/{conversation_id}/messages/{message_id}/regenerate",
    summary="Answer the last user message again, as server-sent events",
    response_class=StreamingResponse,
    responses=STREAMED,
)
async def regenerate(
    request: Request,
    body: RegenerateRequest | None = Body(None),
    conversation: str = Depends(conversation_id),
    message: str = Depends(message_id),
    caller: Caller = Depends(get_owner),
    orchestrator: Orchestrator = Depends(get_orchestrator),
    settings: Settings = Depends(get_settings),
) -> StreamingResponse:
    started = time.perf_counter()
    asked = _turn_request(conversation, caller, request, settings, body or RegenerateRequest())
    turn = await begin_revision(orchestrator, asked, message, edit=False)
    return stream_turn(turn, request, settings, started)


@stream_router.post(
    "/{conversation_id}/messages/{message_id}/edit",
    summary="Replace the last user message and answer it, as server-sent events",
    response_class=StreamingResponse,
    responses=STREAMED,
)
async def edit(
    request: Request,
    body: EditRequest,
    conversation: str = Depends(conversation_id),
    message: str = Depends(message_id),
    caller: Caller = Depends(get_owner),
    orchestrator: Orchestrator = Depends(get_orchestrator),
    settings: Settings = Depends(get_settings),
) -> StreamingResponse:
    started = time.perf_counter()
    asked = _turn_request(conversation, caller, request, settings, body)
    turn = await begin_revision(orchestrator, asked, message, edit=True)
    return stream_turn(turn, request, settings, started)

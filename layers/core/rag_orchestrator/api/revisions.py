"""Regenerate and edit the last exchange, streamed as SSE like any turn (docs/conversations.md).

`POST …/messages/{messageId}/regenerate` answers the last user message again; `…/edit` `{message}`
replaces it and answers that. `messageId` is any message of the last exchange (its user message or
what followed it): an earlier message answers 409, another caller's or a missing one 404, both before
the stream starts. The replaced messages stay as earlier versions (`GET …/messages?versions=all`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pydantic import Field
from starlette.requests import Request
from starlette.responses import StreamingResponse

from rag_orchestrator.api.auth import get_owner
from rag_orchestrator.api.chat import stream_turn
from rag_orchestrator.api.deadlines import turn_deadline
from rag_orchestrator.api.deps import get_orchestrator, get_settings
from rag_orchestrator.api.path_ids import checked_id, checked_message_id
from rag_orchestrator.api.routing import Body, Depends, Path, Router
from rag_orchestrator.config import Settings
from rag_orchestrator.conversations.store import ConversationStore
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import ChatRequest
from rag_orchestrator.domain.messages import Role
from rag_orchestrator.domain.text import ClientBody
from rag_orchestrator.errors import Conflict
from rag_orchestrator.loop.orchestrator import Orchestrator
from rag_orchestrator.loop.request import TurnRequest

stream_router = Router(prefix="/api/v1/chat/conversations", tags=["chat"])
NOT_THE_LAST_QUESTION = (
    "Only the last question can be answered again: its text must be the conversation's last"
)
LAST_QUESTION_WINDOW = 50  # the newest messages searched for the last question (tool rounds come after it)
STREAMED: dict[int | str, dict[str, Any]] = {200: {"content": {"text/event-stream": {}}}}


class RegenerateRequest(ClientBody):
    """Optional: the tool context of the new answer (as on a chat request)."""

    model_config = ClientBody.model_config | {"extra": "forbid"}

    context_type: str | None = Field(None, max_length=64)
    context: dict[str, Any] | None = None


class EditRequest(ChatRequest):
    """A chat request's body (`message` required, not blank), without clientMessageId."""

    client_message_id: None = Field(None, exclude=True)


@dataclass(frozen=True)
class Revising:
    """What both routes read from the request: the exchange's conversation and message, and the parts."""

    conversation_id: str
    message_id: str
    caller: Caller
    orchestrator: Orchestrator
    settings: Settings


CONVERSATION_ID = Path(..., max_length=100)
MESSAGE_ID = Path(..., max_length=100)


def revising(
    conversation_id: str, message_id: str, caller: Caller, orchestrator: Orchestrator, settings: Settings
) -> Revising:
    """The exchange the path names (a malformed id: the same 404 as an unknown one) and the parts."""
    return Revising(
        checked_id(conversation_id), checked_message_id(message_id), caller, orchestrator, settings
    )


async def _stream(
    request: Request, target: Revising, body: RegenerateRequest | EditRequest
) -> StreamingResponse:
    """Claim the revising turn (404/409 before any event) and stream it like any turn."""
    started = time.perf_counter()
    edited = body if isinstance(body, EditRequest) else None
    asked = TurnRequest(
        request_id=getattr(request.state, "request_id", None),
        client_request_id=getattr(request.state, "client_request_id", None),
        conversation_id=target.conversation_id,
        caller=target.caller,
        message=edited.message if edited else "",  # a regenerate's: the question, once read
        context_type=body.context_type,
        context=body.context or {},
        metadata=edited.metadata if edited else {},
        attachment_ids=tuple(edited.attachment_ids) if edited else (),
        deadline=turn_deadline(request, target.settings),
    )
    turn = await target.orchestrator.revise(asked, target.message_id, edit=edited is not None)
    return stream_turn(turn, request, started)


async def last_question(store: ConversationStore, conversation_id: str, caller: Caller, text: str) -> str:
    """The id of the conversation's last user message, when its text is `text`: how a regenerate
    that names no message of ours (the AI SDK's, which names its own ids) finds the exchange."""
    await store.get(conversation_id, caller.caller_id)  # a 404 first: another caller learns nothing
    for message in reversed(await store.window(conversation_id, LAST_QUESTION_WINDOW)):
        if message.role is Role.USER:
            if message.content != text:
                break
            return message.message_id
    raise Conflict(NOT_THE_LAST_QUESTION)


@stream_router.post(
    "/{conversation_id}/messages/{message_id}/regenerate",
    summary="Answer the last user message again, as server-sent events",
    response_class=StreamingResponse,
    responses=STREAMED,
)
async def regenerate(
    request: Request,
    body: RegenerateRequest | None = Body(None),
    conversation_id: str = CONVERSATION_ID,
    message_id: str = MESSAGE_ID,
    caller: Caller = Depends(get_owner),
    orchestrator: Orchestrator = Depends(get_orchestrator),
    settings: Settings = Depends(get_settings),
) -> StreamingResponse:
    target = revising(conversation_id, message_id, caller, orchestrator, settings)
    return await _stream(request, target, body or RegenerateRequest())


@stream_router.post(
    "/{conversation_id}/messages/{message_id}/edit",
    summary="Replace the last user message and answer it, as server-sent events",
    response_class=StreamingResponse,
    responses=STREAMED,
)
async def edit(
    request: Request,
    body: EditRequest,
    conversation_id: str = CONVERSATION_ID,
    message_id: str = MESSAGE_ID,
    caller: Caller = Depends(get_owner),
    orchestrator: Orchestrator = Depends(get_orchestrator),
    settings: Settings = Depends(get_settings),
) -> StreamingResponse:
    target = revising(conversation_id, message_id, caller, orchestrator, settings)
    return await _stream(request, target, body)

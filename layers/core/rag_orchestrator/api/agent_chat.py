"""POST /api/v1/agent/chat: one stateless agent turn, for clients written to the agent chat's own
events (docs/streams.md, "The agent chat").

The client sends the history with each message (`{message, context_type, context, history}`, snake
case); the service keeps no conversation — only the turn's audit record and its tokens
(api/agent_history.py). The turn streams as named SSE events: `content_chunk`, `tool_call_start`,
`tool_call_result`, a preview under its own name (`workflow_preview`, `table_config_preview`), then
`message_complete` or `error`. A client that goes away stops the turn: nobody could resume it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Literal, assert_never

from pydantic import AliasChoices, Field, field_validator
from starlette.requests import Request
from starlette.responses import StreamingResponse

from rag_orchestrator.api.agent_history import ClientHistory, KeepingStore, stateless
from rag_orchestrator.api.auth import FOR_ANOTHER_CALLER, check_claimed, get_caller
from rag_orchestrator.api.deadlines import turn_deadline
from rag_orchestrator.api.deps import get_orchestrator, get_settings, get_store
from rag_orchestrator.api.routing import Depends, Router
from rag_orchestrator.api.sse import AGENT_STREAM, SSE_HEADERS, comment, event_stream
from rag_orchestrator.api.stream_control import relayed
from rag_orchestrator.config import Settings
from rag_orchestrator.domain import events as ev
from rag_orchestrator.domain.base import new_id
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import (
    MAX_ID_LENGTH,
    MAX_MESSAGE_CHARS,
    ConversationMessage,
    joined_context,
    not_blank,
)
from rag_orchestrator.domain.messages import Message, Role
from rag_orchestrator.domain.text import ClientBody, plain_optional
from rag_orchestrator.errors import PayloadTooLarge
from rag_orchestrator.loop.orchestrator import Orchestrator
from rag_orchestrator.loop.request import TurnRequest
from rag_orchestrator.loop.turn import Turn
from rag_orchestrator.providers.events import StreamingMode

router = Router(prefix="/api/v1/agent", tags=["agent"])
MAX_HISTORY_MESSAGES = 200
MAX_HISTORY_CHARS = 256_000


class HistoryMessage(ClientBody):
    model_config = ClientBody.model_config | {"alias_generator": None, "extra": "forbid"}

    role: Literal["user", "assistant"]
    content: str = Field(..., max_length=MAX_MESSAGE_CHARS)


class AgentChatRequest(ClientBody):
    """The agent chat's body, snake case; unknown fields (a `conversation_id`) are ignored, a caller's
    id (`callerId` or `caller_id`) is checked like on every chat body."""

    model_config = ClientBody.model_config | {"alias_generator": None, "extra": "ignore"}

    message: str = Field(..., min_length=1, max_length=MAX_MESSAGE_CHARS)
    context_type: str | None = Field(None, max_length=64)
    context: dict[str, Any] | None = None
    history: list[HistoryMessage] | None = Field(
        default_factory=list,
        max_length=MAX_HISTORY_MESSAGES,
        description=f"The conversation so far, oldest first; at most {MAX_HISTORY_MESSAGES} messages and "
        f"{MAX_HISTORY_CHARS} characters, of which the newest CONVERSATION_ROLLING_WINDOW are read; "
        "null (Go's nil slice) is none",
    )

    caller_id: str | None = Field(
        None,
        max_length=MAX_ID_LENGTH,
        validation_alias=AliasChoices("callerId", "caller_id"),
        description="The authenticated caller's, else 403",
    )
    user_id: str | None = Field(
        None,
        max_length=MAX_ID_LENGTH,
        validation_alias=AliasChoices("userId", "user_id"),
        description="Joins the turn's context as userId",
    )
    account_id: str | None = Field(
        None,
        max_length=MAX_ID_LENGTH,
        validation_alias=AliasChoices("accountId", "account_id"),
        description="Joins the turn's context as accountId",
    )

    _not_blank = field_validator("message")(not_blank)
    _labels = field_validator("context_type", "caller_id", "user_id", "account_id")(plain_optional)

    def window(self, audit_id: str) -> list[ConversationMessage]:
        """The history as the turn's window; past its size limit a 413."""
        history = self.history or []
        if sum(len(m.content) for m in history) > MAX_HISTORY_CHARS:
            raise PayloadTooLarge(f"history exceeds {MAX_HISTORY_CHARS} characters")
        return [
            ConversationMessage.of(audit_id, Message(role=Role(m.role), content=m.content))
            for m in history
            if m.content.strip()
        ]


def encode(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'), default=str)}\n\n".encode()


def agent_events(event: ev.StreamEvent, audit_id: str, sources: list[dict[str, Any]]) -> list[bytes]:
    """One native event as the agent chat's; Sources are kept for message_complete."""
    match event:
        case ev.ResponseChunk(content=content):
            return [encode("content_chunk", {"chunk": content})] if content else []
        case ev.ToolCallStart(tool_name=name, tool_call_id=call_id, arguments=arguments):
            return [encode("tool_call_start", {"tool_use_id": call_id, "name": name, "input": arguments})]
        case ev.ToolCallResult(tool_name=name, tool_call_id=call_id, success=success):
            return [
                encode("tool_call_result", {"tool_use_id": call_id, "name": name, "is_error": not success})
            ]
        case ev.Preview(preview_type=preview_type, payload=payload):
            return [encode(preview_type, payload if isinstance(payload, dict) else {"payload": payload})]
        case ev.Sources():
            sources.extend(s.model_dump(mode="json", by_alias=True) for s in event.sources)
            return []
        case ev.Completed(iterations_used=iterations, tokens_used=tokens, finish_reason=reason):
            done = {
                "finish_reason": reason,
                "iterations_used": iterations,
                "tokens_used": tokens,
                "sources": sources,
                "audit_id": audit_id,
            }
            return [encode("message_complete", done)]
        case ev.Error(error=error):
            return [encode("error", {"message": error})]
        case ev.StatusUpdate() | ev.ApprovalRequested():  # no status events here; no approval tools offered
            return []
        case _:
            assert_never(event)


async def _stream(turn: Turn, audit_id: str, keepalive_seconds: float) -> AsyncIterator[bytes]:
    """The turn's events as the agent chat's; a client that leaves stops the turn, which still
    records itself (audit, tokens) before the body ends."""
    sources: list[dict[str, Any]] = []
    async for event in relayed(turn.events(), keepalive_seconds):
        if event is None:
            yield comment()
            continue
        for frame in agent_events(event, audit_id, sources):
            yield frame


@router.post(
    "/chat",
    summary="One stateless agent turn: the client sends the history; named SSE events come back",
    response_class=StreamingResponse,
    responses={200: {"content": event_stream(AGENT_STREAM)}, **FOR_ANOTHER_CALLER},
)
async def agent_chat(
    body: AgentChatRequest,
    request: Request,
    caller: Caller = Depends(get_caller),
    orchestrator: Orchestrator = Depends(get_orchestrator),
    store: KeepingStore = Depends(get_store),
    settings: Settings = Depends(get_settings),
) -> StreamingResponse:
    check_claimed(body.caller_id, caller)
    audit_id = new_id()  # the id its audit record is kept under (message_complete's audit_id)
    history = ClientHistory(store, caller, body.window(audit_id))
    asked = TurnRequest(
        request_id=getattr(request.state, "request_id", None),
        client_request_id=getattr(request.state, "client_request_id", None),
        conversation_id=audit_id,
        caller=caller,
        message=body.message,
        context_type=body.context_type,
        context=joined_context(body.context, body.user_id, body.account_id) or {},
        mode=StreamingMode.PROGRESSIVE,
        deadline=turn_deadline(request, settings),
    )
    turn = await stateless(orchestrator, history).begin(asked)  # 429 before the stream
    return StreamingResponse(
        _stream(turn, audit_id, settings.sse_keepalive_seconds),
        media_type="text/event-stream",
        headers=SSE_HEADERS,
    )

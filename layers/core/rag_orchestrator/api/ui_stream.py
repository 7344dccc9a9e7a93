"""POST …/{id}/ui-stream: the same turn as …/messages/stream, in the AI SDK UI message stream protocol.

The body is what the AI SDK's `useChat` (DefaultChatTransport) sends: `{id, messages, trigger,
messageId}` plus the fields an app adds with `body` (`contextType`, `context`, `metadata`,
`attachmentIds`). The service keeps the history itself, so only the last message is read: a user
message whose text parts are the turn's message; its id is the turn's clientMessageId, so a resent
message starts no second turn. Its file parts name attachments uploaded beforehand, by their status
URL (`…/conversations/{id}/attachments/{attachmentId}`): files never pass through this route.
`trigger: "regenerate-message"` answers the last question again (api/revisions.py).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any, Literal
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator

from rag_orchestrator.api.auth import get_owner
from rag_orchestrator.api.chat import CONVERSATION_ID, turn_request
from rag_orchestrator.api.deps import get_orchestrator, get_settings, get_store, services
from rag_orchestrator.api.revisions import last_question
from rag_orchestrator.api.sse import UI_STREAM, comment, event_stream
from rag_orchestrator.api.ui_parts import DONE, HEADERS, UIParts, encode_part
from rag_orchestrator.config import Settings
from rag_orchestrator.conversations.store import ConversationStore
from rag_orchestrator.domain.attachments import MAX_PER_TURN, well_formed_ids
from rag_orchestrator.domain.base import RequestBody
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import (
    MAX_ID_LENGTH,
    MAX_MESSAGE_CHARS,
    MAX_METADATA_ENTRIES,
    ChatRequest,
)
from rag_orchestrator.loop.orchestrator import Orchestrator
from rag_orchestrator.loop.turn_stream import TurnStream
from rag_orchestrator.providers.events import StreamingMode

router = APIRouter(prefix="/api/v1/chat/conversations", tags=["chat"])

FILE_REFUSED = (
    "messages: a file part's url must be an attachment's status URL (…/conversations/{id}/attachments/"
    "{attachmentId}); upload files with the presigned POST of POST …/attachments first"
)
_ATTACHMENT_PATH = re.compile(r"/api/v1/chat/conversations/[^/]+/attachments/([^/]+)")


class UIPart(BaseModel):
    """A part of an AI SDK UI message; text and file parts are read, the others are ignored."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    type: str = Field(min_length=1, max_length=100)
    text: str | None = None
    url: str | None = Field(None, max_length=2048)

    def attachment_id(self) -> str:
        """A file part's attachment, named by its status URL (absolute or a path); ValueError else."""
        found = _ATTACHMENT_PATH.fullmatch(urlsplit(self.url or "").path)
        if not found:
            raise ValueError(FILE_REFUSED)
        return found.group(1)


class UIMessage(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)

    id: str = Field(min_length=1, max_length=MAX_ID_LENGTH)
    role: Literal["system", "user", "assistant"]
    parts: list[UIPart] = Field(max_length=1000)


class UIChatRequest(RequestBody):
    # Unknown fields are ignored rather than refused: the SDK's body may grow, and the caller is never
    # read from a body anyway.
    model_config = RequestBody.model_config | {"extra": "ignore"}

    id: str | None = Field(None, max_length=MAX_ID_LENGTH, description="The SDK's chat id (not used)")
    messages: list[UIMessage] = Field(min_length=1, description="The chat; only the last message is read")
    trigger: Literal["submit-message", "regenerate-message"] = "submit-message"
    message_id: str | None = Field(None, max_length=MAX_ID_LENGTH)
    context_type: str | None = Field(None, max_length=64)
    context: dict[str, Any] | None = None
    metadata: dict[str, str] = Field(default_factory=dict, max_length=MAX_METADATA_ENTRIES)
    attachment_ids: list[str] = Field(default_factory=list, max_length=MAX_PER_TURN)

    @model_validator(mode="after")
    def _last_is_a_user_text(self) -> UIChatRequest:
        last = self.messages[-1]
        if last.role != "user":
            raise ValueError("messages: the last message must be the user's")
        text = self.text()
        if not text.strip():
            raise ValueError("messages: the last message has no text part")
        if len(text) > MAX_MESSAGE_CHARS:
            raise ValueError(f"messages: the last message's text exceeds {MAX_MESSAGE_CHARS} characters")
        files = [part.attachment_id() for part in last.parts if part.type == "file"]
        self.attachment_ids = well_formed_ids([*self.attachment_ids, *files])
        return self

    def text(self) -> str:
        return "".join(p.text or "" for p in self.messages[-1].parts if p.type == "text")

    def chat_request(self) -> ChatRequest:
        return ChatRequest(
            message=self.text(),
            context_type=self.context_type,
            context=self.context,
            metadata=self.metadata,
            client_message_id=self.messages[-1].id,
            attachment_ids=self.attachment_ids,
        )


async def _parts(stream: TurnStream, conversation_id: str) -> AsyncIterator[bytes]:
    translation = UIParts(conversation_id, stream.turn_id)
    for part in translation.start():
        yield encode_part(part)
    async for item in stream.frames():
        if item is None:
            yield comment()
        elif item.event is not None:
            for part in translation.parts(item.event):
                yield encode_part(part)
    yield DONE
    # The client has every part; the body ends (and a Lambda invocation with it) once the turn's log
    # is written and its after-turn work done.
    await stream.finished()


@router.post(
    "/{conversation_id}/ui-stream",
    summary="One turn in the AI SDK UI message stream protocol (v1), for useChat",
    response_class=StreamingResponse,
    responses={200: {"content": event_stream(UI_STREAM)}},
)
async def ui_stream(
    body: UIChatRequest,
    request: Request,
    conversation_id: str = CONVERSATION_ID,
    caller: Caller = Depends(get_owner),
    orchestrator: Orchestrator = Depends(get_orchestrator),
    store: ConversationStore = Depends(get_store),
    settings: Settings = Depends(get_settings),
) -> StreamingResponse:
    # begin() (or revise()) raises 404/409 as plain HTTP errors before the stream starts.
    chat = body.chat_request()
    asked = turn_request(conversation_id, chat, caller, StreamingMode.PROGRESSIVE, request, settings)
    if body.trigger == "regenerate-message":  # the last exchange, answered again (docs/conversations.md)
        question = await last_question(store, conversation_id, caller, chat.message)
        turn = await orchestrator.revise(asked, question, edit=False)
    else:
        turn = await orchestrator.begin(asked)
    stream = services(request).turn_stream(turn)
    stream.start()
    return StreamingResponse(_parts(stream, conversation_id), media_type="text/event-stream", headers=HEADERS)

"""The same turns as …/messages/stream, in the AI SDK UI message stream protocol, for `useChat`
(docs/ui-stream.md).

`POST …/{id}/ui-stream` takes the SDK's chat request (api/ui_request.py) and streams the turn it asks
for: a new question; the last one answered again (`trigger: "regenerate-message"`) or replaced
(`sendMessage` with the id of the last question: an edit) — api/revisions.py; or the continuation
after an approval the client answered. `GET …/{id}/ui-stream` is `useChat({resume: true})`'s
reconnect: 204 while no turn of the conversation runs, else that turn's parts from its start, then
followed live until it ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from rag_orchestrator.api.approvals import decision_request
from rag_orchestrator.api.auth import FOR_ANOTHER_CALLER, check_claimed, get_owner
from rag_orchestrator.api.chat import CONVERSATION_ID, turn_request
from rag_orchestrator.api.deps import get_event_log, get_orchestrator, get_settings, get_store, services
from rag_orchestrator.api.revisions import LAST_QUESTION_WINDOW, last_question
from rag_orchestrator.api.routing import Depends, Router
from rag_orchestrator.api.sse import UI_STREAM, comment, event_stream
from rag_orchestrator.api.stream_control import relayed
from rag_orchestrator.api.ui_parts import DONE, HEADERS, UIParts, encode_part
from rag_orchestrator.api.ui_request import UIChatRequest
from rag_orchestrator.config import Settings
from rag_orchestrator.conversations.store import ConversationStore
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.events import stream_event_adapter
from rag_orchestrator.domain.messages import Role
from rag_orchestrator.loop.orchestrator import Orchestrator
from rag_orchestrator.loop.turn import Turn
from rag_orchestrator.loop.turn_stream import TurnStream
from rag_orchestrator.providers.events import StreamingMode
from rag_orchestrator.stream_log.follow import follow
from rag_orchestrator.stream_log.log import EventLog, LoggedEvent

router = Router(prefix="/api/v1/chat/conversations", tags=["chat"])
STREAMED: dict[int | str, dict[str, Any]] = {200: {"content": event_stream(UI_STREAM)}}


async def _parts(stream: TurnStream, translation: UIParts) -> AsyncIterator[bytes]:
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
    responses={**STREAMED, **FOR_ANOTHER_CALLER},
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
    # Every claim raises its 403/404/409/429 as a plain HTTP error before the stream starts.
    check_claimed(body.caller_id, caller)
    answered = body.answered()
    if answered is not None:
        asked = decision_request(request, conversation_id, caller, settings)
        turn = await orchestrator.decide(asked, answered.approval_id, answered.decision, answered.reason)
        decided = turn.record.decided
        assert decided is not None  # a continuation acts on its decision
        # The client goes on with the message that holds the call: no id of ours replaces its own.
        translation = UIParts(conversation_id, turn.turn_id, continues=decided.held.tool_call_id)
    else:
        turn = await _begin(body, request, conversation_id, caller, orchestrator, store, settings)
        translation = UIParts(conversation_id, turn.turn_id, message_id=turn.turn_id)
    stream = services(request).turn_stream(turn)
    stream.start()
    return StreamingResponse(_parts(stream, translation), media_type="text/event-stream", headers=HEADERS)


async def _begin(
    body: UIChatRequest,
    request: Request,
    conversation_id: str,
    caller: Caller,
    orchestrator: Orchestrator,
    store: ConversationStore,
    settings: Settings,
) -> Turn:
    """A new question's turn, or a revision of the last exchange (regenerate, edit)."""
    chat = body.chat_request()
    asked = turn_request(conversation_id, chat, caller, StreamingMode.PROGRESSIVE, request, settings)
    if body.trigger == "regenerate-message":  # the last exchange, answered again (docs/conversations.md)
        question = await last_question(store, conversation_id, caller, chat.message)
        return await orchestrator.revise(asked, question, edit=False)
    if body.edits and (sent := await _sent_as(store, conversation_id, caller, body.messages[-1].id)):
        return await orchestrator.revise(asked, sent, edit=True)
    return await orchestrator.begin(asked)


async def _sent_as(
    store: ConversationStore, conversation_id: str, caller: Caller, client_id: str
) -> str | None:
    """The id of the recent question the client sent as `client_id`; None when there is none."""
    await store.get(conversation_id, caller.caller_id)  # a 404 first: another caller learns nothing
    for message in reversed(await store.window(conversation_id, LAST_QUESTION_WINDOW)):
        if message.role is Role.USER and message.client_message_id == client_id:
            return message.message_id
    return None


@router.get(
    "/{conversation_id}/ui-stream",
    summary="Resume useChat: the running turn's parts from its start, then followed until it ends",
    response_class=StreamingResponse,
    responses={**STREAMED, 204: {"description": "No turn of this conversation is running"}},
)
async def resume_ui_stream(
    conversation_id: str = CONVERSATION_ID,
    caller: Caller = Depends(get_owner),
    store: ConversationStore = Depends(get_store),
    log: EventLog = Depends(get_event_log),
    settings: Settings = Depends(get_settings),
) -> Response:
    await store.get(conversation_id, caller.caller_id)  # 404 for a conversation not the caller's
    entry = await log.running(conversation_id, caller.caller_id)
    if entry is None:
        return Response(status_code=204)
    events = follow(
        log,
        entry,
        0,
        poll_seconds=settings.stream_log_flush_ms / 1000,
        margin_seconds=settings.turn_deadline_margin_seconds,
    )
    translation = UIParts(conversation_id, entry.turn_id, message_id=entry.turn_id)
    body = _replayed(translation, events, settings.sse_keepalive_seconds)
    return StreamingResponse(body, media_type="text/event-stream", headers=HEADERS)


async def _replayed(
    translation: UIParts, events: AsyncIterator[LoggedEvent], keepalive_seconds: float
) -> AsyncIterator[bytes]:
    for part in translation.start():
        yield encode_part(part)
    async for item in relayed(events, keepalive_seconds):
        if item is None:
            yield comment()
            continue
        for part in translation.parts(stream_event_adapter.validate_json(item.data)):
            yield encode_part(part)
    yield DONE

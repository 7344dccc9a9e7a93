"""Conversation endpoints (docs/conversations.md): create, list (by words of the title, the userId and
a createdAt range too), get, rename or make temporary (PATCH), read messages (every version with
?versions=all), soft delete.

Every route acts for the authenticated caller only (a signed-in caller or a guest): another caller's
conversation answers 404, exactly like a missing one. DELETE answers 204 with no body; a second DELETE
answers 404. It also removes the conversation's fragments from conversation memory (docs/retrieval.md).
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from enum import StrEnum
from typing import Literal

from fastapi import APIRouter, Depends, Query, Response

from rag_orchestrator.api.auth import FOR_ANOTHER_CALLER, check_claimed, get_owner
from rag_orchestrator.api.deps import get_memory, get_shares_or_none, get_store
from rag_orchestrator.api.id_params import conversation_id
from rag_orchestrator.conversations.cursors import MAX_CURSOR_CHARS
from rag_orchestrator.conversations.listing import Listing
from rag_orchestrator.conversations.paging import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from rag_orchestrator.conversations.store import ConversationStore
from rag_orchestrator.conversations.titles import MAX_QUERY_CHARS, query_words
from rag_orchestrator.domain.base import in_utc
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import (
    MAX_ID_LENGTH,
    ConversationResponse,
    ConversationStatus,
    CreateConversationRequest,
    MessageResponse,
    Page,
    UpdateConversationRequest,
    new_conversation,
)
from rag_orchestrator.domain.text import PlainLabel
from rag_orchestrator.errors import BadRequest
from rag_orchestrator.lifecycle.sharing import Shares
from rag_orchestrator.observability import logger
from rag_orchestrator.retrieval.fragments import FragmentIndex

router = APIRouter(prefix="/api/v1/chat/conversations", tags=["conversations"])


class ListedStatus(StrEnum):
    """Statuses a listing can filter on; DELETED conversations are never listed."""

    ACTIVE = "ACTIVE"
    ARCHIVED = "ARCHIVED"


LIMIT = Query(DEFAULT_PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE, description="Page size")
CURSOR = Query(None, min_length=1, max_length=MAX_CURSOR_CHARS, description="nextCursor of the previous page")


@router.post(
    "",
    status_code=201,
    response_model=ConversationResponse,
    summary="Start a conversation",
    responses=FOR_ANOTHER_CALLER,
)
async def create_conversation(
    body: CreateConversationRequest,
    caller: Caller = Depends(get_owner),
    store: ConversationStore = Depends(get_store),
) -> ConversationResponse:
    check_claimed(body.caller_id, caller)
    conversation, first = new_conversation(body, caller.caller_id)
    return ConversationResponse.of(await store.create(conversation, first))


@router.get("", response_model=Page[ConversationResponse], summary="The caller's conversations, newest first")
async def list_conversations(
    limit: int = LIMIT,
    status: ListedStatus | None = Query(None),
    cursor: str | None = CURSOR,
    q: str | None = Query(
        None,
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="Words of the title: each must begin a word of it, case and accents aside",
    ),
    user_id: PlainLabel | None = Query(
        None,
        alias="userId",
        min_length=1,
        max_length=MAX_ID_LENGTH,
        description="The userId it was created with",
    ),
    created_from: datetime | None = Query(
        None, alias="from", description="Created at or after (ISO 8601; without an offset, UTC)"
    ),
    created_to: datetime | None = Query(
        None, alias="to", description="Created at or before (ISO 8601; without an offset, UTC)"
    ),
    caller: Caller = Depends(get_owner),
    store: ConversationStore = Depends(get_store),
) -> Page[ConversationResponse]:
    where = Listing(
        status=ConversationStatus(status) if status else None,
        title_words=tuple(query_words(q)) if q is not None else (),
        user_id=user_id,
        created_from=in_utc(created_from) if created_from else None,
        created_to=in_utc(created_to) if created_to else None,
    )
    if where.created_from and where.created_to and where.created_from > where.created_to:
        raise BadRequest("from is after to")
    page = await store.list_by_caller(caller.caller_id, limit=limit, cursor=cursor, where=where)
    return Page(items=[ConversationResponse.of(c) for c in page.items], next_cursor=page.next_cursor)


@router.get("/{conversation_id}", response_model=ConversationResponse, summary="One conversation")
async def get_conversation(
    conversation_id: str = Depends(conversation_id),
    caller: Caller = Depends(get_owner),
    store: ConversationStore = Depends(get_store),
) -> ConversationResponse:
    return ConversationResponse.of(await store.get(conversation_id, caller.caller_id))


@router.patch(
    "/{conversation_id}",
    response_model=ConversationResponse,
    summary="Rename, replace metadata, or make it a temporary chat",
)
async def update_conversation(
    body: UpdateConversationRequest,
    conversation_id: str = Depends(conversation_id),
    caller: Caller = Depends(get_owner),
    store: ConversationStore = Depends(get_store),
    memory: FragmentIndex | None = Depends(get_memory),
) -> ConversationResponse:
    """`"memory": false` also forgets what was remembered of it: nothing of a temporary chat is."""
    updated = await store.update(
        conversation_id, caller.caller_id, title=body.title, metadata=body.metadata, memory=body.memory
    )
    if body.memory is False and memory is not None:
        await _forget(memory, conversation_id)
    return ConversationResponse.of(updated)


@router.get(
    "/{conversation_id}/messages",
    response_model=Page[MessageResponse],
    summary="The transcript, oldest first (also for archived conversations)",
)
async def list_messages(
    conversation_id: str = Depends(conversation_id),
    limit: int = LIMIT,
    cursor: str | None = CURSOR,
    versions: Literal["latest", "all"] = Query(
        "latest", description="all: earlier versions too, in place, each with supersededBy"
    ),
    caller: Caller = Depends(get_owner),
    store: ConversationStore = Depends(get_store),
) -> Page[MessageResponse]:
    page = await store.messages(
        conversation_id, caller.caller_id, limit=limit, cursor=cursor, all_versions=versions == "all"
    )
    return Page(items=[MessageResponse.of(m) for m in page.items], next_cursor=page.next_cursor)


@router.delete("/{conversation_id}", status_code=204, response_class=Response, summary="Soft delete")
async def delete_conversation(
    conversation_id: str = Depends(conversation_id),
    caller: Caller = Depends(get_owner),
    store: ConversationStore = Depends(get_store),
    memory: FragmentIndex | None = Depends(get_memory),
    shares: Shares | None = Depends(get_shares_or_none),
) -> Response:
    await store.soft_delete(conversation_id, caller.caller_id)
    if shares is not None:  # a share of a deleted conversation reads as 404 already; this removes them
        await asyncio.to_thread(shares.revoke_all, conversation_id)
    if memory is not None:
        await _forget(memory, conversation_id)
    return Response(status_code=204)


async def _forget(memory: FragmentIndex, conversation_id: str) -> None:
    """Remove the conversation's fragments now; if Chroma fails, the purge of the deleted conversation will."""
    try:
        await asyncio.to_thread(memory.forget_conversation, conversation_id)
    except Exception as exc:
        logger.warning(
            "conversation fragments not removed now (a deleted one's go with its purge)",
            extra={"conversation_id": conversation_id, "error_type": type(exc).__name__},
        )

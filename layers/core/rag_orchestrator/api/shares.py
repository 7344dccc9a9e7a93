"""Sharing a conversation (docs/privacy.md): the owner creates and revokes; anyone with the link reads
the snapshot as of sharing, without auth."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends, Path, Request, Response

from rag_orchestrator.api.auth import get_owner
from rag_orchestrator.api.deps import get_store, services
from rag_orchestrator.api.id_params import conversation_id
from rag_orchestrator.api.path_ids import is_uuid
from rag_orchestrator.conversations.paging import MAX_PAGE_SIZE
from rag_orchestrator.conversations.store import ConversationStore
from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.domain.conversations import ConversationMessage
from rag_orchestrator.errors import StorageUnavailable
from rag_orchestrator.lifecycle.sharing import ShareNotFound, Shares

router = APIRouter(prefix="/api/v1", tags=["sharing"])


class ShareCreated(CamelModel):
    share_id: str
    url: str


class SharedMessage(CamelModel):
    role: str
    content: str
    created_at: str
    sources: list[str]  # the citations of an answer, `documentId#chunkIndex`


class SharedConversation(CamelModel):
    share_id: str
    title: str | None = None
    shared_at: str
    messages: list[SharedMessage]


def get_shares(request: Request) -> Shares:
    shares = services(request).shares
    if shares is None:
        raise StorageUnavailable("Sharing needs CONVERSATION_STORAGE=dynamodb")
    return shares


def checked_share(share_id: str = Path(..., max_length=100)) -> str:
    if not is_uuid(share_id):
        raise ShareNotFound(f"Share not found: {share_id}")
    return share_id


@router.post(
    "/chat/conversations/{conversation_id}/shares",
    status_code=201,
    response_model=ShareCreated,
    summary="Share a conversation: a read-only snapshot as of now",
)
async def create_share(
    request: Request,
    conversation_id: str = Depends(conversation_id),
    caller: Caller = Depends(get_owner),
    store: ConversationStore = Depends(get_store),
    shares: Shares = Depends(get_shares),
) -> ShareCreated:
    conversation = await store.get(conversation_id, caller.caller_id)
    messages: list[ConversationMessage] = []
    cursor: str | None = None
    while True:  # every page: archived ones are read whole from S3 anyway
        page = await store.messages(conversation_id, caller.caller_id, limit=MAX_PAGE_SIZE, cursor=cursor)
        messages += page.items
        if not (cursor := page.next_cursor):
            break
    share_id = await asyncio.to_thread(shares.create, conversation, messages)
    return ShareCreated(share_id=share_id, url=str(request.url_for("read_share", share_id=share_id)))


@router.delete(
    "/chat/conversations/{conversation_id}/shares/{share_id}",
    status_code=204,
    response_class=Response,
    summary="Revoke a share",
)
async def revoke_share(
    conversation_id: str = Depends(conversation_id),
    share_id: str = Depends(checked_share),
    caller: Caller = Depends(get_owner),
    store: ConversationStore = Depends(get_store),
    shares: Shares = Depends(get_shares),
) -> Response:
    await store.get(conversation_id, caller.caller_id)  # the owner's, else 404
    await asyncio.to_thread(shares.revoke, conversation_id, share_id)
    return Response(status_code=204)


@router.get(
    "/shared/{share_id}",
    response_model=SharedConversation,
    responses={
        404: {"description": "No such share, revoked, or its conversation deleted"},
        503: {"description": "The snapshot could not be read"},
    },
    summary="A shared conversation (no auth)",
)
async def read_share(
    share_id: str = Depends(checked_share), shares: Shares = Depends(get_shares)
) -> SharedConversation:
    return SharedConversation.model_validate(await asyncio.to_thread(shares.read, share_id))

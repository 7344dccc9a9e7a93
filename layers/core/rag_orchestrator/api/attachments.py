"""Attachment endpoints (docs/attachments.md): create one with its presigned upload, read its status.

The file itself never passes through the API: the app POSTs it straight to S3 with the form it gets.
A conversation or attachment of another caller, or of another conversation, answers 404.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path

from rag_orchestrator.api.auth import get_owner
from rag_orchestrator.api.deps import get_attachments, get_store
from rag_orchestrator.api.id_params import conversation_id
from rag_orchestrator.attachments.service import Attachments
from rag_orchestrator.conversations.store import ConversationStore
from rag_orchestrator.domain.attachments import (
    ATTACHMENT_ID,
    AttachmentResponse,
    CreateAttachmentRequest,
    CreatedAttachment,
)
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.errors import AttachmentNotFound

router = APIRouter(prefix="/api/v1/chat/conversations", tags=["attachments"])


def attachment_id(attachment_id: str = Path(..., max_length=100)) -> str:
    """A well-formed id, else the same 404 as for an unknown one."""
    value = attachment_id.lower()
    if not ATTACHMENT_ID.fullmatch(value):
        raise AttachmentNotFound(attachment_id)
    return value


@router.post(
    "/{conversation_id}/attachments",
    status_code=201,
    response_model=CreatedAttachment,
    summary="Declare an attachment; returns the presigned S3 POST that uploads it",
)
async def create_attachment(
    body: CreateAttachmentRequest,
    conversation_id: str = Depends(conversation_id),
    caller: Caller = Depends(get_owner),
    store: ConversationStore = Depends(get_store),
    attachments: Attachments = Depends(get_attachments),
) -> CreatedAttachment:
    # 404 for a missing or another caller's conversation
    conversation = await store.get(conversation_id, caller.caller_id)
    return await attachments.create(caller.caller_id, conversation_id, body, remembered=conversation.memory)


@router.get(
    "/{conversation_id}/attachments/{attachment_id}",
    response_model=AttachmentResponse,
    summary="An attachment's status and the segments read from it",
)
async def get_attachment(
    conversation_id: str = Depends(conversation_id),
    attachment_id: str = Depends(attachment_id),
    caller: Caller = Depends(get_owner),
    store: ConversationStore = Depends(get_store),
    attachments: Attachments = Depends(get_attachments),
) -> AttachmentResponse:
    await store.get(conversation_id, caller.caller_id)
    return AttachmentResponse.of(await attachments.get(caller.caller_id, conversation_id, attachment_id))

"""GET /api/v1/admin/audit: a conversation's audit records, the hash chain checked (docs/audit.md).

For the roles `admin` and `mod` only (403 for every other caller), about any caller's conversation,
deleted or archived ones included while their records are kept.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query

from rag_orchestrator.api.auth import require_roles
from rag_orchestrator.api.conversations import CURSOR, LIMIT
from rag_orchestrator.api.deps import get_store
from rag_orchestrator.api.path_ids import checked_id
from rag_orchestrator.conversations.store import AuditStore
from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.domain.callers import ADMIN, MOD, Caller

router = APIRouter(tags=["audit"])
AUDITORS = (ADMIN, MOD)


class AuditResponse(CamelModel):
    records: list[dict[str, Any]]  # as stored: camelCase fields, `prevHash` and `hash` included
    chain_valid: bool  # every record up to this page's last checks out (on the last page: all of them)
    next_cursor: str | None = None


@router.get(
    "/api/v1/admin/audit",
    response_model=AuditResponse,
    summary="A conversation's audit records",
    responses={404: {"description": "No such conversation, or none of its records are kept"}},
)
async def read_audit(
    conversation_id: str = Query(..., alias="conversationId", min_length=1, max_length=100),
    limit: int = LIMIT,
    cursor: str | None = CURSOR,
    caller: Caller = Depends(require_roles(lambda settings: AUDITORS)),
    store: AuditStore = Depends(get_store),
) -> AuditResponse:
    """Oldest first. `chainValid` is false once a record was altered or removed."""
    trail = await store.audit(checked_id(conversation_id), limit=limit, cursor=cursor)
    return AuditResponse(records=trail.records, chain_valid=trail.chain_valid, next_cursor=trail.next_cursor)

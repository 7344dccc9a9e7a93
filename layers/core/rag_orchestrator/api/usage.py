"""GET /api/v1/usage: the caller's tokens today against its budget (docs/usage.md)."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Depends

from rag_orchestrator.api.auth import get_owner
from rag_orchestrator.api.deps import get_settings, get_store
from rag_orchestrator.config import Settings
from rag_orchestrator.conversations.store import UsageStore
from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.domain.budgets import Spend, next_midnight
from rag_orchestrator.domain.callers import Caller

router = APIRouter(prefix="/api/v1", tags=["usage"])


class UsageResponse(CamelModel):
    tokens_used: int
    tokens_limit: int | None  # null: unlimited
    resets_at: datetime  # the next UTC midnight


@router.get("/usage", response_model=UsageResponse, summary="The caller's tokens today, and its daily budget")
async def usage(
    caller: Caller = Depends(get_owner),
    store: UsageStore = Depends(get_store),
    settings: Settings = Depends(get_settings),
) -> UsageResponse:
    now = datetime.now(UTC)
    spend = Spend.today(caller, settings.budgets, 0, now)
    used = await store.usage(caller.caller_id, spend.day) if settings.budgets.configured else 0
    return UsageResponse(tokens_used=used, tokens_limit=spend.limit, resets_at=next_midnight(now))

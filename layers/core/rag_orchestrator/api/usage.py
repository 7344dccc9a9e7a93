"""GET /api/v1/usage: the caller's tokens today against its budget; GET /api/v1/admin/usage: what every
caller spent, for admins (docs/usage.md)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict, Field, model_validator

from rag_orchestrator.api.auth import get_owner, require_roles
from rag_orchestrator.api.deps import get_settings, get_store
from rag_orchestrator.config import Settings
from rag_orchestrator.conversations.store import UsageStore
from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.domain.budgets import Spend, next_midnight
from rag_orchestrator.domain.callers import ADMIN, Caller
from rag_orchestrator.domain.usage import GroupBy, UsageReport, build_report

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
    used = await store.usage(caller.caller_id, spend.day) if settings.budgets.counts(caller) else 0
    return UsageResponse(tokens_used=used, tokens_limit=spend.limit, resets_at=next_midnight(now))


MAX_DAYS = 92  # the report queries one day partition after another


class UsageQuery(BaseModel):
    """The report's query: UTC days, `from` and `to` inclusive (default: this month so far)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: date | None = Field(None, alias="from", description="YYYY-MM-DD; default: the 1st of `to`'s month")
    to: date | None = Field(None, description="YYYY-MM-DD, inclusive; default: today (UTC)")
    group_by: GroupBy = Field("caller", alias="groupBy")

    @model_validator(mode="after")
    def _check_range(self) -> UsageQuery:
        last = self.to or datetime.now(UTC).date()
        first = self.from_ or last.replace(day=1)
        if first > last:
            raise ValueError("`from` must not be after `to`")
        if (last - first).days >= MAX_DAYS:
            raise ValueError(f"the report covers at most {MAX_DAYS} days")
        self.from_, self.to = first, last
        return self


@router.get(
    "/admin/usage",
    response_model=UsageReport,
    summary="Turns, tool calls, tokens and estimated cost per caller, day or model",
)
async def usage_report(
    query: Annotated[UsageQuery, Query()],
    caller: Caller = Depends(require_roles(lambda settings: (ADMIN,))),
    store: UsageStore = Depends(get_store),
    settings: Settings = Depends(get_settings),
) -> UsageReport:
    """Callers and models by estimated cost, highest first; days in order. Cost is priced per model
    with MODEL_PRICES; models without a price count 0 and are listed in `unpricedModels`."""
    assert query.from_ is not None and query.to is not None  # set by the check
    lines = await store.usage_lines(query.from_, query.to)
    return build_report(lines, query.group_by, settings.prices, query.from_, query.to)

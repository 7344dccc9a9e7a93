"""A caller's data as a whole (docs/privacy.md): erase oneself, an admin erases anyone, the erasure's status.

Erasure runs in LifecycleFunction (or a thread under `make dev`), not in the request: 202 at once.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request

from rag_orchestrator.api.auth import get_owner, require_roles
from rag_orchestrator.api.deps import services
from rag_orchestrator.api.path_ids import is_uuid
from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.domain.callers import ADMIN, Caller
from rag_orchestrator.domain.text import PlainLabel
from rag_orchestrator.lifecycle.export import ExportNotFound
from rag_orchestrator.lifecycle.jobs import ErasureNotFound
from rag_orchestrator.lifecycle.service import Lifecycle

router = APIRouter(prefix="/api/v1", tags=["lifecycle"])
admin = require_roles(lambda settings: (ADMIN,))
ACCEPTED: dict[int | str, dict[str, Any]] = {
    202: {"description": "Started, or joined to the caller's erasure already running"}
}


class ErasureAccepted(CamelModel):
    erasure_id: str


class ErasureStatus(CamelModel):
    erasure_id: str
    status: str  # RUNNING | COMPLETED
    requested_at: datetime
    updated_at: datetime | None = None
    completed_at: datetime | None = None
    actor_ref: str  # the erased caller's pseudonym, as the audit records name it
    requested_by: dict[str, Any]  # {actorRef, roles} of who asked
    counts: dict[str, int]  # per store: dynamodb, s3, chroma (items removed), auditRecords, conversations


def get_lifecycle(request: Request) -> Lifecycle:
    return services(request).lifecycle


@router.delete("/me", status_code=202, response_model=ErasureAccepted, responses=ACCEPTED, summary="Erase me")
async def erase_me(
    caller: Caller = Depends(get_owner), lifecycle: Lifecycle = Depends(get_lifecycle)
) -> ErasureAccepted:
    """Every conversation, attachment, memory fragment, share, export and counter of the caller."""
    started = await _erase(lifecycle, caller.caller_id, caller)
    return ErasureAccepted(erasure_id=started)


class ExportAccepted(CamelModel):
    export_id: str


class ExportStatus(CamelModel):
    export_id: str
    status: str  # RUNNING | READY
    requested_at: datetime
    ready_at: datetime | None = None
    url: str | None = None  # once READY: a presigned GET of the JSON document
    expires_in: int | None = None  # the URL's seconds (3600)


@router.post("/me/exports", status_code=202, response_model=ExportAccepted, summary="Export my data")
async def export_me(
    caller: Caller = Depends(get_owner), lifecycle: Lifecycle = Depends(get_lifecycle)
) -> ExportAccepted:
    """One JSON document of everything about the caller, built in LifecycleFunction."""
    return ExportAccepted(export_id=await asyncio.to_thread(lifecycle.export, caller.caller_id))


@router.get(
    "/me/exports/{export_id}",
    response_model=ExportStatus,
    responses={404: {"description": "No such export of the caller's"}},
    summary="An export's status, and its URL once ready",
)
async def export_status(
    export_id: str = Path(..., max_length=100),
    caller: Caller = Depends(get_owner),
    lifecycle: Lifecycle = Depends(get_lifecycle),
) -> ExportStatus:
    if not is_uuid(export_id):
        raise ExportNotFound(f"Export not found: {export_id}")
    found = await asyncio.to_thread(lifecycle.export_status, export_id, caller.caller_id)
    return ExportStatus.model_validate(found)


@router.delete(
    "/admin/callers/{caller_id}",
    status_code=202,
    response_model=ErasureAccepted,
    responses=ACCEPTED,
    summary="Erase a caller",
)
async def erase_caller(
    caller_id: Annotated[PlainLabel, Path(min_length=1, max_length=256)],
    caller: Caller = Depends(admin),
    lifecycle: Lifecycle = Depends(get_lifecycle),
) -> ErasureAccepted:
    """For `admin` only. An unknown caller is erased all the same: the job finds nothing."""
    return ErasureAccepted(erasure_id=await _erase(lifecycle, caller_id, caller))


@router.get(
    "/admin/erasures/{erasure_id}",
    response_model=ErasureStatus,
    responses={404: {"description": "No such erasure"}},
    summary="An erasure's status and counts",
)
async def erasure_status(
    erasure_id: str = Path(..., max_length=100),
    caller: Caller = Depends(admin),
    lifecycle: Lifecycle = Depends(get_lifecycle),
) -> ErasureStatus:
    if not is_uuid(erasure_id):
        raise ErasureNotFound(f"Erasure not found: {erasure_id}")
    job = await _in_thread(lifecycle.erasure, erasure_id)
    return ErasureStatus.model_validate(job)


async def _erase(lifecycle: Lifecycle, caller_id: str, requester: Caller) -> str:
    started = await _in_thread(lifecycle.erase, caller_id, requester)
    return started.erasure_id


async def _in_thread(function: Any, *args: Any) -> Any:
    return await asyncio.to_thread(function, *args)

"""POST /api/v1/auth/guest: a guest token for chatting without signing in (ALLOW_ANONYMOUS=true).

No credentials are needed, and none are looked at. With ALLOW_ANONYMOUS=false the route answers
404, like a route that does not exist. One source address gets at most GUEST_MINTS_PER_HOUR tokens
an hour (api/guest_limits.py); each guest spends at most GUEST_TOKENS_PER_DAY (docs/usage.md).
"""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Depends, Request

from rag_orchestrator.api.deps import get_settings, get_window_counter
from rag_orchestrator.config import Settings
from rag_orchestrator.conversations.window_counters import WindowCounter
from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.errors import NotFound

router = APIRouter(tags=["auth"])


class GuestToken(CamelModel):
    token: str  # send it back as `Authorization: Bearer <token>`
    expires_at: datetime


@router.post(
    "/api/v1/auth/guest",
    status_code=201,
    response_model=GuestToken,
    summary="A guest token",
    responses={
        404: {"description": "ALLOW_ANONYMOUS=false: there are no guests"},
        429: {"description": "This address has minted GUEST_MINTS_PER_HOUR guest tokens this hour"},
        503: {"description": "The mint count cannot be kept just now (storage)"},
    },
)
async def create_guest(
    request: Request,
    settings: Settings = Depends(get_settings),
    counter: WindowCounter = Depends(get_window_counter),
) -> GuestToken:
    """A new guest: its own conversations, no tools, for GUEST_TTL_HOURS."""
    if not settings.allow_anonymous:
        raise NotFound(f"No route for {request.method} {request.url.path}")
    from rag_orchestrator.api.guest_limits import check_mint
    from rag_orchestrator.api.guest_tokens import issue_guest_token

    await check_mint(counter, request, settings.guest_mints_per_hour)

    token, expires = issue_guest_token(settings)
    return GuestToken(token=token, expires_at=datetime.fromtimestamp(expires, UTC))

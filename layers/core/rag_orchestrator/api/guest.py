"""POST /api/v1/auth/guest: a guest token for chatting without signing in (ALLOW_ANONYMOUS=true).

No credentials are needed, and none are looked at. With ALLOW_ANONYMOUS=false the route answers
404, like a route that does not exist.
"""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Depends, Request

from rag_orchestrator.api.deps import get_settings
from rag_orchestrator.config import Settings
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
    responses={404: {"description": "ALLOW_ANONYMOUS=false: there are no guests"}},
)
async def create_guest(request: Request, settings: Settings = Depends(get_settings)) -> GuestToken:
    """A new guest: its own conversations, no tools, for GUEST_TTL_HOURS."""
    if not settings.allow_anonymous:
        raise NotFound(f"No route for {request.method} {request.url.path}")
    from rag_orchestrator.api.guest_tokens import issue_guest_token

    token, expires = issue_guest_token(settings)
    return GuestToken(token=token, expires_at=datetime.fromtimestamp(expires, UTC))

"""Who is calling: the authenticated principal, never a body field."""

from __future__ import annotations

from fastapi import Depends, Request

from rag_orchestrator.api.deps import get_settings
from rag_orchestrator.config import Settings
from rag_orchestrator.domain.callers import ANONYMOUS_CALLER, DEFAULT_ROLE, Caller
from rag_orchestrator.errors import Unauthorized


def _split_roles(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        items = value.replace(" ", ",").split(",") if "[" not in value else value.strip("[]").split(" ")
    elif isinstance(value, (list, tuple)):
        items = [str(v) for v in value]
    else:
        items = []
    roles = tuple(dict.fromkeys(r.strip() for r in items if r.strip()))
    return roles or (DEFAULT_ROLE,)


def _dev_caller(request: Request) -> Caller | None:
    caller_id = (request.headers.get("x-caller-id") or "").strip()
    if not caller_id:
        return None
    if len(caller_id) > 128:
        raise Unauthorized("X-Caller-Id is too long")
    return Caller(caller_id, _split_roles(request.headers.get("x-caller-roles", DEFAULT_ROLE)))


def _authorizer_claims(request: Request) -> dict | None:
    """Claims API Gateway's JWT authorizer already verified (Mangum passes the event along)."""
    event = request.scope.get("aws.event") or {}
    jwt = ((event.get("requestContext") or {}).get("authorizer") or {}).get("jwt") or {}
    return jwt.get("claims") or None


def caller_from_claims(claims: dict, settings: Settings) -> Caller:
    caller_id = claims.get(settings.caller_id_claim)
    if not caller_id or not isinstance(caller_id, str):
        raise Unauthorized(f"Token has no {settings.caller_id_claim} claim")
    return Caller(caller_id, _split_roles(claims.get(settings.roles_claim, DEFAULT_ROLE)))


def _jwt_caller(request: Request, settings: Settings) -> Caller | None:
    claims = _authorizer_claims(request)
    if claims:
        return caller_from_claims(claims, settings)
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if not token or scheme.lower() != "bearer":
        return None
    from rag_orchestrator.api.jwt_verifier import verify_token

    return caller_from_claims(verify_token(token.strip(), settings), settings)


def resolve_caller(request: Request, settings: Settings) -> Caller | None:
    if settings.auth_mode == "dev":
        return _dev_caller(request)
    return _jwt_caller(request, settings)


def get_caller(request: Request, settings: Settings = Depends(get_settings)) -> Caller:
    """The caller, or the anonymous caller when allowed; 401 otherwise."""
    caller = resolve_caller(request, settings)
    if caller is not None:
        return caller
    if settings.allow_anonymous:
        return ANONYMOUS_CALLER
    raise Unauthorized("Authentication required")

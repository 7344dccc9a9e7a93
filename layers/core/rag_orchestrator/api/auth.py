"""Who is calling: the authenticated principal, never a body field (docs/auth.md).

A guest token (`Authorization: Bearer`, signed by this service) is accepted in every AUTH_MODE when
ALLOW_ANONYMOUS=true; otherwise the caller is the `X-Caller-Id` header (AUTH_MODE=dev, with its
claims in `X-Caller-Claims`) or the identity provider's JWT (AUTH_MODE=jwt: claims API Gateway's
authorizer verified, else verified here). A request with no credentials at all is the shared
anonymous caller when ALLOW_ANONYMOUS=true — answers without tools, no conversations — and a 401
otherwise. A bearer token over MAX_TOKEN_BYTES is refused before any of it is parsed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, cast

from starlette.requests import Request

from rag_orchestrator.api.deps import get_settings
from rag_orchestrator.config import Settings
from rag_orchestrator.domain.callers import (
    ANONYMOUS_CALLER,
    ASKING,
    DEFAULT_ROLE,
    Caller,
    is_guest,
    refused_anonymous,
)
from rag_orchestrator.domain.text import caller_id_problem, printable_ascii
from rag_orchestrator.errors import Forbidden, Unauthorized

MAX_TOKEN_BYTES = 8 * 1024  # larger bearer tokens are refused unread (no identity provider issues them)
MAX_DEV_CLAIMS_BYTES = 8 * 1024
_CALLER = "rag_orchestrator.caller"  # where a request keeps its caller, once found


def _split_roles(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        items = value.replace(" ", ",").split(",") if "[" not in value else value.strip("[]").split(" ")
    elif isinstance(value, (list, tuple)):
        items = [str(v) for v in value]
    else:
        items = []
    roles = tuple(dict.fromkeys(r.strip() for r in items if r.strip()))
    return roles or (DEFAULT_ROLE,)


def _identified(
    caller_id: str, roles: object, claims: Mapping[str, Any] | None = None, token: str | None = None
) -> Caller:
    """A signed-in caller; the guest id space belongs to guest tokens alone."""
    if is_guest(caller_id):
        raise Unauthorized("This caller id is reserved for guests")
    return Caller(caller_id, _split_roles(roles), dict(claims or {}), token)


def _dev_claims(request: Request) -> dict[str, Any]:
    """X-Caller-Claims: the dev caller's token claims, a JSON object (pinned tool parameters read them)."""
    raw = request.headers.get("x-caller-claims")
    if not raw:
        return {}
    if len(raw) > MAX_DEV_CLAIMS_BYTES:
        raise Unauthorized("X-Caller-Claims is too large")
    try:
        claims = json.loads(raw)
    except (ValueError, RecursionError):
        claims = None
    if not isinstance(claims, dict):
        raise Unauthorized("X-Caller-Claims must be a JSON object")
    return claims


def _dev_caller(request: Request) -> Caller | None:
    caller_id = (request.headers.get("x-caller-id") or "").strip()
    if not caller_id:
        return None
    if len(caller_id) > 128:
        raise Unauthorized("X-Caller-Id is too long")
    if not printable_ascii(caller_id):  # no format or control characters, no UTF-8 read as Latin-1
        raise Unauthorized("X-Caller-Id must be printable ASCII")
    return _identified(caller_id, request.headers.get("x-caller-roles", DEFAULT_ROLE), _dev_claims(request))


def _authorizer_claims(request: Request) -> dict | None:
    """Claims API Gateway's JWT authorizer already verified (Mangum passes the event along)."""
    event = request.scope.get("aws.event") or {}
    jwt = ((event.get("requestContext") or {}).get("authorizer") or {}).get("jwt") or {}
    return jwt.get("claims") or None


def caller_from_claims(claims: dict, settings: Settings, token: str | None = None) -> Caller:
    caller_id = claims.get(settings.caller_id_claim)
    if not caller_id or not isinstance(caller_id, str):
        raise Unauthorized(f"Token has no {settings.caller_id_claim} claim")
    if problem := caller_id_problem(caller_id):
        raise Unauthorized(f"Token's {settings.caller_id_claim} claim {problem}: it cannot name a caller")
    return _identified(caller_id, claims.get(settings.roles_claim, DEFAULT_ROLE), claims, token)


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if len(header) > MAX_TOKEN_BYTES + len("Bearer "):
        raise Unauthorized("Bearer token is too large")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip() or None


def _jwt_caller(request: Request, token: str | None, settings: Settings) -> Caller | None:
    claims = _authorizer_claims(request)
    if claims:
        return caller_from_claims(claims, settings, token)
    if not token:
        return None
    from rag_orchestrator.api.jwt_verifier import verify_token

    return caller_from_claims(verify_token(token, settings), settings, token)


def resolve_caller(request: Request, settings: Settings) -> Caller | None:
    token = _bearer(request)
    if token:
        from rag_orchestrator.api.guest_tokens import guest_caller, is_guest_token

        if is_guest_token(token):
            return guest_caller(token, settings)
    if settings.auth_mode == "dev":
        return _dev_caller(request)
    return _jwt_caller(request, token, settings)  # with the token, for tools with identity caller-token


def get_caller(request: Request) -> Caller:
    """The caller, or the anonymous caller when allowed; 401 otherwise. Found once per request (a
    route's other checks of the caller, get_owner or a role, ask again)."""
    known = request.scope.get(_CALLER)
    if known is not None:
        return cast(Caller, known)
    settings = get_settings(request)
    caller = resolve_caller(request, settings)
    if caller is None:
        if not settings.allow_anonymous:
            raise Unauthorized("Authentication required")
        caller = ANONYMOUS_CALLER
    request.scope[_CALLER] = caller
    return caller


def get_owner(request: Request) -> Caller:
    """Conversations belong to someone: a signed-in caller or a guest, never the shared anonymous one."""
    return _someone(request, "to keep conversations")


def get_asker(request: Request) -> Caller:
    """A generated answer is asked by someone: a signed-in caller or a guest, never the shared anonymous
    one, whose model calls nothing would count or limit (docs/auth.md)."""
    return _someone(request, ASKING)


def _someone(request: Request, purpose: str) -> Caller:
    caller = get_caller(request)
    if not caller.someone:
        raise Unauthorized(refused_anonymous(purpose))
    return caller


CALLER_MISMATCH = "callerId names another caller than the authenticated one"
FOR_ANOTHER_CALLER: dict[int | str, dict[str, Any]] = {
    403: {"description": "The body's callerId is not the authenticated caller"}
}


def check_claimed(claimed: str | None, caller: Caller) -> None:
    """A body naming its caller (`callerId`, as older clients send) must name the authenticated one:
    then it is ignored; another one is a 403. The caller is never read from a body."""
    if claimed is not None and claimed != caller.caller_id:
        raise Forbidden(CALLER_MISMATCH)


class RoleCheck:
    """A dependency: the caller, when it has one of the roles `allowed` names; 403 otherwise.
    A class, so the OpenAPI document (api/openapi.py) can tell a route that checks roles."""

    def __init__(self, allowed: Callable[[Settings], tuple[str, ...]]) -> None:
        self.allowed = allowed

    def __call__(self, request: Request) -> Caller:
        caller = get_caller(request)
        roles = self.allowed(get_settings(request))
        if not caller.has_any(roles):
            raise Forbidden(f"This needs one of the roles: {', '.join(roles)}")
        return caller


def require_roles(allowed: Callable[[Settings], tuple[str, ...]]) -> RoleCheck:
    return RoleCheck(allowed)


kb_writer = require_roles(lambda settings: settings.kb_writers)  # who may change the knowledge base

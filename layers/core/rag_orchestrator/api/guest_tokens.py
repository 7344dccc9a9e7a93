"""Guest tokens (ALLOW_ANONYMOUS=true): short-lived HS256 JWTs this service signs and verifies itself.

Each token names a guest of its own, `guest:<128 random bits>`, with the anonymous role, for
GUEST_TTL_HOURS. The key is GUEST_TOKEN_SECRET (from SSM in AWS, where start-up refuses
ALLOW_ANONYMOUS without it); outside Lambda, when it is unset, a random key per process — fine for
the dev server, whose one process both signs and verifies, and nowhere else.
"""

from __future__ import annotations

import secrets
import time
from functools import lru_cache
from typing import Any

import jwt

from rag_orchestrator.config import Settings, in_lambda
from rag_orchestrator.domain.callers import ANONYMOUS, GUEST_PREFIX, Caller
from rag_orchestrator.errors import ConfigError, Unauthorized

ALGORITHM = "HS256"
ISSUER = AUDIENCE = "rag-orchestrator:guest"
LEEWAY_SECONDS = 30


@lru_cache(maxsize=1)
def _process_key() -> str:
    return secrets.token_urlsafe(48)


def _key(settings: Settings) -> str:
    secret = settings.secret("guest_token_secret")
    if secret:
        return secret
    if in_lambda():
        raise ConfigError("GUEST_TOKEN_SECRET is not available")
    return _process_key()


def issue_guest_token(settings: Settings) -> tuple[str, int]:
    """A new guest's token and when it expires (epoch seconds)."""
    now = int(time.time())
    expires = now + settings.guest_ttl_hours * 3600
    claims = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": GUEST_PREFIX + secrets.token_hex(16),
        "iat": now,
        "exp": expires,
    }
    return jwt.encode(claims, _key(settings), algorithm=ALGORITHM), expires


def is_guest_token(token: str) -> bool:
    """Whether a bearer token claims to be a guest token (then only the guest check may accept it)."""
    try:
        header = jwt.get_unverified_header(token)
        claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return False
    return header.get("alg") == ALGORITHM and claims.get("iss") == ISSUER


def guest_caller(token: str, settings: Settings) -> Caller:
    """The guest a token names, once its signature, issuer, audience and expiry check out."""
    if not settings.allow_anonymous:
        raise Unauthorized("Guest access is not enabled")
    try:
        claims = jwt.decode(
            token,
            _key(settings),
            algorithms=[ALGORITHM],
            issuer=ISSUER,
            audience=AUDIENCE,
            leeway=LEEWAY_SECONDS,
            options={"require": ["exp", "iat", "sub"]},
        )
    except jwt.ExpiredSignatureError:
        raise Unauthorized("Guest token expired") from None
    except jwt.PyJWTError:
        raise Unauthorized("Invalid guest token") from None
    subject = claims["sub"]
    if not isinstance(subject, str) or not subject.startswith(GUEST_PREFIX) or len(subject) > 128:
        raise Unauthorized("Invalid guest token")
    return Caller(subject, (ANONYMOUS,))

"""RS256 token verification against the issuer's JWKS (AUTH_MODE=jwt, outside API Gateway's authorizer).

The key set is fetched with httpx once per process and refetched when a token names an unknown
`kid` (a key rotation), at most once every REFRESH_INTERVAL_SECONDS, each fetch bounded by
JWKS_TIMEOUT_SECONDS. A token that does not verify is an Unauthorized with a short message that
never repeats the token; keys that cannot be fetched are the issuer's outage, an IdentityUnavailable
(503 with Retry-After), not the caller's fault.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import jwt

from rag_orchestrator import tls
from rag_orchestrator.config import Settings
from rag_orchestrator.errors import IdentityUnavailable, Unauthorized
from rag_orchestrator.observability import logger

ALGORITHM = "RS256"
LEEWAY_SECONDS = 30
DEFAULT_FETCH_TIMEOUT_SECONDS = 3.0
TOKEN_USES = ("id", "access")


UNAVAILABLE = "The identity provider's token signing keys are unavailable"


class JwksCache:
    """The signing keys of one JWKS URL, by kid."""

    refresh_interval_seconds = 30.0

    def __init__(
        self,
        url: str,
        client: httpx.Client | None = None,
        *,
        timeout_seconds: float = DEFAULT_FETCH_TIMEOUT_SECONDS,
    ) -> None:
        self.url = url
        self._client = client
        self.timeout_seconds = timeout_seconds
        self._keys: dict[str, Any] = {}
        self._fetched_at: float | None = None
        self._failed = False  # the last fetch failed
        self._lock = threading.Lock()

    def key(self, kid: str) -> Any:
        with self._lock:
            if kid not in self._keys and self._may_fetch():
                self._fetch()
            if kid not in self._keys:
                if self._failed:  # not fetched again yet: still the issuer's outage, not a bad token
                    raise IdentityUnavailable(UNAVAILABLE)
                raise Unauthorized("Token signed with an unknown key")
            return self._keys[kid]

    def _may_fetch(self) -> bool:
        return (
            self._fetched_at is None or time.monotonic() - self._fetched_at >= self.refresh_interval_seconds
        )

    def _fetch(self) -> None:
        self._fetched_at, self._failed = time.monotonic(), True
        try:
            if self._client is not None:
                response = self._client.get(self.url)
            else:
                response = httpx.get(self.url, timeout=self.timeout_seconds, verify=tls.verify(self.url))
            response.raise_for_status()
            keys = jwt.PyJWKSet.from_dict(response.json()).keys
        except (httpx.HTTPError, ValueError, jwt.PyJWTError) as exc:
            logger.warning("jwks fetch failed", extra={"error_type": type(exc).__name__, "url": self.url})
            raise IdentityUnavailable(UNAVAILABLE) from None
        self._keys = {k.key_id: k.key for k in keys if k.key_id and k.algorithm_name == ALGORITHM}
        self._failed = False


_caches: dict[str, JwksCache] = {}
_caches_lock = threading.Lock()


def jwks_cache(url: str, timeout_seconds: float = DEFAULT_FETCH_TIMEOUT_SECONDS) -> JwksCache:
    with _caches_lock:
        cache = _caches.get(url)
        if cache is None or cache.timeout_seconds != timeout_seconds:
            cache = _caches[url] = JwksCache(url, timeout_seconds=timeout_seconds)
        return cache


def verify_token(token: str, settings: Settings) -> dict[str, Any]:
    """The token's claims, once its signature, issuer, expiry, audience and use check out."""
    if not settings.jwks_url or not settings.jwt_issuer:
        raise Unauthorized("Token verification is not configured")
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise Unauthorized("Malformed token") from None
    if header.get("alg") != ALGORITHM:
        raise Unauthorized("Token algorithm not accepted")
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise Unauthorized("Token has no key id")
    key = jwks_cache(settings.jwks_url, settings.jwks_timeout_seconds).key(kid)
    try:
        claims = jwt.decode(
            token,
            key,
            algorithms=[ALGORITHM],
            issuer=settings.jwt_issuer,
            leeway=LEEWAY_SECONDS,
            options={"require": ["exp", "iss"], "verify_aud": False},
        )
    except jwt.ExpiredSignatureError:
        raise Unauthorized("Token expired") from None
    except jwt.InvalidIssuerError:
        raise Unauthorized("Token issuer not accepted") from None
    except jwt.PyJWTError:
        raise Unauthorized("Invalid token") from None
    _check_use_and_audience(claims, settings.jwt_audience)
    return claims


def _check_use_and_audience(claims: dict[str, Any], audience: str | None) -> None:
    token_use = claims.get("token_use")
    if token_use is not None and token_use not in TOKEN_USES:
        raise Unauthorized("Token use not accepted")
    if not audience:
        return
    aud = claims.get("aud")
    audiences = aud if isinstance(aud, list) else [aud]
    # Cognito access tokens carry the app client in `client_id` and have no `aud`.
    if audience not in audiences and claims.get("client_id") != audience:
        raise Unauthorized("Token audience not accepted")

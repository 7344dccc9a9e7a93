"""Caller assertions (docs/tools.md, identity): short ES256 JWTs that tell a tool's API who the caller is.

For each call of an HTTP tool with `identity: assertion` (and, later, of other tools that act for a
caller) the service signs `iss` ASSERTION_ISSUER, `aud` the tool's origin, `sub` the caller id,
`roles`, `conversationId`, `tool`, `jti`, `iat` and an `exp` LIFETIME_SECONDS later; the API checks
it against the public key at `GET /.well-known/jwks.json`. The key is the PEM in
ASSERTION_PRIVATE_KEY (in AWS, the secret of that name under TOOL_SECRETS_PREFIX), read again
every KEY_MAX_AGE_SECONDS (a rotation is picked up); outside Lambda with none set, a random key of this signer's own (a
test, a quick start: the process that signs also serves the key set).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from rag_orchestrator.config import Settings, in_lambda
from rag_orchestrator.domain.callers import Caller
from rag_orchestrator.errors import ConfigError
from rag_orchestrator.ssm_params import SecretReader
from rag_orchestrator.tools.base import ToolContext

ALGORITHM = "ES256"
LIFETIME_SECONDS = 60
KEY_MAX_AGE_SECONDS = 300  # as long as SSM parameters are cached (ssm_params.py)
KEY_SETTING = "ASSERTION_PRIVATE_KEY"


@dataclass(frozen=True, slots=True)
class SigningKey:
    pem: str
    private: Any  # cryptography's EllipticCurvePrivateKey
    kid: str  # the RFC 7638 thumbprint of the public key
    jwk: dict[str, str]  # the public key as the key set serves it


def generate_key_pem() -> str:
    """A new P-256 private key as PKCS#8 PEM (`make dev` keeps one under .local/)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def load_key(pem: str) -> SigningKey:
    """The key a PEM holds, with its public JWK; ConfigError unless it is a P-256 private key."""
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import load_pem_private_key
    from jwt.algorithms import ECAlgorithm

    try:
        private = load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        raise ConfigError(f"{KEY_SETTING} is not a PEM private key") from None
    if not isinstance(private, ec.EllipticCurvePrivateKey) or private.curve.name != "secp256r1":
        raise ConfigError(f"{KEY_SETTING} must be an EC P-256 key (ES256)")
    public = json.loads(ECAlgorithm.to_jwk(private.public_key()))
    members = {name: public[name] for name in ("crv", "kty", "x", "y")}
    digest = hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode()).digest()
    kid = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    return SigningKey(pem, private, kid, members | {"kid": kid, "use": "sig", "alg": ALGORITHM})


def origin(url: str) -> str:
    """`https://api.example.com` of `https://API.example.com:443/v1/x`: an assertion's audience."""
    parsed = httpx.URL(url)
    host = f"[{parsed.host}]" if ":" in parsed.host else parsed.host
    return f"{parsed.scheme}://{host}" + (f":{parsed.port}" if parsed.port else "")


class AssertionSigner:
    """Signs caller assertions with the service's key; one per app (api/deps.py), shared by its tools."""

    def __init__(
        self,
        issuer: str,
        key_pem: Callable[[], str | None],
        *,
        ephemeral: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """`key_pem` reads the configured PEM (None: none configured; it may call SSM); `ephemeral`:
        then use a key of this signer's own rather than fail."""
        self.issuer = issuer
        self._key_pem = key_pem
        self._ephemeral = ephemeral
        self._clock = clock
        self._key: SigningKey | None = None
        self._read_at = 0.0
        self._lock = threading.Lock()

    def fresh(self) -> bool:
        """Whether signing now reads nothing (the key was read less than KEY_MAX_AGE_SECONDS ago):
        then it is a few hundred microseconds of CPU, fine on the event loop."""
        return self._key is not None and self._clock() - self._read_at < KEY_MAX_AGE_SECONDS

    def sign(self, caller: Caller, audience: str, tool: str, conversation_id: str) -> str:
        """The assertion for one call of `tool` made for `caller`; ConfigError without a key."""
        import jwt

        key = self.key()
        now = int(self._clock())
        claims = {
            "iss": self.issuer,
            "aud": audience,
            "sub": caller.caller_id,
            "roles": list(caller.roles),
            "conversationId": conversation_id,
            "tool": tool,
            "jti": secrets.token_hex(16),
            "iat": now,
            "exp": now + LIFETIME_SECONDS,
        }
        return jwt.encode(claims, key.private, algorithm=ALGORITHM, headers={"kid": key.kid, "typ": "JWT"})

    async def assertion(self, ctx: ToolContext, *, audience: str, tool: str) -> str:
        """The assertion for one call of `tool` made for the caller of `ctx` (tools/caller_assertions.py).
        A key due to be read is read in a thread (from SSM, in AWS); signing itself stays on the loop."""
        if not self.fresh():
            await asyncio.to_thread(self.key)
        return self.sign(ctx.caller, audience, tool, ctx.conversation_id)

    def jwks(self) -> dict[str, Any]:
        """The public key set tool APIs verify assertions against."""
        return {"keys": [self.key().jwk]}

    def key(self) -> SigningKey:
        """The current key, read again once KEY_MAX_AGE_SECONDS old and parsed again only when its
        PEM changed: a rotated parameter is picked up."""
        if self.fresh():
            assert self._key is not None
            return self._key
        pem = self._key_pem()
        with self._lock:
            if self._key is None or not ((pem is None and self._ephemeral) or self._key.pem == pem):
                if pem is None and not self._ephemeral:
                    raise ConfigError(f"{KEY_SETTING}_PARAM is not set: caller assertions cannot be signed")
                self._key = load_key(pem or generate_key_pem())
            self._read_at = self._clock()
            return self._key


def require_key(settings: Settings) -> None:
    """At start, in AWS: the key's secret is named, by ASSERTION_PRIVATE_KEY_PARAM or as
    ASSERTION_PRIVATE_KEY under TOOL_SECRETS_PREFIX (ConfigError otherwise); it is read when first used."""
    named = os.environ.get(f"{KEY_SETTING}_PARAM") or os.environ.get("TOOL_SECRETS_PREFIX")
    if in_lambda() and not (settings.assertion_private_key or named):
        raise ConfigError(
            f"{KEY_SETTING}_PARAM (or TOOL_SECRETS_PREFIX) is required: tools have identity: assertion"
        )


def create_signer(settings: Settings, secrets: SecretReader | None = None) -> AssertionSigner:
    """The app's signer: ASSERTION_PRIVATE_KEY, read like a catalogue's `${NAME}` through `secrets` (the
    composition root's): in AWS the secret ASSERTION_PRIVATE_KEY_PARAM names, else ASSERTION_PRIVATE_KEY
    under TOOL_SECRETS_PREFIX, where the functions may read; outside Lambda, with none, a key of its own."""
    from rag_orchestrator.tools.catalog import environment_secrets

    configured = environment_secrets(secrets)
    return AssertionSigner(
        settings.assertion_issuer,
        lambda: settings.secret("assertion_private_key") or configured(KEY_SETTING),
        ephemeral=not in_lambda(),
    )

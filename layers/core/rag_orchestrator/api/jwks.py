"""GET /.well-known/jwks.json: the public key of the caller assertions HTTP tools send (docs/tools.md).

No credentials needed: a tool's API fetches it to verify `X-Caller-Assertion`. Cached by clients
for MAX_AGE_SECONDS; a key rotation shows a new `kid`, which a verifier fetches the set again for.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from rag_orchestrator.api.deps import get_assertions
from rag_orchestrator.domain.base import CamelModel
from rag_orchestrator.errors import DependencyUnavailable
from rag_orchestrator.observability import logger
from rag_orchestrator.tools.assertion import AssertionSigner

router = APIRouter(tags=["auth"])
MAX_AGE_SECONDS = 300


class PublicKey(CamelModel):
    kty: str  # EC
    crv: str  # P-256
    x: str
    y: str
    kid: str  # the RFC 7638 thumbprint, also the assertion header's `kid`
    use: str  # sig
    alg: str  # ES256


class KeySet(CamelModel):
    keys: list[PublicKey]


@router.get(
    "/.well-known/jwks.json",
    response_model=KeySet,
    summary="The key caller assertions are signed with",
    responses={503: {"description": "The signing key cannot be read (its SSM parameter)"}},
)
async def key_set(signer: AssertionSigner = Depends(get_assertions)) -> JSONResponse:
    """The JWK set to verify `X-Caller-Assertion` with (ES256)."""
    try:
        keys = await asyncio.to_thread(signer.jwks)  # the first request may read the key from SSM
    except Exception as exc:
        logger.error("assertion key unavailable", extra={"error_type": type(exc).__name__})
        raise DependencyUnavailable("The assertion signing key is unavailable") from None
    return JSONResponse(keys, headers={"Cache-Control": f"public, max-age={MAX_AGE_SECONDS}"})

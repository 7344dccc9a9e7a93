"""GET /api/v1/agent/health: each dependency's status; 200 when all are up, 503 naming the failing one."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Literal

import httpx
from starlette.responses import JSONResponse

from rag_orchestrator import tls
from rag_orchestrator.api.deps import Services, services
from rag_orchestrator.api.routing import Depends, Router
from rag_orchestrator.domain.base import CamelModel

router = Router(tags=["agent"])
CHECK_TIMEOUT_SECONDS = 3.0


async def _dynamodb(parts: Services) -> str:
    settings = parts.settings
    if settings.conversation_storage == "memory":
        return "in-memory storage"
    table = await asyncio.to_thread(
        parts.aws.client("dynamodb").describe_table, TableName=settings.conversations_table
    )
    return f"table {settings.conversations_table} {table['Table']['TableStatus']}"


async def _s3(parts: Services) -> str:
    settings = parts.settings
    buckets = [b for b in (settings.transcripts_bucket, settings.documents_bucket) if b]
    if not buckets:
        return "no buckets configured"
    s3 = parts.aws.client("s3")
    await asyncio.gather(*(asyncio.to_thread(s3.head_bucket, Bucket=b) for b in buckets))
    return "buckets " + ", ".join(buckets)


async def _chroma(parts: Services) -> str:
    settings = parts.settings
    # The heartbeat at the API address the vector store uses (chroma_http).
    from rag_orchestrator.retrieval.chroma_http import api_url

    token = await asyncio.to_thread(settings.secret, "chroma_token")  # CHROMA_TOKEN, else SSM in AWS
    headers = {"x-chroma-token": token} if token else {}
    base = api_url(settings.chroma_url)
    async with httpx.AsyncClient(timeout=CHECK_TIMEOUT_SECONDS, verify=tls.verify(base)) as client:
        response = await client.get(f"{base}/heartbeat", headers=headers)
        response.raise_for_status()
    return f"heartbeat ok at {shown(settings.chroma_url)}"


def shown(url: str) -> str:
    """An address as the report may show it to anyone: scheme, host and port, never user:password@
    written into it, a path or a query."""
    parts = httpx.URL(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.host}{port}"


async def _provider(parts: Services) -> str:
    ok, detail = parts.settings.provider_configured()
    if not ok:
        raise RuntimeError(detail)
    return f"strategy {detail}"


CHECKS: dict[str, Callable[[Services], Awaitable[str]]] = {
    "dynamodb": _dynamodb,
    "s3": _s3,
    "chroma": _chroma,
    "provider": _provider,
}


async def _run(name: str, check: Callable[[Services], Awaitable[str]], parts: Services) -> dict:
    started = time.perf_counter()
    try:
        detail = await asyncio.wait_for(check(parts), CHECK_TIMEOUT_SECONDS)
        status = "UP"
    except Exception as exc:  # a failed check is a report, not an error
        detail = _safe_reason(exc)
        status = "DOWN"
    return {
        "name": name,
        "status": status,
        "detail": detail,
        "latencyMs": round((time.perf_counter() - started) * 1000, 1),
    }


def _safe_reason(exc: Exception) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, httpx.HTTPError):
        return f"unreachable ({type(exc).__name__})"
    if isinstance(exc, RuntimeError):
        return str(exc)
    return type(exc).__name__


class HealthCheck(CamelModel):
    status: Literal["UP", "DOWN"]
    detail: str  # what was checked, or why it failed (never an upstream's own text)
    latency_ms: float


class HealthReport(CamelModel):
    status: Literal["UP", "DOWN"]
    service: str
    failing: list[str]  # the names of the checks that are DOWN
    checks: dict[str, HealthCheck]  # dynamodb, s3, chroma, provider


@router.get(
    "/api/v1/agent/health",
    summary="Status of every dependency",
    response_model=HealthReport,
    responses={503: {"model": HealthReport, "description": "A dependency is down: `failing` names it"}},
)
async def health(parts: Services = Depends(services)) -> JSONResponse:
    results = await asyncio.gather(*(_run(name, check, parts) for name, check in CHECKS.items()))
    down = [r["name"] for r in results if r["status"] != "UP"]
    body = {
        "status": "DOWN" if down else "UP",
        "service": "rag-orchestrator",
        "failing": down,
        "checks": {r.pop("name"): r for r in results},
    }
    return JSONResponse(body, status_code=503 if down else 200)


@router.get("/api/v1/agent/ping", summary="Liveness: answers without touching any dependency")
async def ping() -> dict:
    return {"status": "UP"}

"""How the model client reaches the model: its own HTTP/1.1 client, or httpx where that one won't do.

The default is http1.py's pool (one per event loop, per process). httpx carries the request when the
environment names a proxy for the model's URL (HTTP(S)_PROXY, ALL_PROXY and NO_PROXY, as httpx reads
them) or when whoever builds the client hands it one (tests with httpx's MockTransport). Both give a
`ModelResponse`: status, lower-case headers, the body with `next_chunk()`, then `aclose()`; both
raise `HTTPFailure` for a failed connection and `IdleTimeout` when no data came for the read timeout.
"""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Mapping
from typing import Protocol

import httpx

from rag_orchestrator import tls
from rag_orchestrator.providers.deadline import IdleTimeout
from rag_orchestrator.providers.http1 import HTTPFailure, Pool


class ModelResponse(Protocol):
    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...  # lower-case names

    async def next_chunk(self) -> bytes | None: ...

    async def aclose(self) -> None: ...


FINISH_SECONDS = 0.05  # how long the end of a body is awaited after its `[DONE]`

_pool: tuple[asyncio.AbstractEventLoop, Pool] | None = None
_httpx: tuple[asyncio.AbstractEventLoop, httpx.AsyncClient] | None = None


def shared_pool() -> Pool:
    """One pool per process (per event loop: a connection belongs to the loop that made it)."""
    global _pool
    loop = asyncio.get_running_loop()
    if _pool is None or _pool[0] is not loop:
        _pool = (loop, Pool())
    return _pool[1]


def shared_http_client() -> httpx.AsyncClient:
    """The httpx client for proxied models, made on first use, one per event loop too."""
    global _httpx
    loop = asyncio.get_running_loop()
    if _httpx is None or _httpx[0] is not loop or _httpx[1].is_closed:
        client = httpx.AsyncClient(
            limits=httpx.Limits(max_connections=100, max_keepalive_connections=20), verify=tls.context()
        )
        _httpx = (loop, client)
    return _httpx[1]


def forget_shared_connections() -> None:
    """Drop the pools without closing them: their connections came from a snapshot (api/snapstart.py)."""
    global _pool, _httpx
    _pool = _httpx = None


async def close_shared_connections() -> None:
    global _pool, _httpx
    loop = asyncio.get_running_loop()
    if _pool is not None and _pool[0] is loop:
        _pool[1].close()
    if _httpx is not None and _httpx[0] is loop:
        await _httpx[1].aclose()
    _pool = _httpx = None


async def read_body(response: ModelResponse, limit: int = 1 << 20) -> bytes:
    """The whole body, or its first `limit` bytes (a connection left unread is not reused)."""
    parts, size = [], 0
    while size < limit and (data := await response.next_chunk()) is not None:
        parts.append(data)
        size += len(data)
    return b"".join(parts)[:limit]


async def finish(response: ModelResponse, seconds: float = FINISH_SECONDS) -> None:
    """Reads what is left of a body whose last event came (the end of its chunks follows at once from
    any server that keeps the connection), so that the connection can serve the next model call."""
    try:
        async with asyncio.timeout(seconds):
            while await response.next_chunk() is not None:
                pass
    except (TimeoutError, HTTPFailure):
        pass  # not reused, then


def uses_httpx(url: str, http_client: httpx.AsyncClient | None) -> bool:
    """Whether requests to `url` go through httpx: a client of its own given, or a proxy in the environment."""
    return http_client is not None or proxied(url)


def proxied(url: str) -> bool:
    """Whether the environment sends requests to `url` through a proxy."""
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    proxies = urllib.request.getproxies_environment()
    if not (proxies.get(scheme.lower()) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass_environment(host, proxies)  # type: ignore[attr-defined]


async def post(
    url: str,
    headers: dict[str, str],
    body: bytes,
    *,
    connect_timeout: float,
    read_timeout: float,
    via_httpx: bool = False,
    http_client: httpx.AsyncClient | None = None,
) -> ModelResponse:
    """POSTs `body`; the response once its head has come (the caller enforces the read timeout while
    it waits for the body, with providers/deadline.py). `via_httpx` (or a client given): through httpx,
    as `uses_httpx` decides once per URL."""
    if not via_httpx and http_client is None:
        response = await shared_pool().post(url, headers, body, connect_timeout=connect_timeout)
        return response
    client = http_client or shared_http_client()
    timeout = httpx.Timeout(read_timeout, connect=connect_timeout)
    request = client.build_request("POST", url, content=body, headers=headers, timeout=timeout)
    try:
        return _HttpxResponse(await client.send(request, stream=True))
    except httpx.TimeoutException as exc:
        raise IdleTimeout if isinstance(exc, httpx.ReadTimeout) else HTTPFailure("connect timeout") from None
    except httpx.TransportError as exc:
        raise HTTPFailure(type(exc).__name__) from None


class _HttpxResponse:
    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.status = response.status_code
        self.headers: Mapping[str, str] = response.headers
        self._chunks = response.aiter_bytes()

    async def next_chunk(self) -> bytes | None:
        try:
            return await anext(self._chunks, None)
        except httpx.ReadTimeout:
            raise IdleTimeout from None
        except (httpx.TransportError, httpx.DecodingError) as exc:
            raise HTTPFailure(type(exc).__name__) from None

    async def aclose(self) -> None:
        await self._response.aclose()

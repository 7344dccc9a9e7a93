"""An OpenAI-compatible chat-completions client: streaming over SSE, retries, timeouts, safe errors.

Retries (exponential backoff with full jitter, or `Retry-After` when given) happen on connection
errors and on 408/429/5xx answers, and only before anything of the answer has been yielded: once a
delta has reached the caller, an error propagates.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from httpx_sse import SSEError, aconnect_sse

from rag_orchestrator import tls
from rag_orchestrator.errors import ProviderError, ProviderHTTPError, ProviderStreamError, ProviderTimeout
from rag_orchestrator.observability import logger, redacted
from rag_orchestrator.providers.openai_wire import ChunkDelta, parse_chunk

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 3
    base_seconds: float = 0.5
    cap_seconds: float = 8.0
    retry_after_cap_seconds: float = 20.0


def retry_delay(
    attempt: int, retry_after: float | None, policy: RetryPolicy, rand: Callable[[], float] = random.random
) -> float:
    """Seconds before retry number `attempt + 1`: the server's Retry-After (capped), else full jitter."""
    if retry_after is not None:
        return min(max(retry_after, 0.0), policy.retry_after_cap_seconds)
    return rand() * min(policy.cap_seconds, policy.base_seconds * 2**attempt)


def parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def error_detail(body: Any, secret: str | None = None) -> str:
    """`type: message` of a provider's error object, redacted and truncated, for the log only."""
    error = body.get("error") if isinstance(body, Mapping) else None
    if isinstance(error, str):
        detail = error
    elif isinstance(error, Mapping):
        kind = error.get("type") or error.get("code") or ""
        message = error.get("message") or ""
        detail = f"{kind}: {message}" if kind and message else str(kind or message)
    else:
        detail = ""
    return redacted(detail, secret)


_shared: tuple[asyncio.AbstractEventLoop, httpx.AsyncClient] | None = None


def shared_http_client() -> httpx.AsyncClient:
    """One client per process (per event loop: pooled connections belong to the loop that made them)."""
    global _shared
    loop = asyncio.get_running_loop()
    if _shared is None or _shared[0] is not loop or _shared[1].is_closed:
        client = httpx.AsyncClient(
            limits=httpx.Limits(max_connections=100, max_keepalive_connections=20), verify=tls.context()
        )
        _shared = (loop, client)
    return _shared[1]


async def close_shared_http_client() -> None:
    global _shared
    if _shared is not None and _shared[0] is asyncio.get_running_loop():
        await _shared[1].aclose()
    _shared = None


class _Retryable(Exception):
    def __init__(self, error: ProviderError, retry_after: float | None = None) -> None:
        self.error = error
        self.retry_after = retry_after


class ChatClient:
    """Streams `POST {base_url}/chat/completions` as ChunkDeltas."""

    def __init__(
        self,
        *,
        provider: str,
        base_url: str,
        api_key: str | None,
        timeout_seconds: float,
        idle_timeout_seconds: float,
        retry: RetryPolicy,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.provider = provider
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._api_key = api_key
        self._timeout = timeout_seconds
        self._http_timeout = httpx.Timeout(idle_timeout_seconds, connect=min(10.0, idle_timeout_seconds))
        self._retry = retry
        self._http = http_client

    def __repr__(self) -> str:
        return f"ChatClient(provider={self.provider!r}, url={self.url!r})"

    async def aclose(self) -> None:
        """Closes the process-wide client; an injected client belongs to whoever made it."""
        if self._http is None:
            await close_shared_http_client()

    async def stream(self, payload: Mapping[str, Any]) -> AsyncGenerator[ChunkDelta, None]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout
        attempt = 0
        while True:
            yielded = False
            try:
                async with contextlib.aclosing(self._stream_once(payload, deadline)) as deltas:
                    async for delta in deltas:
                        yielded = yielded or delta.has_output
                        yield delta
                return
            except _Retryable as failure:
                if yielded or attempt >= self._retry.max_retries:
                    raise failure.error from None
                delay = retry_delay(attempt, failure.retry_after, self._retry)
                if loop.time() + delay >= deadline:
                    raise failure.error from None
                attempt += 1
                logger.warning(
                    "model provider request failed; retrying",
                    extra={
                        "provider": self.provider,
                        "attempt": attempt,
                        "delay_seconds": round(delay, 3),
                        "reason": failure.error.message,
                    },
                )
                await asyncio.sleep(delay)

    async def _stream_once(
        self, payload: Mapping[str, Any], deadline: float
    ) -> AsyncGenerator[ChunkDelta, None]:
        http = self._http or shared_http_client()
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        async with contextlib.AsyncExitStack() as stack:
            source = await self._guard(
                stack.enter_async_context(
                    aconnect_sse(
                        http, "POST", self.url, json=payload, headers=headers, timeout=self._http_timeout
                    )
                ),
                deadline,
            )
            response = source.response
            if response.status_code >= 400:
                body = await self._guard(response.aread(), deadline)
                raise self._http_error(response, body)
            events = source.aiter_sse()
            stack.push_async_callback(events.aclose)
            while True:
                sse = await self._guard(anext(events, None), deadline)
                if sse is None or sse.data.strip() == "[DONE]":
                    return
                if not sse.data.strip():
                    continue
                try:
                    data = json.loads(sse.data)
                except ValueError:
                    raise ProviderStreamError(
                        f"{self.provider}: the stream sent data that is not JSON"
                    ) from None
                if not isinstance(data, Mapping):
                    continue
                if sse.event == "error" or data.get("error"):
                    detail = error_detail(data if data.get("error") else {"error": data}, self._api_key)
                    logger.warning(
                        "model provider stream reported an error",
                        extra={"provider": self.provider, "detail": detail},
                    )
                    raise ProviderStreamError(f"{self.provider}: the answer stream reported an error")
                yield parse_chunk(data)

    async def _guard(self, awaitable: Awaitable[T], deadline: float) -> T:
        """Awaits one step under the total deadline, turning transport failures into our errors."""
        try:
            async with asyncio.timeout_at(deadline):
                return await awaitable
        except TimeoutError:
            raise ProviderTimeout(
                f"{self.provider}: no complete answer within {self._timeout:g} seconds"
            ) from None
        except httpx.ReadTimeout:
            raise ProviderTimeout(
                f"{self.provider}: no data for {self._http_timeout.read:g} seconds"
            ) from None
        except httpx.TransportError as exc:
            # Connection refused or reset, dropped mid-stream, pool exhausted: worth another try.
            raise _Retryable(
                ProviderStreamError(f"{self.provider}: connection failed ({type(exc).__name__})")
            ) from None
        except SSEError:
            raise ProviderStreamError(f"{self.provider}: the answer is not an event stream") from None

    def _http_error(self, response: httpx.Response, body: bytes) -> Exception:
        """Our error for a non-2xx answer; the provider's own text (which may echo the request) is
        logged, redacted and truncated, and never put in the error."""
        try:
            detail = error_detail(json.loads(body[:65536]), self._api_key)
        except ValueError:
            detail = redacted(body[:1024].decode("utf-8", "replace"), self._api_key)
        logger.warning(
            "model provider refused a request",
            extra={"provider": self.provider, "status": response.status_code, "detail": detail},
        )
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        message = f"{self.provider} answered HTTP {response.status_code}"
        error = ProviderHTTPError(response.status_code, message, retry_after=retry_after)
        return _Retryable(error, retry_after) if error.retryable else error

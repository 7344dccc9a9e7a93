"""An OpenAI-compatible chat-completions client over httpx: SSE streaming, retries, timeouts, safe errors.

Retries (exponential backoff with full jitter, or `Retry-After` when given) happen on connection
errors and on 408/429/5xx answers, and only before anything of the answer has been yielded: once a
delta has reached the caller, an error propagates. They are the only re-sends: httpx never sends a
request twice. Connections are pooled by httpx; each body is read to its end, after its `[DONE]` too,
so that the next call reuses the connection (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic_core import from_json, to_json

from rag_orchestrator import tls
from rag_orchestrator.errors import (
    ConfigError,
    ProviderError,
    ProviderHTTPError,
    ProviderStreamError,
    ProviderTimeout,
)
from rag_orchestrator.event_stream import EventStreamDecoder
from rag_orchestrator.observability import logger, redacted
from rag_orchestrator.providers.deadline import IdleTimeout, StreamDeadline
from rag_orchestrator.providers.openai_wire import ChunkDelta, parse_chunk

USER_AGENT = "rag-orchestrator"
FINISH_SECONDS = 0.05  # how long the end of a body is awaited after its `[DONE]`


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


async def read_start(chunks: AsyncIterator[bytes], limit: int = 1 << 20) -> bytes:
    """The body's first `limit` bytes (an error's; a connection left unread is not reused)."""
    parts, size = [], 0
    async for data in chunks:
        parts.append(data)
        size += len(data)
        if size >= limit:
            break
    return b"".join(parts)[:limit]


async def finish(chunks: AsyncIterator[bytes], seconds: float = FINISH_SECONDS) -> None:
    """Reads what is left of a body whose `[DONE]` came (the end of its chunks follows at once from a
    server that keeps the connection): httpx returns a connection to its pool only once its response
    was read to the end, so this is what lets the next model call skip a TCP and TLS handshake."""
    try:
        async with asyncio.timeout(seconds):
            async for _ in chunks:
                pass
    except (TimeoutError, httpx.TransportError, httpx.DecodingError):
        pass  # not reused, then


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
        if not base_url.lower().startswith(("http://", "https://")):
            raise ConfigError(f"{provider}: the model's base URL must start with http:// or https://")
        if api_key and ("\r" in api_key or "\n" in api_key):
            raise ConfigError(f"{provider}: the model's API key holds a line break")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._api_key = api_key
        self._timeout = timeout_seconds
        self._idle_timeout = idle_timeout_seconds
        self._http_timeout = httpx.Timeout(idle_timeout_seconds, connect=min(10.0, idle_timeout_seconds))
        self._retry = retry
        self._given = http_client
        self._own: tuple[asyncio.AbstractEventLoop, httpx.AsyncClient] | None = None

    def __repr__(self) -> str:
        return f"ChatClient(provider={self.provider!r}, url={self.url!r})"

    def _http(self) -> httpx.AsyncClient:
        """The client given, else one of our own per event loop (a connection belongs to the loop that
        made it), made on first use; it reads proxies from the environment as httpx does."""
        if self._given is not None:
            return self._given
        loop = asyncio.get_running_loop()
        if self._own is None or self._own[0] is not loop or self._own[1].is_closed:
            limits = httpx.Limits(max_connections=100, max_keepalive_connections=20)
            self._own = (loop, httpx.AsyncClient(limits=limits, verify=tls.verify(self.url)))
        return self._own[1]

    async def aclose(self) -> None:
        """Closes our own client; a client given belongs to whoever made it."""
        own, self._own = self._own, None
        if own is not None and own[0] is asyncio.get_running_loop():
            await own[1].aclose()

    async def stream(self, payload: Mapping[str, Any]) -> AsyncGenerator[ChunkDelta, None]:
        # One generator with the read loop inline: every layer between the socket and the loop is paid
        # once per streamed token (bench/README.md, streaming).
        loop = asyncio.get_running_loop()
        deadline = StreamDeadline(loop.time() + self._timeout, idle=self._idle_timeout)
        body = to_json(payload)
        attempt = 0
        try:
            while True:
                yielded = False
                try:
                    with deadline:
                        response = await self._open(body)
                    try:
                        decoder = EventStreamDecoder()
                        chunks = response.aiter_bytes()
                        while True:
                            with deadline:
                                chunk = await anext(chunks, None)
                            for event, data in decoder.feed(chunk) if chunk is not None else decoder.flush():
                                if data.strip() == "[DONE]":
                                    await finish(chunks)
                                    return
                                delta = self._delta(event, data)
                                if delta is not None:
                                    yielded = yielded or delta.has_output
                                    yield delta
                            if chunk is None:
                                return
                    finally:
                        await response.aclose()
                except (TimeoutError, httpx.TransportError, httpx.DecodingError) as exc:
                    failure = self._transport_failure(exc)
                except _Retryable as retryable:
                    failure = retryable
                if yielded or attempt >= self._retry.max_retries:
                    raise failure.error from None
                delay = retry_delay(attempt, failure.retry_after, self._retry)
                if loop.time() + delay >= deadline.when:
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
        finally:
            deadline.cancel()

    async def _open(self, body: bytes) -> httpx.Response:
        """Sends the request; the response, once it is known to be an event stream."""
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "Accept-Encoding": "identity",
            "Cache-Control": "no-store",
            "User-Agent": USER_AGENT,
        }
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        http = self._http()
        request = http.build_request(
            "POST", self.url, content=body, headers=headers, timeout=self._http_timeout
        )
        response = await http.send(request, stream=True)
        try:
            if response.status_code >= 400:
                raise self._http_error(response, await read_start(response.aiter_bytes()))
            if "text/event-stream" not in response.headers.get("content-type", "").partition(";")[0]:
                raise ProviderStreamError(f"{self.provider}: the answer is not an event stream")
        except BaseException:
            await response.aclose()
            raise
        return response

    def _delta(self, event: str, text: str) -> ChunkDelta | None:
        """One event's delta; None for one without data or that is not an object."""
        if not text.strip():
            return None
        try:
            data = from_json(text)
        except ValueError:
            raise ProviderStreamError(f"{self.provider}: the stream sent data that is not JSON") from None
        if not isinstance(data, dict):
            return None
        if event == "error" or data.get("error"):
            detail = error_detail(data if data.get("error") else {"error": data}, self._api_key)
            logger.warning(
                "model provider stream reported an error",
                extra={"provider": self.provider, "detail": detail},
            )
            raise ProviderStreamError(f"{self.provider}: the answer stream reported an error")
        return parse_chunk(data)

    def _transport_failure(self, exc: Exception) -> _Retryable:
        """Our error for a transport failure or the deadline; raised at once unless worth another try."""
        if isinstance(exc, (IdleTimeout, httpx.ReadTimeout)):
            raise ProviderTimeout(f"{self.provider}: no data for {self._idle_timeout:g} seconds") from None
        if isinstance(exc, TimeoutError):
            raise ProviderTimeout(
                f"{self.provider}: no complete answer within {self._timeout:g} seconds"
            ) from None
        # Refused, reset, TLS refused, a connect timeout, a body cut short, broken HTTP: worth another
        # try. The class name only: httpx's message may quote what the server sent.
        return _Retryable(ProviderStreamError(f"{self.provider}: connection failed ({type(exc).__name__})"))

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

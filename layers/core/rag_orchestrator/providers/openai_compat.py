"""An OpenAI-compatible chat-completions client: streaming over SSE, retries, timeouts, safe errors.

Retries (exponential backoff with full jitter, or `Retry-After` when given) happen on connection
errors and on 408/429/5xx answers, and only before anything of the answer has been yielded: once a
delta has reached the caller, an error propagates.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic_core import from_json, to_json

from rag_orchestrator.errors import (
    ConfigError,
    ProviderError,
    ProviderHTTPError,
    ProviderStreamError,
    ProviderTimeout,
)
from rag_orchestrator.observability import logger, redacted
from rag_orchestrator.providers import transport
from rag_orchestrator.providers.deadline import IdleTimeout, StreamDeadline
from rag_orchestrator.providers.event_stream import EventStreamDecoder
from rag_orchestrator.providers.http1 import HTTPFailure
from rag_orchestrator.providers.openai_wire import ChunkDelta, parse_chunk

USER_AGENT = "rag-orchestrator"


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
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._api_key = api_key
        self._timeout = timeout_seconds
        self._idle_timeout = idle_timeout_seconds
        self._connect_timeout = min(10.0, idle_timeout_seconds)
        self._retry = retry
        self._http = http_client
        self._via_httpx = transport.uses_httpx(self.url, http_client)  # the environment read once

    def __repr__(self) -> str:
        return f"ChatClient(provider={self.provider!r}, url={self.url!r})"

    async def aclose(self) -> None:
        """Closes the process-wide client; an injected client belongs to whoever made it."""
        if self._http is None:
            await transport.close_shared_connections()

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
                        while True:
                            with deadline:
                                chunk = await response.next_chunk()
                            for event, data in decoder.feed(chunk) if chunk is not None else decoder.flush():
                                if data.strip() == "[DONE]":
                                    await transport.finish(response)
                                    return
                                delta = self._delta(event, data)
                                if delta is not None:
                                    yielded = yielded or delta.has_output
                                    yield delta
                            if chunk is None:
                                return
                    finally:
                        await response.aclose()
                except (TimeoutError, HTTPFailure) as exc:
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

    async def _open(self, body: bytes) -> transport.ModelResponse:
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
        response = await transport.post(
            self.url,
            headers,
            body,
            connect_timeout=self._connect_timeout,
            read_timeout=self._idle_timeout,
            via_httpx=self._via_httpx,
            http_client=self._http,
        )
        try:
            if response.status >= 400:
                raise self._http_error(response, await transport.read_body(response))
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
        if isinstance(exc, IdleTimeout):
            raise ProviderTimeout(f"{self.provider}: no data for {self._idle_timeout:g} seconds") from None
        if isinstance(exc, TimeoutError):
            raise ProviderTimeout(
                f"{self.provider}: no complete answer within {self._timeout:g} seconds"
            ) from None
        # Connection refused or reset, dropped mid-stream, broken HTTP: worth another try.
        return _Retryable(ProviderStreamError(f"{self.provider}: connection failed ({exc})"))

    def _http_error(self, response: transport.ModelResponse, body: bytes) -> Exception:
        """Our error for a non-2xx answer; the provider's own text (which may echo the request) is
        logged, redacted and truncated, and never put in the error."""
        try:
            detail = error_detail(json.loads(body[:65536]), self._api_key)
        except ValueError:
            detail = redacted(body[:1024].decode("utf-8", "replace"), self._api_key)
        logger.warning(
            "model provider refused a request",
            extra={"provider": self.provider, "status": response.status, "detail": detail},
        )
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        message = f"{self.provider} answered HTTP {response.status}"
        error = ProviderHTTPError(response.status, message, retry_after=retry_after)
        return _Retryable(error, retry_after) if error.retryable else error

"""Embeddings from any OpenAI-compatible `/embeddings` endpoint: Ollama, vLLM, TEI, DashScope, OpenAI.

Its requests travel on the pooled keep-alive connections Chroma's and AWS's clients use (http_pool.py;
through httpx with a proxy in the environment, or a test's transport): ~1 ms less client CPU a request
than httpx's own client (bench/README.md)."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx

from rag_orchestrator.config import Settings
from rag_orchestrator.errors import EmbedderUnavailable
from rag_orchestrator.http_pool import Answer, Request, Timeout, WireTimeout, WireUnreachable, wire_for
from rag_orchestrator.observability import logger, redacted

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
MAX_BACKOFF_SECONDS = 20.0


class OpenAICompatibleEmbedder:
    """POSTs batches of at most `batch_size` texts; retries 429, 5xx and connection failures, never other
    4xx, and never a server that accepted the request and then stayed silent for `timeout` seconds: asking
    it again would only multiply the wait of the turn behind it."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 32,
        timeout: float = 5.0,
        max_retries: int = 3,
        backoff_seconds: float = 0.5,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model = model
        self.name = f"openai_compatible/{model}" + (f"/{dimensions}" if dimensions else "")
        self._requested_dimensions = dimensions
        self._dimensions = dimensions
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff_seconds = backoff_seconds
        self._api_key = api_key
        self._sleep = sleep
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._timeout = Timeout(connect=min(timeout, 3.0), read=timeout)
        self._path = urlsplit(self.url).path
        self._wire = wire_for(self.url, "", {}, transport)  # TLS with the process's one context (tls.py)

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAICompatibleEmbedder:
        return cls(
            settings.embedding_base_url or "",
            settings.embedding_model or "",
            api_key=settings.secret("embedding_api_key"),
            dimensions=settings.embedding_dimensions,
            batch_size=settings.embedding_batch_size,
            timeout=settings.embedding_timeout_seconds,
            max_retries=settings.embedding_max_retries,
        )

    @property
    def dimensions(self) -> int:
        """EMBEDDING_DIMENSIONS when set, else learned from the server (one probe if nothing was embedded yet)."""
        if self._dimensions is None:
            self.embed("dimensions")
        return self._dimensions  # type: ignore[return-value]

    def embed(self, text: str) -> list[float]:
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(self._request(texts[start : start + self.batch_size]))
        return vectors

    def _request(self, batch: list[str]) -> list[list[float]]:
        body: dict = {"model": self.model, "input": batch, "encoding_format": "float"}
        if self._requested_dimensions:
            body["dimensions"] = self._requested_dimensions
        request = Request("POST", self._path, json.dumps(body).encode(), self._timeout, self._headers)
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                response = self._wire.send(request)
            except (WireTimeout, WireUnreachable) as exc:
                # It took the request and stayed silent: asking again would only wait longer.
                if isinstance(exc, WireTimeout) and not exc.connect:
                    logger.warning("embedding request timed out", extra={"url": self.url})
                    raise EmbedderUnavailable(f"Embedding service did not answer in time ({exc})") from None
                if last:
                    raise EmbedderUnavailable(f"Embedding service unreachable ({exc})") from None
                self._sleep(self._backoff(attempt, None))
                continue
            if response.status == 200:
                return self._parse(response, len(batch))
            self._log_refusal(response)
            if response.status not in RETRYABLE_STATUS or last:
                raise EmbedderUnavailable(f"Embedding service answered HTTP {response.status}")
            self._sleep(self._backoff(attempt, response.headers.get("retry-after")))
        raise AssertionError("unreachable")

    def _parse(self, response: Answer, expected: int) -> list[list[float]]:
        try:
            data = sorted(json.loads(response.body)["data"], key=lambda item: item["index"])
            vectors = [[float(v) for v in item["embedding"]] for item in data]
        except (ValueError, KeyError, TypeError):
            raise EmbedderUnavailable("Embedding service sent an unreadable answer") from None
        if len(vectors) != expected:
            raise EmbedderUnavailable(
                f"Embedding service returned {len(vectors)} vectors for {expected} texts"
            )
        self._dimensions = self._dimensions or len(vectors[0])
        return vectors

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), MAX_BACKOFF_SECONDS)
            except ValueError:
                pass  # an HTTP date: fall back to exponential backoff
        return min(self.backoff_seconds * 2**attempt, MAX_BACKOFF_SECONDS) * random.uniform(0.8, 1.2)

    def _log_refusal(self, response: Answer) -> None:
        text = response.body[:2048].decode("utf-8", "replace")
        logger.warning(
            "embedding request refused",
            extra={"status": response.status, "url": self.url, "detail": redacted(text, self._api_key)},
        )

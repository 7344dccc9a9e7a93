"""Embeddings from Amazon Titan Text Embeddings v2 on Bedrock (`invoke_model`, one text per call)."""

from __future__ import annotations

import json
from typing import Any

from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import Settings
from rag_orchestrator.errors import ConfigError, EmbedderUnavailable
from rag_orchestrator.observability import logger

DEFAULT_MODEL = "amazon.titan-embed-text-v2:0"
TITAN_DIMENSIONS = (256, 512, 1024)
MAX_INPUT_CHARS = 50_000  # Titan v2's documented input limit (8,192 tokens)
BATCH_REQUESTS = 8  # a batch's requests at once: each keeps its own retries (aws_bedrock.py)


class BedrockEmbedder:
    """Normalized Titan v2 vectors of 256, 512 or 1024 dimensions; the client retries throttling itself."""

    def __init__(self, client: Any, *, model: str = DEFAULT_MODEL, dimensions: int = 1024) -> None:
        if dimensions not in TITAN_DIMENSIONS:
            raise ConfigError(
                f"EMBEDDING_DIMENSIONS must be one of {TITAN_DIMENSIONS} for bedrock (got {dimensions})"
            )
        self._client = client
        self.model = model
        self.dimensions = dimensions
        self.name = f"bedrock/{model}/{dimensions}"

    @classmethod
    def from_settings(cls, settings: Settings, aws: AwsClients) -> BedrockEmbedder:
        # A hung Bedrock is asked again at most EMBEDDING_MAX_RETRIES times, each bounded by the timeout.
        client = aws.client(
            "bedrock-runtime",
            read_timeout=settings.embedding_timeout_seconds,
            max_attempts=settings.embedding_max_retries + 1,
        )
        return cls(
            client,
            model=settings.embedding_model or DEFAULT_MODEL,
            dimensions=settings.embedding_dimensions or 1024,
        )

    def embed(self, text: str) -> list[float]:
        from botocore.exceptions import BotoCoreError, ClientError

        from rag_orchestrator import aws

        body = {"inputText": text[:MAX_INPUT_CHARS], "dimensions": self.dimensions, "normalize": True}
        try:
            response = self._client.invoke_model(
                modelId=self.model,
                body=json.dumps(body),
                contentType="application/json",
                accept="application/json",
            )
            return [float(v) for v in json.loads(response["body"].read())["embedding"]]
        except ClientError as exc:
            code = aws.error_code(exc)
            logger.warning("bedrock embedding failed", extra={"code": code, "model": self.model})
            if code in aws.THROTTLING_CODES:
                raise EmbedderUnavailable("Bedrock throttled the embedding request") from None
            retryable = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 500) >= 500
            raise EmbedderUnavailable("Bedrock refused the embedding request", retryable=retryable) from None
        except BotoCoreError as exc:
            logger.warning("bedrock unreachable", extra={"error_type": type(exc).__name__})
            raise EmbedderUnavailable("Bedrock could not be reached") from None
        except (KeyError, ValueError, TypeError):
            raise EmbedderUnavailable("Bedrock sent an unreadable embedding") from None

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        """Titan v2 takes one text per request: up to BATCH_REQUESTS of them at once, in order. A tool
        index of 30 tools was 30 round trips in a row on a cold instance's first turn (bench/README.md);
        a turn's two memory fragments, two after its answer."""
        if len(texts) <= 1:
            return [self.embed(text) for text in texts]
        from concurrent.futures import ThreadPoolExecutor

        workers = min(BATCH_REQUESTS, len(texts))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bedrock-embedding") as pool:
            return list(pool.map(self.embed, texts))  # the first failure, in order, once all have ended

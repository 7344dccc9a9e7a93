"""Embedders: text in, vectors out. `create_embedder` makes the one EMBEDDING_PROVIDER names.

Every embedder is synchronous; async code calls it through `asyncio.to_thread`, together with the
vector store, so a request makes one thread hop for its whole retrieval.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from rag_orchestrator.aws import AwsClients
from rag_orchestrator.config import Settings
from rag_orchestrator.errors import ConfigError


@runtime_checkable
class Embedder(Protocol):
    name: str
    """Identifies the vector space (provider, model, dimensions): vectors of different names never mix."""

    @property
    def dimensions(self) -> int: ...

    def embed(self, text: str) -> list[float]: ...

    def embed_batch(self, texts: list[str]) -> list[list[float]]: ...


def create_embedder(settings: Settings, aws: AwsClients | None = None) -> Embedder:
    """The embedder EMBEDDING_PROVIDER names; imports only its module. The composition root makes one,
    handing it its AWS clients (Bedrock's need them)."""
    provider = settings.embedding_provider
    if provider == "hashing":
        from rag_orchestrator.text.hashing import HashingEmbedder

        return HashingEmbedder(settings.embedding_dimensions)
    if provider == "wordllama":
        from rag_orchestrator.retrieval.embedders.wordllama import WordLlamaEmbedder

        return WordLlamaEmbedder(settings.embedding_dimensions)
    if provider == "openai_compatible":
        from rag_orchestrator.retrieval.embedders.openai_compatible import OpenAICompatibleEmbedder

        return OpenAICompatibleEmbedder.from_settings(settings)
    if provider == "bedrock":
        from rag_orchestrator.retrieval.embedders.bedrock import BedrockEmbedder

        if aws is None:
            raise ConfigError("EMBEDDING_PROVIDER=bedrock: the embedder was given no AWS clients")
        return BedrockEmbedder.from_settings(settings, aws)
    raise ValueError(f"unknown EMBEDDING_PROVIDER {provider!r}")


__all__ = ["Embedder", "create_embedder"]

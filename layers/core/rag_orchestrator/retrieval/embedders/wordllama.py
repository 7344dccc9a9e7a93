"""Static word embeddings from the wordllama package, whose weights ship inside its wheel: offline, no model server.

A dev dependency only (numpy, tokenizers and the 16 MB weights would not fit the Lambda layer's budget).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag_orchestrator.errors import ConfigError

CONFIG = "l2_supercat"
DIMENSIONS = (64, 128, 256)  # the packaged weights have 256; fewer truncates them (Matryoshka training)


class WordLlamaEmbedder:
    """Mean-pooled token vectors of WordLlama's l2_supercat model, L2-normalized."""

    def __init__(self, dimensions: int | None = None) -> None:
        dimensions = dimensions or 256
        if dimensions not in DIMENSIONS:
            raise ConfigError(
                f"EMBEDDING_DIMENSIONS must be one of {DIMENSIONS} for wordllama (got {dimensions})"
            )
        try:
            import wordllama
        except ImportError:
            raise ConfigError(
                "EMBEDDING_PROVIDER=wordllama needs the wordllama package (a dev dependency: make setup)"
            ) from None
        # The package looks for its tokenizer under "tokenizer/", but ships it under "tokenizers/", which
        # is where it looks in a cache directory: pointing the cache at the package finds both files offline.
        self._model: Any = wordllama.WordLlama.load(
            CONFIG,
            cache_dir=Path(wordllama.__file__).parent,
            dim=256,
            trunc_dim=dimensions if dimensions != 256 else None,
            disable_download=True,
        )
        self.dimensions = dimensions
        self.name = f"wordllama/{CONFIG}/{dimensions}"

    def embed(self, text: str) -> list[float]:
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        return [[float(v) for v in row] for row in self._model.embed(texts, norm=True)]

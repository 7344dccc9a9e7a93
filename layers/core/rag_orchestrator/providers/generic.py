"""Any OpenAI-compatible server (`openai_compatible`: Ollama, vLLM, OpenAI): the plain dialect.

Nothing extra is sent or replayed but MODEL_TEMPERATURE (a model that takes only its default, as some
reasoning models do, needs it set to that default). A trace the server separates (`reasoning_content`
or `reasoning`) is captured; one inlined as a leading `<think>` block is split off the content.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_orchestrator.errors import ConfigError
from rag_orchestrator.providers.chat_strategy import ChatCompletionsStrategy
from rag_orchestrator.providers.strategies import StrategyMetadata, chat_client, sampling

if TYPE_CHECKING:
    import httpx

    from rag_orchestrator.config import Settings
    from rag_orchestrator.providers.openai_compat import RetryPolicy


def create(
    settings: Settings, *, http_client: httpx.AsyncClient | None = None, retry: RetryPolicy | None = None
) -> ChatCompletionsStrategy:
    if not settings.openai_compatible_base_url or not settings.openai_compatible_model:
        raise ConfigError(
            "OPENAI_COMPATIBLE_BASE_URL and OPENAI_COMPATIBLE_MODEL are required when "
            "MODEL_STRATEGY=openai_compatible"
        )
    client = chat_client(
        settings,
        provider="openai_compatible",
        base_url=settings.openai_compatible_base_url,
        api_key=settings.secret("openai_compatible_api_key"),  # local servers need none
        http_client=http_client,
        retry=retry,
    )
    return ChatCompletionsStrategy(
        name="openai_compatible",
        metadata=StrategyMetadata(
            provider="openai_compatible", model=settings.openai_compatible_model, reasoning=False
        ),
        client=client,
        max_tokens=settings.model_max_tokens,
        extra_body=sampling(settings, thinking=False),
        split_think_tags=True,
    )

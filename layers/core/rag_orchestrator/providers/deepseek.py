"""DeepSeek (`deepseek_single`): OpenAI format, thinking switched by the `thinking` parameter.

In thinking mode the API refuses (HTTP 400) a history whose tool-call turns lack the assistant's
`reasoning_content`; it ignores it elsewhere. It also ignores `temperature` there, so MODEL_TEMPERATURE
is sent only with thinking off. https://api-docs.deepseek.com/guides/thinking_mode
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_orchestrator.providers.chat_strategy import ChatCompletionsStrategy
from rag_orchestrator.providers.strategies import StrategyMetadata, chat_client, require_secret, sampling

if TYPE_CHECKING:
    import httpx

    from rag_orchestrator.config import Settings
    from rag_orchestrator.providers.openai_compat import RetryPolicy

LEGACY_THINKING_MODEL = "deepseek-reasoner"  # thinks whatever the parameter says


def create(
    settings: Settings, *, http_client: httpx.AsyncClient | None = None, retry: RetryPolicy | None = None
) -> ChatCompletionsStrategy:
    thinking = settings.deepseek_thinking or settings.deepseek_model == LEGACY_THINKING_MODEL
    client = chat_client(
        settings,
        provider="deepseek",
        base_url=settings.deepseek_base_url,
        api_key=require_secret(settings, "deepseek_api_key"),
        http_client=http_client,
        retry=retry,
    )
    return ChatCompletionsStrategy(
        name="deepseek_single",
        metadata=StrategyMetadata(provider="deepseek", model=settings.deepseek_model, reasoning=thinking),
        client=client,
        max_tokens=settings.model_max_tokens,
        # Sent either way: the API's default is thinking on.
        extra_body={
            "thinking": {"type": "enabled" if thinking else "disabled"},
            **sampling(settings, thinking=thinking),
        },
        replay_reasoning=thinking,
    )

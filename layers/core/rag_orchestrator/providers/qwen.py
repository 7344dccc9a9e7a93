"""Qwen on DashScope's OpenAI-compatible mode: `enable_thinking` in the body switches thinking.

Thinking answers stream only, with the trace in `reasoning_content`; we always stream. MODEL_TEMPERATURE
goes with instruct models only: thinking ones keep the sampling DashScope sets for them.
https://www.alibabacloud.com/help/en/model-studio/deep-thinking
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rag_orchestrator.providers.chat_strategy import ChatCompletionsStrategy
from rag_orchestrator.providers.strategies import StrategyMetadata, chat_client, require_secret, sampling

if TYPE_CHECKING:
    import httpx

    from rag_orchestrator.config import Settings
    from rag_orchestrator.providers.openai_compat import RetryPolicy


def _create(
    settings: Settings,
    *,
    name: str,
    model: str,
    thinking: bool,
    http_client: httpx.AsyncClient | None,
    retry: RetryPolicy | None,
) -> ChatCompletionsStrategy:
    client = chat_client(
        settings,
        provider="qwen",
        base_url=settings.qwen_base_url,
        api_key=require_secret(settings, "qwen_api_key"),
        http_client=http_client,
        retry=retry,
    )
    return ChatCompletionsStrategy(
        name=name,
        metadata=StrategyMetadata(provider="qwen", model=model, reasoning=thinking),
        client=client,
        max_tokens=settings.model_max_tokens,
        extra_body={"enable_thinking": thinking, **sampling(settings, thinking=thinking)},
    )


def create_thinking(
    settings: Settings, *, http_client: httpx.AsyncClient | None = None, retry: RetryPolicy | None = None
) -> ChatCompletionsStrategy:
    return _create(
        settings,
        name="qwen_single_thinking",
        model=settings.qwen_thinking_model,
        thinking=True,
        http_client=http_client,
        retry=retry,
    )


def create_instruct(
    settings: Settings, *, http_client: httpx.AsyncClient | None = None, retry: RetryPolicy | None = None
) -> ChatCompletionsStrategy:
    return _create(
        settings,
        name="qwen_single_instruct",
        model=settings.qwen_instruct_model,
        thinking=False,
        http_client=http_client,
        retry=retry,
    )

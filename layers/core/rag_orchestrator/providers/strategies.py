"""The ModelStrategy protocol and its factory, keyed on MODEL_STRATEGY.

Each dialect lives in its own module, imported only when chosen: a cold start with the offline
extractive strategy never imports httpx.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from rag_orchestrator.errors import ConfigError

if TYPE_CHECKING:
    import httpx

    from rag_orchestrator.config import Settings
    from rag_orchestrator.domain.messages import Message
    from rag_orchestrator.providers.events import IterationContext, StrategyEvent
    from rag_orchestrator.providers.openai_compat import ChatClient, RetryPolicy


@dataclass(frozen=True, slots=True)
class StrategyMetadata:
    provider: str
    model: str
    reasoning: bool  # whether the model sends reasoning traces


@runtime_checkable
class ModelStrategy(Protocol):
    name: str
    metadata: StrategyMetadata

    def run_iteration(
        self, messages: list[Message], tools: list[dict[str, Any]], ctx: IterationContext
    ) -> AsyncGenerator[StrategyEvent, None]:
        """One model call: chunks (PROGRESSIVE only), then ToolCallsComplete or FinalResponse,
        then IterationComplete. Implementations are `async def` generators."""
        ...

    async def aclose(self) -> None: ...


# strategy name -> (module, factory function)
STRATEGIES: dict[str, tuple[str, str]] = {
    "deepseek_single": ("rag_orchestrator.providers.deepseek", "create"),
    "qwen_single_thinking": ("rag_orchestrator.providers.qwen", "create_thinking"),
    "qwen_single_instruct": ("rag_orchestrator.providers.qwen", "create_instruct"),
    "openai_compatible": ("rag_orchestrator.providers.generic", "create"),
    "extractive": ("rag_orchestrator.providers.extractive", "create"),
}


def create_strategy(
    settings: Settings | None = None,
    *,
    http_client: httpx.AsyncClient | None = None,
    retry: RetryPolicy | None = None,
) -> ModelStrategy:
    """The strategy MODEL_STRATEGY names. `http_client` and `retry` are for tests and benchmarks."""
    if settings is None:
        from rag_orchestrator.config import get_settings

        settings = get_settings()
    try:
        module_name, factory = STRATEGIES[settings.model_strategy]
    except KeyError:
        raise ConfigError(f"MODEL_STRATEGY: unknown strategy {settings.model_strategy!r}") from None
    module = importlib.import_module(module_name)
    return getattr(module, factory)(settings, http_client=http_client, retry=retry)


def require_secret(settings: Settings, name: str) -> str:
    value = settings.secret(name)
    if not value:
        raise ConfigError(f"{name.upper()} is required when MODEL_STRATEGY={settings.model_strategy}")
    return value


def sampling(settings: Settings, *, thinking: bool) -> dict[str, float]:
    """MODEL_TEMPERATURE for the request body, except in thinking mode: DeepSeek ignores it there, and
    DashScope keeps the sampling its thinking models are tuned for (docs/configuration.md)."""
    return {} if thinking else {"temperature": settings.model_temperature}


def chat_client(
    settings: Settings,
    *,
    provider: str,
    base_url: str,
    api_key: str | None,
    http_client: httpx.AsyncClient | None,
    retry: RetryPolicy | None,
) -> ChatClient:
    from rag_orchestrator.providers.openai_compat import ChatClient, RetryPolicy

    return ChatClient(
        provider=provider,
        base_url=base_url,
        api_key=api_key,
        timeout_seconds=settings.model_timeout_seconds,
        idle_timeout_seconds=settings.model_idle_timeout_seconds,
        retry=retry or RetryPolicy(max_retries=settings.model_max_retries),
        http_client=http_client,
    )
